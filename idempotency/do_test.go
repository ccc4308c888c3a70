package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/idempotency"
)

// recorder wraps a store, records claims and can fail calls.
type recorder struct {
	idempotency.Store
	mu     sync.Mutex
	claims []idempotency.Claim
	// failClaim is called before each Claim; a non-nil error is returned
	// instead (after the claim was written when landed is true).
	failClaim func(n int) (err error, landed bool)
	completes []time.Time
}

func (r *recorder) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	r.mu.Lock()
	r.claims = append(r.claims, c)
	n := len(r.claims)
	r.mu.Unlock()
	if r.failClaim != nil {
		if err, landed := r.failClaim(n); err != nil {
			if landed {
				if _, cerr := r.Store.Claim(ctx, c); cerr != nil {
					return nil, cerr
				}
			}
			return nil, err
		}
	}
	return r.Store.Claim(ctx, c)
}

func (r *recorder) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	r.mu.Lock()
	r.completes = append(r.completes, expires)
	r.mu.Unlock()
	return r.Store.Complete(ctx, key, owner, result, expires)
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newClock() *clock { return &clock{now: time.Unix(1_800_000_000, 0)} }

var noWait = batch.BackoffFunc(func(int) time.Duration { return 0 })

func ok(runs *int) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) { *runs++; return []byte("ok"), nil }
}

// The renewed lease is DefaultLease long, but never past the deadline.
func TestLeaseBoundedByDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		want     time.Duration // the lease, on Do's clock, within 1 s
	}{
		{"LongDeadline", 10 * time.Minute, idempotency.DefaultLease},
		{"ShortDeadline", 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			store := &recorder{Store: idempotency.NewMemoryStore()}
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			runs := 0
			if _, err := idempotency.Do(ctx, store, "k", ok(&runs), idempotency.WithClock(clk.Now)); err != nil {
				t.Fatal(err)
			}
			lease := store.claims[0].LeaseUntil.Sub(clk.Now())
			if lease > tc.want || lease < tc.want-time.Second {
				t.Errorf("lease of %v, want %v", lease, tc.want)
			}
			if got, want := store.claims[0].Expires, clk.Now().Add(idempotency.DefaultTTL); !got.Equal(want) {
				t.Errorf("claim expires %v, want %v", got, want)
			}
		})
	}
}

func TestLeaseAndTTLOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		ctx       func() (context.Context, context.CancelFunc)
		opts      []idempotency.Option
		lease     time.Duration
		completed time.Duration
	}{
		{"NoDeadline", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }, nil, idempotency.DefaultLease, time.Hour},
		{"FixedLease", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Hour)
		},
			[]idempotency.Option{idempotency.WithLease(30 * time.Second)}, 30 * time.Second, time.Hour},
		{"TTL", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			[]idempotency.Option{idempotency.WithTTL(24 * time.Hour)}, idempotency.DefaultLease, 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			store := &recorder{Store: idempotency.NewMemoryStore()}
			ctx, cancel := tc.ctx()
			defer cancel()
			runs := 0
			fn := func(c context.Context) ([]byte, error) { clk.Add(time.Second); return ok(&runs)(c) }
			if _, err := idempotency.Do(ctx, store, "k", fn, append(tc.opts, idempotency.WithClock(clk.Now))...); err != nil {
				t.Fatal(err)
			}
			start := time.Unix(1_800_000_000, 0)
			if got := store.claims[0].LeaseUntil; !got.Equal(start.Add(tc.lease)) {
				t.Errorf("lease until %v, want %v", got, start.Add(tc.lease))
			}
			// The completed record's TTL counts from completion.
			if got, want := store.completes[0], start.Add(time.Second+tc.completed); !got.Equal(want) {
				t.Errorf("completed record expires %v, want %v", got, want)
			}
		})
	}
}

func TestInProgressElsewhere(t *testing.T) {
	t.Parallel()
	clk := newClock()
	store := idempotency.NewMemoryStore()
	now := clk.Now()
	if rec, err := store.Claim(context.Background(), idempotency.Claim{Key: "k", Owner: "other", Now: now, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
		t.Fatal(rec, err)
	}
	runs := 0
	_, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithWait(0))
	if !errors.Is(err, idempotency.ErrInProgress) || runs != 0 {
		t.Fatalf("Do on a live claim: %v, %d runs; want ErrInProgress and no run", err, runs)
	}
	clk.Add(time.Minute + time.Millisecond)
	if _, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithClock(clk.Now)); err != nil || runs != 1 {
		t.Fatalf("Do after the lease expired: %v, %d runs; want one run", err, runs)
	}
}

