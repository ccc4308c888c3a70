package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/batch"
)

// Defaults of Do.
const (
	DefaultTTL          = time.Hour        // how long a completed record is kept
	DefaultLease        = 15 * time.Minute // in-progress expiry when ctx has no deadline (Lambda's longest timeout)
	DefaultStoreRetries = 4                // retries of a throttled or timed-out store call
)

// Option configures Do.
type Option func(*config)

type config struct {
	ttl        time.Duration
	lease      time.Duration // fixed lease; 0 follows ctx's deadline
	payload    []byte
	hasHash    bool
	now        func() time.Time
	retries    int
	backoff    batch.Backoff
	newOwner   func() string
	noDeadline time.Duration
	cache      *Cache
}

func defaultConfig() config {
	return config{
		ttl:        DefaultTTL,
		now:        time.Now,
		retries:    DefaultStoreRetries,
		backoff:    batch.FullJitter(batch.Capped(batch.Exponential(20*time.Millisecond), time.Second), nil),
		newOwner:   rand.Text,
		noDeadline: DefaultLease,
	}
}

func (c *config) validate() error {
	switch {
	case c.ttl <= 0:
		return fmt.Errorf("idempotency: WithTTL(%v): the TTL must be positive", c.ttl)
	case c.lease < 0:
		return fmt.Errorf("idempotency: WithLease(%v): the lease must be positive", c.lease)
	case c.retries < 0:
		return fmt.Errorf("idempotency: WithStoreRetries(%d): must be 0 or more", c.retries)
	case c.now == nil || c.backoff == nil:
		return errors.New("idempotency: WithClock and WithStoreRetries need non-nil arguments")
	}
	return nil
}

// WithTTL sets how long a completed record is kept (default 1 h). After it
// the key is claimable again.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithLease sets a fixed in-progress lease instead of ctx's deadline. A
// claimant that runs past its lease may be overtaken; its complete then
// fails with ErrLeaseLost (fencing).
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithPayload stores the SHA-256 of payload with the claim; the same key
// with a different payload then fails with ErrPayloadMismatch. Pass the
// bytes that define "the same request" (the whole record or a chosen part).
func WithPayload(payload []byte) Option {
	return func(c *config) { c.payload, c.hasHash = payload, true }
}

// WithCache lets Do answer a key completed in cache without a store request,
// and puts every record Do completes, or finds completed, into cache. Keep
// one Cache per process (e.g. a package variable) so a warm Lambda
// container remembers its keys; see Cache and Lookup.
func WithCache(c *Cache) Option { return func(cfg *config) { cfg.cache = c } }

// WithClock sets the clock that stamps claims and expiries (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithStoreRetries sets how often a retryable store failure (throttling, a
// timeout) is retried and the backoff between tries (default 4 retries,
// full-jitter exponential from 20 ms capped at 1 s). No wait outlasts ctx.
func WithStoreRetries(retries int, b batch.Backoff) Option {
	return func(c *config) { c.retries, c.backoff = retries, b }
}

// PayloadHash returns the hash WithPayload stores: hex SHA-256.
func PayloadHash(payload []byte) string {
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:])
}

// Do runs fn at most once for key (see the package documentation):
//
//   - key completed (and not expired): fn does not run; Do returns the
//     stored result and nil.
//   - key in progress in a live invocation elsewhere: fn does not run; Do
//     returns an error wrapping ErrInProgress.
//   - otherwise Do claims key, runs fn, and on success stores its result
//     (Complete); on an error or a panic it gives the claim back (Release),
//     so a retry runs at once, and returns fn's error (or panics again).
//
// fn never runs without a claim: when the store fails (after retries), Do
// returns a *StoreError. When fn succeeded but its claim was lost meanwhile,
// Do returns fn's result with an error wrapping ErrLeaseLost.
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
	}
	if cfg.cache != nil {
		if rec, ok := cfg.cache.get(key, now); ok {
			return duplicate(key, c.PayloadHash, rec)
		}
	}
	var existing *Record
	err := cfg.retry(ctx, func() (err error) {
		existing, err = store.Claim(ctx, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A retried claim whose first write landed finds its own record.
	if existing != nil && existing.Owner != c.Owner {
		if existing.Status == StatusCompleted && cfg.cache != nil {
			cfg.cache.put(existing)
		}
		return duplicate(key, c.PayloadHash, existing)
	}

	slot := &resultSlot{}
	result, err := run(context.WithValue(ctx, resultKey{}, slot), fn, func() { cfg.release(ctx, store, c) })
	if err != nil {
		return nil, errors.Join(err, cfg.release(ctx, store, c))
	}
	if result == nil {
		result = slot.b
	}
	expires := cfg.now().Add(cfg.ttl)
	if err := cfg.retry(ctx, func() error { return store.Complete(ctx, key, c.Owner, result, expires) }); err != nil {
		return result, fmt.Errorf("idempotency: key %q: fn succeeded but its result was not stored: %w", key, err)
	}
	if cfg.cache != nil {
		cfg.cache.put(&Record{Key: key, Status: StatusCompleted, Result: result, PayloadHash: c.PayloadHash, Expires: expires.Truncate(time.Second)})
	}
	return result, nil
}

// duplicate answers a key that someone else holds: the stored result of a
// completed record, or ErrInProgress; ErrPayloadMismatch when both sides
// hashed their payloads and the hashes differ.
func duplicate(key, hash string, existing *Record) ([]byte, error) {
	if hash != "" && existing.PayloadHash != "" && hash != existing.PayloadHash {
		return nil, fmt.Errorf("idempotency: key %q was used before with a different payload; use a key per distinct request: %w", key, ErrPayloadMismatch)
	}
	if existing.Status == StatusCompleted {
		return existing.Result, nil
	}
	return nil, fmt.Errorf("idempotency: key %q is claimed by another invocation until %s; retry after it: %w",
		key, existing.LeaseUntil.UTC().Format(time.RFC3339Nano), ErrInProgress)
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

func (cfg *config) leaseUntil(ctx context.Context, now time.Time) time.Time {
	if cfg.lease > 0 {
		return now.Add(cfg.lease)
	}
	if dl, ok := ctx.Deadline(); ok {
		return now.Add(time.Until(dl))
	}
	return now.Add(cfg.noDeadline)
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
