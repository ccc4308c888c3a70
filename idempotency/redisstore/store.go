// Package redisstore keeps idempotency records in Redis or Valkey, for
// functions whose store round trip must cost a fraction of DynamoDB's.
//
// # What is stored
//
// One hash per idempotency key, at the key prefix+key (prefix "idempotency:"
// unless WithPrefix says otherwise), with the fields of the DynamoDB
// store's table, so an operator reads both alike:
//
//	status                  INPROGRESS or COMPLETED
//	owner                   random token of the claim that holds the key
//	expiration              epoch seconds: the record's expiry
//	in_progress_expiration  epoch milliseconds: the in-progress lease (INPROGRESS only)
//	data                    the stored result (COMPLETED, when not empty)
//	validation              hex SHA-256 of the payload (when WithPayload is used)
//
// A Redis key holds up to 512 MB, so every idempotency key is kept as it
// is (idempotency.StoredKey is for stores with a smaller limit).
//
// The key carries Redis's own expiry (PEXPIREAT) at the end of the second
// named by expiration, for in-progress and completed records alike, so the
// server drops a record once no claim can find it live, and a dead owner's
// claim leaves nothing behind past its record expiry. That expiry is
// cleanup only: whether a record is live is decided, as in every store, by
// comparing the stored expiries with the caller's clock (Claim.Now); the
// store reads no clock of its own. The server's clock only has to be within
// the record's lifetime (hours) of the function's.
//
// # Fencing
//
// Each operation is one Lua script, run atomically on the server (EVALSHA,
// and EVAL once when the server does not know the script yet):
//
//   - Claim writes the claim when the key holds no record, or its
//     expiration is before Claim.Now (whole seconds), or it is in progress
//     and its lease ran out (milliseconds); otherwise it returns the record
//     it found, so a duplicate costs one request and no read.
//   - Complete and Release act only if the record's owner is the caller's
//     token; Extend only if, in addition, the record is still in progress.
//     A stale owner's write is refused with idempotency.ErrLeaseLost and
//     changes nothing.
//   - CompleteAll (idempotency.GroupCompleter: the completes an ordered
//     lane wrote while one was in flight) checks every key's owner first
//     and then completes them all, or none (on a single server; a cluster
//     client completes them one after another, in order).
//
// Get (idempotency.Getter, which package handlers uses to read a batch's
// keys before the batch runs) is one pipeline of HMGET, one round trip for the whole batch (on a
// cluster, one per node, in parallel).
//
// # Costs and durability
//
// One round trip per operation: a new key costs two (claim, complete), a
// duplicate one, a replayed batch one for all its keys. The handlers'
// claims of a batch taken ahead keep up to idempotency.DefaultInFlight
// requests in flight, each on a connection of its own: give the client a
// pool that large (redis.Options.PoolSize; go-redis opens 10 per CPU by
// default), or a batch's claims wait for a connection, a round trip per
// pool's worth. Redis replicates
// asynchronously: a write acknowledged by a primary that fails before its
// replicas have it is lost, so a failover can forget a claim or a
// completion, and a record can then run twice. Where that matters, run the
// server with appendfsync always and no failover, or use the DynamoDB store.
//
// Timeouts, dropped connections, a full connection pool and the server's
// LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN and READONLY answers
// become a retryable *idempotency.StoreError, which idempotency.Do retries
// with backoff.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/idempotency"
)

// DefaultPrefix is put before every idempotency key to make its Redis key.
const DefaultPrefix = "idempotency:"

// Field names of a record's hash (those of the DynamoDB store's table).
const (
	FieldStatus               = "status"
	FieldOwner                = "owner"
	FieldExpiration           = "expiration"
	FieldInProgressExpiration = "in_progress_expiration"
	FieldData                 = "data"
	FieldValidation           = "validation"
)

