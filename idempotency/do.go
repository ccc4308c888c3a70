package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/batch"
)

// Defaults of Do.
const (
	DefaultTTL = time.Hour // how long a completed record is kept
	// DefaultLease is how long a claim holds its key without word from its
	// owner: the owner renews it (Store.Extend) every third of it while
	// its function runs, so a claim whose owner died (a crash, a timeout,
	// an out-of-memory kill) lapses within one lease, and a record that
	// finishes within a third of it costs no renewal.
	DefaultLease = 5 * time.Second
	// DefaultWait is how long Do waits for a key in progress under another
	// claim to complete or lapse, never past ctx's deadline: two leases
	// (of DefaultLease, or of the lease set), enough for a dead owner's
	// claim to lapse, with room for its owner's clock to run behind.
	DefaultWait         = 2 * DefaultLease
	DefaultStoreRetries = 4 // retries of a throttled or timed-out store call
)

// Option configures Do.
type Option func(*config)

type config struct {
	ttl      time.Duration
	lease    time.Duration
	fixed    bool // WithLease: the lease is not renewed nor bounded by the deadline
	wait     time.Duration
	waitSet  bool // WithWait; otherwise two leases
	payload  []byte
	hasHash  bool
	legacy   string // the payload's hash as earlier versions stored it (its bytes')
	now      func() time.Time
	retries  int
	backoff  batch.Backoff
	poll     batch.Backoff // waits between looks at a key in progress (nil: defaultPoll)
	sleep    func(ctx context.Context, d time.Duration) error
	newOwner func() string
	cache    *Cache
	depth    int // completes unwritten per ordered lane (Batch.Ordered)
	inFlight int // store requests in flight for a batch (WithInFlight)
}

func defaultConfig() config {
	return config{
		ttl:      DefaultTTL,
		lease:    DefaultLease,
		now:      time.Now,
		retries:  DefaultStoreRetries,
		backoff:  batch.FullJitter(batch.Capped(batch.Exponential(20*time.Millisecond), time.Second), nil),
		sleep:    sleep,
		newOwner: rand.Text,
		depth:    DefaultOrderedDepth,
		inFlight: DefaultInFlight,
	}
}

func (c *config) validate() error {
	switch {
	case c.ttl <= 0:
		return fmt.Errorf("idempotency: WithTTL(%v): the TTL must be positive", c.ttl)
	case c.lease <= 0 && c.fixed:
		return fmt.Errorf("idempotency: WithLease(%v): the lease must be positive", c.lease)
	case c.lease < 3*time.Millisecond && !c.fixed:
		return fmt.Errorf("idempotency: WithRenewedLease(%v): the lease must be at least 3ms", c.lease)
	case c.waitSet && c.wait < 0:
		return fmt.Errorf("idempotency: WithWait(%v): must be 0 or more", c.wait)
	case c.retries < 0:
		return fmt.Errorf("idempotency: WithStoreRetries(%d): must be 0 or more", c.retries)
	case c.depth < 0 || c.depth > DefaultInFlight:
		return fmt.Errorf("idempotency: WithOrderedDepth(%d): must be 0 to %d", c.depth, DefaultInFlight)
	case c.inFlight < 1 || c.inFlight > MaxInFlight:
		return fmt.Errorf("idempotency: WithInFlight(%d): must be 1 to %d", c.inFlight, MaxInFlight)
	case c.now == nil || c.backoff == nil:
		return errors.New("idempotency: WithClock and WithStoreRetries need non-nil arguments")
	}
	return nil
}

// WithTTL sets how long a completed record is kept (default 1 h). After it
// the key is claimable again.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithRenewedLease sets the length of the in-progress lease (default
// DefaultLease). The claim's owner renews it every third of d while its
// function runs, never past ctx's deadline. A shorter lease lets a dead
// owner's key go sooner; a longer one costs fewer renewals for a long
// function and rides out a longer stall of the store.
func WithRenewedLease(d time.Duration) Option {
	return func(c *config) { c.lease, c.fixed = d, false }
}

// WithLease sets a fixed in-progress lease of d, which is never renewed
// and not bounded by ctx's deadline. A claimant that runs past its lease
// may be overtaken by another, which then runs the same function while it
// still runs; its Complete fails with ErrLeaseLost (fencing). Prefer the
// default renewed lease (WithRenewedLease); a fixed one is for a store
// that should see no renewals, and for tests of lease expiry.
func WithLease(d time.Duration) Option { return func(c *config) { c.lease, c.fixed = d, true } }