func TestCompleteAfterLeaseLost(t *testing.T) {
	t.Parallel()
	clk := newClock()
	store := idempotency.NewMemoryStore()
	fn := func(ctx context.Context) ([]byte, error) {
		// The lease runs out while fn runs; another invocation claims.
		clk.Add(2 * time.Minute)
		now := clk.Now()
		if rec, err := store.Claim(ctx, idempotency.Claim{Key: "k", Owner: "B", Now: now, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
			t.Errorf("B's claim: %v, %v", rec, err)
		}
		return []byte("A's result"), nil
	}
	got, err := idempotency.Do(context.Background(), store, "k", fn, idempotency.WithClock(clk.Now), idempotency.WithLease(time.Minute))
	if !errors.Is(err, idempotency.ErrLeaseLost) || string(got) != "A's result" {
		t.Fatalf("Do = %q, %v; want fn's result and ErrLeaseLost", got, err)
	}
	rec, err := store.Claim(context.Background(), idempotency.Claim{Key: "k", Owner: "C", Now: clk.Now()})
	if err != nil || rec == nil || rec.Owner != "B" || rec.Status != idempotency.StatusInProgress {
		t.Errorf("record after the stale complete: %+v, %v; want B's claim", rec, err)
	}
}

func TestPanicReleases(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic to propagate", r)
			}
		}()
		_, _ = idempotency.Do(context.Background(), store, "k", func(context.Context) ([]byte, error) { panic("boom") })
	}()
	runs := 0
	if _, err := idempotency.Do(context.Background(), store, "k", ok(&runs)); err != nil || runs != 1 {
		t.Errorf("Do after a panic: %v, %d runs; want the claim released and one run", err, runs)
	}
}

func TestStoreRetries(t *testing.T) {
	t.Parallel()
	throttled := &idempotency.StoreError{Op: "claim", Key: "k", Retryable: true, Err: errors.New("throttled")}
	broken := &idempotency.StoreError{Op: "claim", Key: "k", Err: errors.New("no such table")}
	for _, tc := range []struct {
		name     string
		fail     func(n int) (error, bool)
		opts     []idempotency.Option
		wantRuns int
		wantErr  error
		claims   int
	}{
		{"ThrottledTwice", func(n int) (error, bool) {
			if n <= 2 {
				return throttled, false
			}
			return nil, false
		}, nil, 1, nil, 3},
		{"LostResponse", func(n int) (error, bool) { // the write landed, its response did not
			if n == 1 {
				return throttled, true
			}
			return nil, false
		}, nil, 1, nil, 2},
		{"KeepsFailing", func(int) (error, bool) { return throttled, false }, nil, 0, throttled, 1 + idempotency.DefaultStoreRetries},
		{"NoRetries", func(int) (error, bool) { return throttled, false },
			[]idempotency.Option{idempotency.WithStoreRetries(0, noWait)}, 0, throttled, 1},
		{"NotRetryable", func(int) (error, bool) { return broken, false }, nil, 0, broken, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := &recorder{Store: idempotency.NewMemoryStore(), failClaim: tc.fail}
			runs := 0
			opts := append([]idempotency.Option{idempotency.WithStoreRetries(idempotency.DefaultStoreRetries, noWait)}, tc.opts...)
			_, err := idempotency.Do(context.Background(), store, "k", ok(&runs), opts...)
			if !errors.Is(err, tc.wantErr) || runs != tc.wantRuns || len(store.claims) != tc.claims {
				t.Errorf("Do = %v with %d runs and %d claims; want %v, %d runs, %d claims", err, runs, len(store.claims), tc.wantErr, tc.wantRuns, tc.claims)
			}
		})
	}
}

// TestRetryWithinDeadline: a wait that would pass the deadline is not taken.
func TestRetryWithinDeadline(t *testing.T) {
	t.Parallel()
	throttled := &idempotency.StoreError{Op: "claim", Key: "k", Retryable: true, Err: errors.New("throttled")}
	store := &recorder{Store: idempotency.NewMemoryStore(), failClaim: func(int) (error, bool) { return throttled, false }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	long := batch.BackoffFunc(func(int) time.Duration { return time.Hour })
	runs := 0
	_, err := idempotency.Do(ctx, store, "k", ok(&runs), idempotency.WithStoreRetries(5, long))
	if !errors.Is(err, throttled) || len(store.claims) != 1 || runs != 0 {
		t.Errorf("Do = %v after %d claims, %d runs; want the throttle error after one claim", err, len(store.claims), runs)
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	runs := 0
	for _, tc := range []struct {
		name string
		key  string
		opts []idempotency.Option
	}{
		{"EmptyKey", "", nil},
		{"ZeroTTL", "k", []idempotency.Option{idempotency.WithTTL(0)}},
		{"NegativeLease", "k", []idempotency.Option{idempotency.WithLease(-time.Second)}},
		{"ZeroRenewedLease", "k", []idempotency.Option{idempotency.WithRenewedLease(0)}},
		{"NegativeWait", "k", []idempotency.Option{idempotency.WithWait(-time.Second)}},
		{"NegativeRetries", "k", []idempotency.Option{idempotency.WithStoreRetries(-1, noWait)}},
		{"NilClock", "k", []idempotency.Option{idempotency.WithClock(nil)}},
	} {
		if _, err := idempotency.Do(context.Background(), store, tc.key, ok(&runs), tc.opts...); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := idempotency.Do(context.Background(), store, "", ok(&runs)); !errors.Is(err, idempotency.ErrNoKey) {
		t.Errorf("empty key: %v, want ErrNoKey", err)
	}
	if runs != 0 {
		t.Errorf("fn ran %d times with bad arguments", runs)
	}
}