// Client is the part of a go-redis client the store uses; *redis.Client,
// *redis.ClusterClient and *redis.Ring have it.
type Client interface {
	redis.Scripter
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets what is put before every idempotency key to make its
// Redis key (default "idempotency:"). Give each function (or each shadow
// replay) its own prefix when they share a server but not their keys.
func WithPrefix(prefix string) Option { return func(s *Store) { s.prefix = prefix } }

// Store is an idempotency.Store on a Redis or Valkey server.
type Store struct {
	client Client
	prefix string
}

var (
	_ idempotency.Store  = (*Store)(nil)
	_ idempotency.Getter = (*Store)(nil)
)

// New returns a store on client (e.g. redis.NewClient).
func New(client Client, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	s := &Store{client: client, prefix: DefaultPrefix}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Key returns the Redis key that holds idempotency key k's record.
func (s *Store) Key(k string) string { return s.prefix + k }

// claimScript: KEYS[1] the record; ARGV owner, now (s), now (ms), lease
// (ms), expiration (s), PEXPIREAT (ms), payload hash (or ""). It returns 0
// when it wrote the claim, and the record's fields (HMGET order) when it
// found a live one (or one it cannot read, which the caller reports).
var claimScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' then
  if t ~= 'hash' then
    return redis.error_reply('key ' .. KEYS[1] .. ' holds a ' .. t .. ', not an idempotency record')
  end
  local r = redis.call('HMGET', KEYS[1], 'status', 'owner', 'in_progress_expiration', 'expiration', 'data', 'validation')
  local exp = tonumber(r[4])
  if exp == nil or (r[1] ~= 'INPROGRESS' and r[1] ~= 'COMPLETED') then
    return r
  end
  if exp >= tonumber(ARGV[2]) then
    if r[1] == 'COMPLETED' then
      return r
    end
    local lease = tonumber(r[3])
    if lease == nil or lease >= tonumber(ARGV[3]) then
      return r
    end
  end
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'status', 'INPROGRESS', 'owner', ARGV[1], 'in_progress_expiration', ARGV[4], 'expiration', ARGV[5])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'validation', ARGV[7])
end
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
return 0
`)

// completeScript: ARGV owner, expiration (s), PEXPIREAT (ms), result, "1"
// when there is a result. It returns 1 when it completed the record, 0 when
// owner does not hold it.
var completeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'COMPLETED', 'expiration', ARGV[2])
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'data', ARGV[4])
  redis.call('HDEL', KEYS[1], 'in_progress_expiration')
else
  redis.call('HDEL', KEYS[1], 'in_progress_expiration', 'data')
end
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
`)

// completeAllScript: KEYS the records; ARGV, per key, five values: owner,
// expiration (s), PEXPIREAT (ms), result, "1" when there is a result. It
// checks every owner before it writes anything: it returns 0 when it
// completed every record, and i when the i-th key's owner does not hold it
// (having written nothing).
var completeAllScript = redis.NewScript(`
for i = 1, #KEYS do
  if redis.call('HGET', KEYS[i], 'owner') ~= ARGV[5*i-4] then
    return i
  end
end
for i = 1, #KEYS do
  local a = 5*i-4
  redis.call('HSET', KEYS[i], 'status', 'COMPLETED', 'expiration', ARGV[a+1])
  if ARGV[a+4] == '1' then
    redis.call('HSET', KEYS[i], 'data', ARGV[a+3])
    redis.call('HDEL', KEYS[i], 'in_progress_expiration')
  else
    redis.call('HDEL', KEYS[i], 'in_progress_expiration', 'data')
  end
  redis.call('PEXPIREAT', KEYS[i], ARGV[a+2])
end
return 0
`)

// extendScript: ARGV owner, lease (ms). 1 when it moved the lease, 0 when
// owner does not hold the record in progress.
var extendScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'status', 'owner')
if r[1] ~= 'INPROGRESS' or r[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'in_progress_expiration', ARGV[2])
return 1
`)

// releaseScript: ARGV owner. 1 when it deleted the record, 0 when owner
// does not hold it.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
`)

// expireAt is the key's Redis expiry for a record expiring at exp: the end
// of exp's second, since a record is live through that whole second.
func expireAt(exp time.Time) int64 { return (exp.Unix() + 1) * 1000 }

