package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/idempotency"
)

// Fields of a lane's hash (idempotency.LaneStore) besides those of a
// record: its status is idempotency.LaneStatus.
const (
	FieldPosition = "position"
	FieldState    = "state"
)

var _ idempotency.LaneStore = (*Store)(nil)

// less compares strings byte by byte: Lua's < follows the server's
// locale.
const luaLess = `
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
`

// claimLaneScript: KEYS[1] the lane; ARGV owner, now (s), now (ms), lease
// (ms), expiration (s), PEXPIREAT (ms), upto (or ""). It returns {1 when
// it took the lease else 0, then the hash's status, owner,
// in_progress_expiration, expiration, position and state as they were}.
var claimLaneScript = redis.NewScript(luaLess + `
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('key ' .. KEYS[1] .. ' holds a ' .. t .. ', not an idempotency lane')
end
local r = redis.call('HMGET', KEYS[1], 'status', 'owner', 'in_progress_expiration', 'expiration', 'position', 'state')
local free = false
local exp = tonumber(r[4])
if t == 'none' or exp == nil or exp < tonumber(ARGV[2]) then
  free = true
elseif r[1] == 'LANE' then
  local lease = tonumber(r[3])
  free = (lease == nil or lease < tonumber(ARGV[3]) or r[2] == ARGV[1]) and (ARGV[7] == '' or not r[5] or less(r[5], ARGV[7]))
end
if free then
  redis.call('HSET', KEYS[1], 'status', 'LANE', 'owner', ARGV[1], 'in_progress_expiration', ARGV[4], 'expiration', ARGV[5])
  redis.call('PEXPIREAT', KEYS[1], ARGV[6])
end
return {free and 1 or 0, r[1], r[2], r[3], r[4], r[5], r[6]}
`)

// saveLaneScript: ARGV owner, expiration (s), PEXPIREAT (ms), lease (ms,
// or "" to release), "1" when there is a state, position (or ""), state.
// It returns 1 when it wrote, 0 when owner does not hold the lease.
var saveLaneScript = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'status', 'owner', 'in_progress_expiration')
if r[1] ~= 'LANE' or r[2] ~= ARGV[1] or not r[3] then
  return 0
end
redis.call('HSET', KEYS[1], 'expiration', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], 'in_progress_expiration')
else
  redis.call('HSET', KEYS[1], 'in_progress_expiration', ARGV[4])
end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'state', ARGV[7])
  if ARGV[6] == '' then
    redis.call('HDEL', KEYS[1], 'position')
  else
    redis.call('HSET', KEYS[1], 'position', ARGV[6])
  end
end
return 1
`)

// ClaimLane implements idempotency.LaneStore with one script call: it
// takes the lease as the interface says and returns the lane as it was,
// taken or not, so a replayed batch's claim costs one request.
func (s *Store) ClaimLane(ctx context.Context, c idempotency.LaneClaim) (*idempotency.LaneRecord, error) {
	res, err := claimLaneScript.Run(ctx, s.client, []string{s.Key(c.Lane)},
		c.Owner, c.Now.Unix(), c.Now.UnixMilli(), c.LeaseUntil.UnixMilli(), c.Expires.Unix(), expireAt(c.Expires), c.Upto).Slice()
	if err != nil {
		return nil, s.storeError(ctx, "claim lane", c.Lane, err)
	}
	if len(res) != 7 {
		return nil, &idempotency.StoreError{Op: "claim lane", Key: c.Lane, Err: fmt.Errorf("unexpected answer %v from the lane claim script", res)}
	}
	rec, err := s.lane(c.Lane, res[1:])
	if err != nil {
		return nil, &idempotency.StoreError{Op: "claim lane", Key: c.Lane, Err: err}
	}
	if took, _ := res[0].(int64); took == 1 {
		rec.Owner = c.Owner
	}
	return rec, nil
}

// SaveLane implements idempotency.LaneStore with one script call
// conditional on the owner holding the lease.
func (s *Store) SaveLane(ctx context.Context, sv idempotency.LaneSave) error {
	lease, has := "", "0"
	if !sv.LeaseUntil.IsZero() {
		lease = strconv.FormatInt(sv.LeaseUntil.UnixMilli(), 10)
	}
	if sv.State != nil {
		has = "1"
	}
	res, err := saveLaneScript.Run(ctx, s.client, []string{s.Key(sv.Lane)},
		sv.Owner, sv.Expires.Unix(), expireAt(sv.Expires), lease, has, sv.Position, sv.State).Int64()
	return s.owned(ctx, "save lane", sv.Lane, res, err)
}

// lane reads a lane's fields, in the claim script's order; a key without
// a hash is a lane never written.
func (s *Store) lane(lane string, v []any) (*idempotency.LaneRecord, error) {
	str := func(i int) (string, bool) { x, ok := v[i].(string); return x, ok }
	rec := &idempotency.LaneRecord{Lane: lane}
	status, ok := str(0)
	if !ok {
		return rec, nil
	}
	if status != idempotency.LaneStatus {
		return nil, fmt.Errorf("redis key %s has %s %q, want %s: an idempotency record is stored under the lane's key; does another application write under the prefix %q?",
			s.Key(lane), FieldStatus, status, idempotency.LaneStatus, s.prefix)
	}
	rec.Owner, _ = str(1)
	rec.Position, _ = str(4)
	if st, ok := str(5); ok {
		rec.State = []byte(st)
	}
	exp, _ := str(3)
	n, err := num(s.Key(lane), FieldExpiration, exp)
	if err != nil {
		return nil, err
	}
	rec.Expires = time.Unix(n, 0)
	if ms, ok := str(2); ok {
		n, err := num(s.Key(lane), FieldInProgressExpiration, ms)
		if err != nil {
			return nil, err
		}
		rec.LeaseUntil = time.UnixMilli(n)
	}
	return rec, nil
}