// WithWait sets how long Do waits for a key in progress under another
// claim (default two leases: DefaultWait with the default lease) before it gives up with ErrInProgress. While
// it waits it looks at the key again (one claim attempt each time) after
// 50 ms, 100 ms, ... up to every second, and right after the other claim's
// lease ends; the other claim completing makes the call a duplicate, its
// lapse (its owner died) or release lets this call claim the key. No wait
// outlasts ctx. WithWait(0) fails at once, as Powertools does.
func WithWait(d time.Duration) Option { return func(c *config) { c.wait, c.waitSet = d, true } }

// WithPayload stores a hash of payload with the claim (PayloadHash: the
// SHA-256 of its canonical JSON form when payload is JSON, else of its
// bytes); the same key with a different payload then fails with
// ErrPayloadMismatch, while the same JSON with its object keys in another
// order, or other whitespace, is the same payload. Pass the bytes that
// define "the same request" (the whole record or a chosen part).
func WithPayload(payload []byte) Option {
	return func(c *config) { c.payload, c.hasHash = payload, true }
}

// WithCache lets Do answer a key completed in cache without a store request,
// and puts every record Do completes, or finds completed, into cache. Keep
// one Cache per process (e.g. a package variable) so a warm Lambda
// container remembers its keys; see Cache. Package handlers'
// WithIdempotency fills the same cache from its batch-level lookup.
func WithCache(c *Cache) Option { return func(cfg *config) { cfg.cache = c } }

// WithOrderedDepth sets how many completes of an ordered lane (a message
// group, a shard or a partition of a batch whose claims are taken ahead:
// ClaimBatch, Batch.Ordered) go unwritten while the lane's next records run (default
// DefaultOrderedDepth), which bounds both a group's size and
// the records a kill can leave to run again per lane (n and the one
// running). 0 waits for each record's complete before the next record's
// function starts; 1 writes one complete at a time. The package's Do,
// which always waits for its complete, ignores it.
func WithOrderedDepth(n int) Option { return func(c *config) { c.depth = n } }

// WithInFlight bounds the store requests a batch keeps in flight at once
// (default DefaultInFlight): the claims ClaimBatch (and so package
// handlers) takes for a batch's records all at once, their completes and releases, lane
// checkpoints and lease renewals together, and the claims held for
// records that have not started. It is the store's concurrency, not the
// function's (handlers.WithConcurrency): a batch of 100 records claims all
// 100 keys in one round trip while 8 functions run. The store's client
// must allow that many connections (see DefaultInFlight). What a kill can
// leave to run again on an unordered source grows with it: the completes
// in flight when a process dies were not stored. The package's Do makes
// one request at a time and ignores it.
func WithInFlight(n int) Option { return func(c *config) { c.inFlight = n } }

// WithClock sets the clock that stamps claims and expiries (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithStoreRetries sets how often a retryable store failure (throttling, a
// timeout) is retried and the backoff between tries (default 4 retries,
// full-jitter exponential from 20 ms capped at 1 s). No wait outlasts ctx.
func WithStoreRetries(retries int, b batch.Backoff) Option {
	return func(c *config) { c.retries, c.backoff = retries, b }
}

// PayloadHash returns the hash WithPayload stores: the hex SHA-256 of
// payload's canonical JSON form (see CanonicalJSON) when payload is one
// valid UTF-8 JSON value, else of payload's bytes. A record stored by an
// earlier version, which hashed the bytes as they were, still matches.
func PayloadHash(payload []byte) string {
	if c, ok := CanonicalJSON(payload); ok {
		return rawHash(c)
	}
	return rawHash(payload)
}

func rawHash(payload []byte) string {
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:])
}

// CanonicalJSON returns payload's canonical JSON form, and true, when
// payload is one valid UTF-8 JSON value: no insignificant whitespace,
// object keys sorted (byte-wise, by their unescaped text; of a key given
// twice the last is kept, as encoding/json reads it), strings with the
// escapes encoding/json writes (but <, > and & as they are), numbers as
// written. Powertools hashes its payloads the same way (sorted keys), so
// reordered keys are not a different request.
func CanonicalJSON(payload []byte) ([]byte, bool) {
	if !utf8.Valid(payload) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false // more than one value
	}
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return nil, false
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), true
}