// Claim implements idempotency.Store with one script call.
func (s *Store) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	res, err := claimScript.Run(ctx, s.client, []string{s.Key(c.Key)},
		c.Owner, c.Now.Unix(), c.Now.UnixMilli(), c.LeaseUntil.UnixMilli(), c.Expires.Unix(),
		expireAt(c.Expires), c.PayloadHash).Result()
	if err != nil {
		return nil, s.storeError(ctx, "claim", c.Key, err)
	}
	switch v := res.(type) {
	case int64:
		if v == 0 {
			return nil, nil
		}
	case []any:
		rec, err := s.record(c.Key, v)
		if err != nil {
			return nil, &idempotency.StoreError{Op: "claim", Key: c.Key, Err: err}
		}
		return rec, nil
	}
	return nil, &idempotency.StoreError{Op: "claim", Key: c.Key, Err: fmt.Errorf("unexpected answer %v from the claim script", res)}
}

// Complete implements idempotency.Store with one script call conditional on the owner.
func (s *Store) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	has := "0"
	if len(result) > 0 {
		has = "1"
	}
	res, err := completeScript.Run(ctx, s.client, []string{s.Key(key)},
		owner, expires.Unix(), expireAt(expires), result, has).Int64()
	return s.owned(ctx, "complete", key, res, err)
}

var _ idempotency.GroupCompleter = (*Store)(nil)

// CompleteAll implements idempotency.GroupCompleter with one script call:
// the script checks every key's owner first, then completes them all, so
// it is all-or-nothing (a key whose owner lost it fails the call with
// idempotency.ErrLeaseLost, naming the key, and nothing is written). A
// script names its keys, which on a cluster must share a slot: on a client
// other than *redis.Client (a *redis.ClusterClient, a *redis.Ring) the
// keys are completed one after another, in order, each with Complete's
// script, so a failure leaves a prefix of cs completed, but not none of
// it (storetest's all-or-nothing cases, run on a single server, would
// not hold there).
func (s *Store) CompleteAll(ctx context.Context, cs []idempotency.Completion) error {
	if _, single := s.client.(*redis.Client); !single || len(cs) == 1 {
		for _, c := range cs {
			if err := s.Complete(ctx, c.Key, c.Owner, c.Result, c.Expires); err != nil {
				return err
			}
		}
		return nil
	}
	if len(cs) == 0 {
		return nil
	}
	keys := make([]string, len(cs))
	args := make([]any, 0, 5*len(cs))
	for i, c := range cs {
		keys[i] = s.Key(c.Key)
		has := "0"
		if len(c.Result) > 0 {
			has = "1"
		}
		args = append(args, c.Owner, c.Expires.Unix(), expireAt(c.Expires), c.Result, has)
	}
	res, err := completeAllScript.Run(ctx, s.client, keys, args...).Int64()
	if err != nil {
		se := s.storeError(ctx, "complete", cs[0].Key, err).(*idempotency.StoreError)
		se.Err = fmt.Errorf("a group of %d completes (%q to %q): %w", len(cs), cs[0].Key, cs[len(cs)-1].Key, se.Err)
		return se
	}
	if res == 0 {
		return nil
	}
	if res < 1 || int(res) > len(cs) {
		return &idempotency.StoreError{Op: "complete", Key: cs[0].Key, Err: fmt.Errorf("unexpected answer %d from the group complete script", res)}
	}
	c := cs[res-1]
	return fmt.Errorf("idempotency: complete of key %q (Redis key %s; %d of a group of %d, none of which was written) refused: %w",
		c.Key, s.Key(c.Key), res, len(cs), idempotency.ErrLeaseLost)
}

// Extend implements idempotency.Store with one script call conditional on
// the owner and the record being in progress.
func (s *Store) Extend(ctx context.Context, key, owner string, leaseUntil time.Time) error {
	res, err := extendScript.Run(ctx, s.client, []string{s.Key(key)}, owner, leaseUntil.UnixMilli()).Int64()
	return s.owned(ctx, "extend", key, res, err)
}

// Release implements idempotency.Store with one script call conditional on the owner.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	res, err := releaseScript.Run(ctx, s.client, []string{s.Key(key)}, owner).Int64()
	return s.owned(ctx, "release", key, res, err)
}

// Get implements idempotency.Getter: one pipeline of HMGET, one round trip
// for all keys. A key that does not hold a record (or holds something
// else) is left out; a record that cannot be read fails the call, with the
// records read so far.
func (s *Store) Get(ctx context.Context, keys []string) (map[string]*idempotency.Record, error) {
	out := make(map[string]*idempotency.Record, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	cmds := make([]*redis.SliceCmd, len(keys))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, s.Key(k), fieldNames...)
		}
		return nil
	})
	var errs []error
	for i, cmd := range cmds {
		vals, cerr := cmd.Result()
		if cerr != nil {
			if len(errs) == 0 {
				errs = append(errs, s.storeError(ctx, "get", keys[i], cerr))
			}
			continue
		}
		if vals[0] == nil {
			continue // no record
		}
		rec, perr := s.record(keys[i], vals)
		if perr != nil {
			errs = append(errs, &idempotency.StoreError{Op: "get", Key: keys[i], Err: perr})
			continue
		}
		out[keys[i]] = rec
	}
	if len(errs) == 0 && err != nil {
		errs = append(errs, s.storeError(ctx, "get", keys[0], err))
	}
	return out, errors.Join(errs...)
}

var fieldNames = []string{FieldStatus, FieldOwner, FieldInProgressExpiration, FieldExpiration, FieldData, FieldValidation}

func (s *Store) owned(ctx context.Context, op, key string, res int64, err error) error {
	if err != nil {
		return s.storeError(ctx, op, key, err)
	}
	if res != 1 {
		return fmt.Errorf("idempotency: %s of key %q (Redis key %s) refused: %w", op, key, s.Key(key), idempotency.ErrLeaseLost)
	}
	return nil
}

func (s *Store) storeError(ctx context.Context, op, key string, err error) error {
	return &idempotency.StoreError{Op: op, Key: key, Retryable: ctx.Err() == nil && retryable(err),
		Err: fmt.Errorf("redis key %s: %w", s.Key(key), err)}
}

// retryableReplies are the server's answers that say "not now": loading its
// data, busy running a script, a slot migrating, a cluster or primary down,
// a replica that became read-only in a failover.
var retryableReplies = []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY"}

// retryable reports timeouts, dropped or refused connections, a full
// connection pool and the server's transient answers; not a canceled
// context, a closed client or a script error.
func retryable(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrClosed):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, redis.ErrPoolTimeout):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, p := range retryableReplies {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// record reads a record from its fields in HMGET order.
func (s *Store) record(key string, v []any) (*idempotency.Record, error) {
	if len(v) != len(fieldNames) {
		return nil, fmt.Errorf("redis key %s: %d fields read, want %d", s.Key(key), len(v), len(fieldNames))
	}
	str := func(i int) string { x, _ := v[i].(string); return x }
	rec := &idempotency.Record{Key: key, Owner: str(1), PayloadHash: str(5)}
	switch st := str(0); st {
	case "INPROGRESS":
		rec.Status = idempotency.StatusInProgress
	case "COMPLETED":
		rec.Status = idempotency.StatusCompleted
	default:
		return nil, fmt.Errorf("redis key %s has %s %q, want INPROGRESS or COMPLETED; does another application write under the prefix %q?", s.Key(key), FieldStatus, st, s.prefix)
	}
	if d := str(4); d != "" {
		rec.Result = []byte(d)
	}
	exp, err := num(s.Key(key), FieldExpiration, str(3))
	if err != nil {
		return nil, err
	}
	rec.Expires = time.Unix(exp, 0)
	if rec.Status == idempotency.StatusInProgress {
		ms, err := num(s.Key(key), FieldInProgressExpiration, str(2))
		if err != nil {
			return nil, err
		}
		rec.LeaseUntil = time.UnixMilli(ms)
	}
	return rec, nil
}

func num(rkey, field, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redis key %s: field %s = %q is not a whole number", rkey, field, v)
	}
	return n, nil
}