// Do runs fn at most once for key (see the package documentation):
//
//   - key completed (and not expired): fn does not run; Do returns the
//     stored result and nil.
//   - key in progress under another claim: Do waits (WithWait) for that
//     claim to complete (then it is a duplicate, as above), or to lapse or
//     be released (then Do claims key); when the wait runs out, fn does not
//     run and Do returns an *InProgressError (errors.Is ErrInProgress).
//   - otherwise Do claims key, runs fn, renewing the claim's lease while fn
//     runs, and on success stores its result (Complete); on an error or a
//     panic it gives the claim back (Release), so a retry runs at once, and
//     returns fn's error (or panics again).
//
// fn never runs without a claim: when the store fails (after retries), Do
// returns a *StoreError. When fn succeeded but its claim was lost meanwhile,
// Do returns fn's result with an error wrapping ErrLeaseLost. A renewal
// that finds the claim lost cancels fn's context (its cause is an error
// wrapping ErrLeaseLost): another claimant runs the function now.
func Do(ctx context.Context, store Store, key string, fn func(context.Context) ([]byte, error), opts ...Option) ([]byte, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, ErrNoKey
	}
	now := cfg.now()
	c := Claim{
		Key: key, Owner: cfg.newOwner(), Now: now,
		LeaseUntil: cfg.leaseUntil(ctx, now), Expires: now.Add(cfg.ttl),
	}
	if cfg.hasHash {
		c.PayloadHash = PayloadHash(cfg.payload)
		cfg.legacy = rawHash(cfg.payload)
	}
	if cfg.cache != nil {
		if rec, ok := cfg.cache.get(key, now); ok {
			return duplicate(key, c.PayloadHash, cfg.legacy, rec)
		}
	}
	existing, err := cfg.claim(ctx, store, c)
	if err != nil {
		return nil, err
	}
	if existing != nil && existing.Status == StatusInProgress && !mismatch(c.PayloadHash, cfg.legacy, existing) && cfg.waitFor() > 0 {
		c, existing, err = cfg.await(ctx, store, c, existing)
		if err != nil {
			return nil, err
		}
	}
	if existing != nil {
		return duplicate(key, c.PayloadHash, cfg.legacy, existing)
	}
	slot := &resultSlot{}
	r := cfg.renew(ctx, store, key, c.Owner, c.LeaseUntil)
	fctx := ctx
	if r != nil {
		fctx = r.ctx
	}
	result, err := run(context.WithValue(fctx, resultKey{}, slot), fn, func() { r.stop(); cfg.release(ctx, store, c) })
	lost := r.stop()
	if err != nil {
		return nil, errors.Join(err, lost, cfg.release(ctx, store, c))
	}
	if result == nil {
		result = slot.b
	}
	expires := cfg.now().Add(cfg.ttl)
	if err := cfg.retry(ctx, func() error { return store.Complete(ctx, key, c.Owner, result, expires) }); err != nil {
		return result, fmt.Errorf("idempotency: key %q: fn succeeded but its result was not stored: %w", key, errors.Join(err, lost))
	}
	if cfg.cache != nil {
		cfg.cache.put(&Record{Key: key, Status: StatusCompleted, Result: result, PayloadHash: c.PayloadHash, Expires: expires.Truncate(time.Second)})
	}
	return result, nil
}

// claim writes c, with store retries. It returns nil when c holds the key
// (a retried claim whose first write landed finds its own record), or the
// record that holds it instead (a completed one goes into the cache).
func (cfg *config) claim(ctx context.Context, store Store, c Claim) (*Record, error) {
	var existing *Record
	err := cfg.retry(ctx, func() (err error) {
		existing, err = store.Claim(ctx, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if existing == nil || existing.Owner == c.Owner {
		return nil, nil
	}
	if existing.Status == StatusCompleted && cfg.cache != nil {
		cfg.cache.put(existing)
	}
	return existing, nil
}

// await waits for the in-progress record held to complete, lapse or be
// released, within the wait and ctx's deadline, looking again after each
// step of cfg.poll and right after held's lease ends. The time waited is
// the sum of the sleeps, so a clock that stands still (WithClock) cannot
// make it wait for ever. It returns the claim as last written, and nil
// when that claim took the key, a completed record, or an
// *InProgressError.
func (cfg *config) await(ctx context.Context, store Store, c Claim, held *Record) (Claim, *Record, error) {
	budget := cfg.waitFor()
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	poll := cfg.poll
	if poll == nil {
		poll = defaultPoll
	}
	var waited time.Duration
	for n := 1; ; n++ {
		d := poll.Delay(n)
		if lapse := held.LeaseUntil.Add(time.Millisecond).Sub(cfg.now()); lapse > 0 && lapse < d {
			d = lapse // the claim lapses then unless its owner renews it
		}
		d = min(d, budget-waited) // the last look is at the end of the wait
		if d <= 0 {
			return c, nil, &InProgressError{Key: c.Key, Owner: held.Owner, LeaseUntil: held.LeaseUntil, Waited: waited}
		}
		if err := cfg.sleep(ctx, d); err != nil {
			return c, nil, &InProgressError{Key: c.Key, Owner: held.Owner, LeaseUntil: held.LeaseUntil, Waited: waited}
		}
		waited += d
		if cfg.cache != nil {
			if rec, ok := cfg.cache.get(c.Key, cfg.now()); ok {
				return c, rec, nil // another record of this process completed it
			}
		}
		c.Now = cfg.now()
		c.LeaseUntil, c.Expires = cfg.leaseUntil(ctx, c.Now), c.Now.Add(cfg.ttl)
		rec, err := cfg.claim(ctx, store, c)
		if err != nil || rec == nil || rec.Status == StatusCompleted || mismatch(c.PayloadHash, cfg.legacy, rec) {
			return c, rec, err
		}
		held = rec
	}
}

// defaultPoll is the back-off between looks at a key (or a lane) held by
// another claim: 50 ms, 100 ms, 200 ms, ... then every second.
var defaultPoll = batch.Capped(batch.Exponential(50*time.Millisecond), time.Second)

// renewal is the lease renewal of one claim while its fn runs.
type renewal struct {
	ctx     context.Context // fn's context, canceled when the claim is lost
	cancel  context.CancelCauseFunc
	done    chan error
	stopped bool
	lost    error
}

// renew starts renewing the lease of key's claim, which ends at lease, while
// fn runs: every third of the lease, never past ctx's deadline. A fixed
// lease, or one that already reaches the deadline, needs no renewal: renew
// returns nil.
func (cfg *config) renew(ctx context.Context, store Store, key, owner string, lease time.Time) *renewal {
	if dl, ok := cfg.deadline(ctx, cfg.now()); cfg.fixed || ok && !lease.Before(dl) {
		return nil
	}
	r := &renewal{done: make(chan error, 1)}
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	go func() { r.done <- cfg.renewLoop(r.ctx, store, key, owner, lease, r.cancel) }()
	return r
}

// stop ends the renewals (a renewal in flight is abandoned) and returns an
// error wrapping ErrLeaseLost if one found the claim lost (it then canceled
// fn's context with that cause). A nil renewal has nothing to stop.
func (r *renewal) stop() error {
	if r == nil {
		return nil
	}
	if !r.stopped {
		r.stopped = true
		r.cancel(nil)
		r.lost = <-r.done
	}
	return r.lost
}

func (cfg *config) renewLoop(ctx context.Context, store Store, key, owner string, lease time.Time, cancel context.CancelCauseFunc) error {
	every := cfg.lease / 3
	for {
		if err := cfg.sleep(ctx, every); err != nil {
			return nil // fn returned
		}
		now := cfg.now()
		until := cfg.leaseUntil(ctx, now)
		if !until.After(lease) {
			return nil // the lease reached the deadline: nothing to renew
		}
		err := cfg.retry(ctx, func() error { return store.Extend(ctx, key, owner, until) })
		switch {
		case ctx.Err() != nil:
			return nil // fn returned meanwhile
		case err == nil:
			lease = until
		case errors.Is(err, ErrLeaseLost):
			err = fmt.Errorf("idempotency: key %q: the claim was lost while its function ran (its lease ran out and another claimant took the key): %w", key, err)
			cancel(err)
			return err
		}
		// A store failure (after retries) keeps the old lease; the next
		// renewal may still land before it ends.
	}
}

// InProgressError reports a key held by another claim for longer than Do
// waited. It wraps ErrInProgress.
type InProgressError struct {
	Key        string
	Owner      string        // the holding claim's owner token
	LeaseUntil time.Time     // when its lease ends, unless its owner renews it
	Waited     time.Duration // how long Do waited for it
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("idempotency: key %q is held by another claim, with a lease until %s (waited %v for it to complete or lapse); "+
		"retry after it: %v", e.Key, e.LeaseUntil.UTC().Format(time.RFC3339Nano), e.Waited.Round(time.Millisecond), ErrInProgress)
}

// Unwrap returns ErrInProgress.
func (e *InProgressError) Unwrap() error { return ErrInProgress }

// duplicate answers a key that someone else holds: the stored result of a
// completed record, or an *InProgressError; ErrPayloadMismatch when both
// sides hashed their payloads and the hashes differ.
func duplicate(key, hash, legacy string, existing *Record) ([]byte, error) {
	if mismatch(hash, legacy, existing) {
		return nil, fmt.Errorf("idempotency: key %q was used before with a different payload; use a key per distinct request: %w", key, ErrPayloadMismatch)
	}
	if existing.Status == StatusCompleted {
		return existing.Result, nil
	}
	return nil, &InProgressError{Key: key, Owner: existing.Owner, LeaseUntil: existing.LeaseUntil}
}

// mismatch reports whether both hash and the existing record's hash are
// set and differ (and the record's is not legacy, the payload's hash as
// earlier versions stored it): the key was reused for another payload.
func mismatch(hash, legacy string, existing *Record) bool {
	return hash != "" && existing.PayloadHash != "" && hash != existing.PayloadHash && legacy != existing.PayloadHash
}

type resultKey struct{}

type resultSlot struct{ b []byte }

// SetResult stores b as the result of the fn that Do is running under ctx
// (when fn itself returns a nil result), so that a later duplicate gets b
// back: Do returns it, and package handlers passes it to WithOnDuplicate.
// A handler's record function calls it to remember, say, the id of the
// payment it made. Outside Do it does nothing.
func SetResult(ctx context.Context, b []byte) {
	if s, ok := ctx.Value(resultKey{}).(*resultSlot); ok {
		s.b = append([]byte(nil), b...)
	}
}

// run calls fn; on a panic it calls onPanic and panics again.
func run(ctx context.Context, fn func(context.Context) ([]byte, error), onPanic func()) (result []byte, err error) {
	done := false
	defer func() {
		if !done {
			onPanic()
		}
	}()
	result, err = fn(ctx)
	done = true
	return result, err
}

// release gives the claim back. A claim already lost needs no release.
func (cfg *config) release(ctx context.Context, store Store, c Claim) error {
	err := cfg.retry(ctx, func() error { return store.Release(ctx, c.Key, c.Owner) })
	if errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return err
}

// leaseUntil is the end of a lease taken or renewed at now: now plus a fixed
// lease, or now plus the renewed lease but not past ctx's deadline.
func (cfg *config) leaseUntil(ctx context.Context, now time.Time) time.Time {
	until := now.Add(cfg.lease)
	if cfg.fixed {
		return until
	}
	if dl, ok := cfg.deadline(ctx, now); ok {
		until = minTime(until, dl)
	}
	return until
}

// deadline is ctx's deadline on Do's clock, which reads now.
func (cfg *config) deadline(ctx context.Context, now time.Time) (time.Time, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Time{}, false
	}
	return now.Add(time.Until(dl)), true
}

// waitFor is how long Do waits for a key in progress: WithWait's, or two
// leases.
func (cfg *config) waitFor() time.Duration {
	if !cfg.waitSet {
		return 2 * cfg.lease
	}
	return cfg.wait
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// sleep waits d, or until ctx ends (then it returns ctx's error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry runs op until it succeeds, fails for good, runs out of retries, or
// the next wait would pass ctx's deadline.
func (cfg *config) retry(ctx context.Context, op func() error) error {
	for n := 1; ; n++ {
		err := op()
		var tr interface{ Transient() bool }
		if err == nil || n > cfg.retries || !errors.As(err, &tr) || !tr.Transient() {
			return err
		}
		d := cfg.backoff.Delay(n)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
