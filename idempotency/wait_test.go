package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// autoSleep is a sleep that advances clk at once and adds each sleep to
// slept: Do's waits take no real time, and their sum is exact. Tests that
// use it give Do a fixed lease (WithLease), so that no renewal sleeps too.
func autoSleep(clk *clock, slept *time.Duration, each func(n int)) idempotency.Option {
	n := 0
	return idempotency.WithSleep(func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		clk.Add(d)
		*slept += d
		if each != nil {
			each(n)
		}
		return nil
	})
}

// countingStore counts the writes of each kind.
type countingStore struct {
	idempotency.Store
	mu      sync.Mutex
	claims  int
	extends int
	// failExtend, when set, is called before each Extend; a non-nil error
	// is returned instead.
	failExtend func(n int) error
	completes  int
}

func (s *countingStore) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	s.mu.Lock()
	s.claims++
	s.mu.Unlock()
	return s.Store.Claim(ctx, c)
}

func (s *countingStore) Extend(ctx context.Context, key, owner string, until time.Time) error {
	s.mu.Lock()
	s.extends++
	n, fail := s.extends, s.failExtend
	s.mu.Unlock()
	if fail != nil {
		if err := fail(n); err != nil {
			return err
		}
	}
	return s.Store.Extend(ctx, key, owner, until)
}

func (s *countingStore) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	s.mu.Lock()
	s.completes++
	s.mu.Unlock()
	return s.Store.Complete(ctx, key, owner, result, expires)
}

func (s *countingStore) counts() (claims, extends, completes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claims, s.extends, s.completes
}

// holdClaim writes a claim of key by owner, at now, with a lease of lease.
func holdClaim(t *testing.T, s idempotency.Store, key, owner string, now time.Time, lease time.Duration) {
	t.Helper()
	rec, err := s.Claim(context.Background(), idempotency.Claim{Key: key, Owner: owner, Now: now,
		LeaseUntil: now.Add(lease), Expires: now.Add(time.Hour)})
	if rec != nil || err != nil {
		t.Fatalf("claim of %s by %s: %+v, %v", key, owner, rec, err)
	}
}

func record(t *testing.T, s *idempotency.MemoryStore, key string) *idempotency.Record {
	t.Helper()
	recs, err := s.Get(context.Background(), []string{key})
	if err != nil {
		t.Fatal(err)
	}
	return recs[key]
}

// A claim whose owner died (it crashed after claiming) lapses at the end of
// its lease: Do waits exactly until then, claims, and runs fn once.
func TestWaitForDeadOwnerToLapse(t *testing.T) {
	t.Parallel()
	clk := newClock()
	mem := idempotency.NewMemoryStore()
	store := &countingStore{Store: mem}
	holdClaim(t, mem, "k", "dead", clk.Now(), idempotency.DefaultLease)
	var slept time.Duration
	runs := 0
	got, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithLease(idempotency.DefaultLease),
		idempotency.WithClock(clk.Now), autoSleep(clk, &slept, nil))
	if err != nil || string(got) != "ok" || runs != 1 {
		t.Fatalf("Do = %q, %v with %d runs; want fn to run once after the lapse", got, err, runs)
	}
	// Polls after 50, 100, 200, 400, 800 ms, then every second, and the
	// last one right after the lease ended.
	if want := idempotency.DefaultLease + time.Millisecond; slept != want {
		t.Errorf("waited %v, want %v (to the dead claim's lapse)", slept, want)
	}
	if claims, _, _ := store.counts(); claims != 1+9 {
		t.Errorf("%d claim attempts, want 10 (the first and 9 polls)", claims)
	}
	if r := record(t, mem, "k"); r == nil || r.Status != idempotency.StatusCompleted {
		t.Errorf("record after the run: %+v, want completed", r)
	}
}

// The other claim completes while Do waits: the call is a duplicate, with
// the other's result.
func TestWaitForOwnerToComplete(t *testing.T) {
	t.Parallel()
	clk := newClock()
	store := idempotency.NewMemoryStore()
	holdClaim(t, store, "k", "other", clk.Now(), time.Minute)
	var slept time.Duration
	complete := func(n int) {
		if n == 3 {
			if err := store.Complete(context.Background(), "k", "other", []byte("theirs"), clk.Now().Add(time.Hour)); err != nil {
				t.Error(err)
			}
		}
	}
	runs := 0
	got, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithLease(time.Minute),
		idempotency.WithClock(clk.Now), autoSleep(clk, &slept, complete))
	if err != nil || string(got) != "theirs" || runs != 0 {
		t.Fatalf("Do = %q, %v with %d runs; want the other's result and no run", got, err, runs)
	}
	if want := 350 * time.Millisecond; slept != want {
		t.Errorf("waited %v, want %v (three polls)", slept, want)
	}
}

// The other claim is released (its function failed): Do claims and runs.
func TestWaitForOwnerToRelease(t *testing.T) {
	t.Parallel()
	clk := newClock()
	store := idempotency.NewMemoryStore()
	holdClaim(t, store, "k", "other", clk.Now(), time.Minute)
	var slept time.Duration
	release := func(n int) {
		if n == 2 {
			if err := store.Release(context.Background(), "k", "other"); err != nil {
				t.Error(err)
			}
		}
	}
	runs := 0
	if _, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithLease(time.Minute),
		idempotency.WithClock(clk.Now), autoSleep(clk, &slept, release)); err != nil || runs != 1 {
		t.Fatalf("Do = %v with %d runs; want one run after the release", err, runs)
	}
}

// A live owner that keeps renewing its claim outlasts the wait: Do gives up
// with an *InProgressError after the wait (two leases), without running fn.
func TestWaitGivesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []idempotency.Option
		ctx   time.Duration // a deadline, if not 0
		waits time.Duration
	}{
		{"TwoLeases", nil, 0, 2 * idempotency.DefaultLease},
		{"WithWait", []idempotency.Option{idempotency.WithWait(3 * time.Second)}, 0, 3 * time.Second},
		{"RenewedLease", []idempotency.Option{idempotency.WithRenewedLease(time.Second)}, 0, 2 * time.Second},
		{"Deadline", nil, 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			store := idempotency.NewMemoryStore()
			holdClaim(t, store, "k", "live", clk.Now(), idempotency.DefaultLease)
			opts := append([]idempotency.Option{idempotency.WithLease(idempotency.DefaultLease)}, tc.opts...)
			renew := func(int) {
				if err := store.Extend(context.Background(), "k", "live", clk.Now().Add(idempotency.DefaultLease)); err != nil {
					t.Error(err)
				}
			}
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			var slept time.Duration
			runs := 0
			_, err := idempotency.Do(ctx, store, "k", ok(&runs), append(opts, idempotency.WithClock(clk.Now), autoSleep(clk, &slept, renew))...)
			var ipe *idempotency.InProgressError
			if !errors.As(err, &ipe) || !errors.Is(err, idempotency.ErrInProgress) || runs != 0 {
				t.Fatalf("Do = %v with %d runs; want an *InProgressError and no run", err, runs)
			}
			if ipe.Owner != "live" || ipe.Key != "k" || ipe.Waited != slept {
				t.Errorf("error %+v; want key k, owner live, waited %v", ipe, slept)
			}
			// A deadline is measured on the real clock, so allow for the
			// time the test took to get here.
			if slept > tc.waits || slept < tc.waits-500*time.Millisecond {
				t.Errorf("waited %v, want %v", slept, tc.waits)
			}
		})
	}
}

func TestWaitZeroFailsAtOnce(t *testing.T) {
	t.Parallel()
	clk := newClock()
	mem := idempotency.NewMemoryStore()
	store := &countingStore{Store: mem}
	holdClaim(t, mem, "k", "other", clk.Now(), time.Second)
	var slept time.Duration
	runs := 0
	_, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithWait(0), autoSleep(clk, &slept, nil))
	if claims, _, _ := store.counts(); !errors.Is(err, idempotency.ErrInProgress) || runs != 0 || slept != 0 || claims != 1 {
		t.Fatalf("Do = %v, %d runs, waited %v, %d claims; want ErrInProgress at once", err, runs, slept, claims)
	}
}

// fakeClock is a clock whose sleepers wake only when the test advances it.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[chan struct{}]time.Time
	arrived  chan struct{}
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_800_000_000, 0), sleepers: map[chan struct{}]time.Time{}, arrived: make(chan struct{}, 100)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	c.mu.Lock()
	c.sleepers[ch] = c.now.Add(d)
	c.mu.Unlock()
	c.arrived <- struct{}{}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.sleepers, ch)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// awaitSleeper blocks until a goroutine sleeps on the clock.
func (c *fakeClock) awaitSleeper(t *testing.T) {
	t.Helper()
	select {
	case <-c.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing sleeps on the clock") // a bound for a broken run, not a timing
	}
}

// advance moves the clock on by d and wakes the sleepers due by then.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for ch, at := range c.sleepers {
		if !at.After(c.now) {
			close(ch)
			delete(c.sleepers, ch)
		}
	}
}

// A record that finishes before a third of its lease costs no renewal: a
// claim and a complete.
func TestQuickRecordIsNotRenewed(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	store := &countingStore{Store: idempotency.NewMemoryStore()}
	runs := 0
	if _, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithSleep(clk.sleep)); err != nil {
		t.Fatal(err)
	}
	if claims, extends, completes := store.counts(); claims != 1 || extends != 0 || completes != 1 {
		t.Errorf("%d claims, %d extends, %d completes; want 1, 0, 1", claims, extends, completes)
	}
}

// While fn runs its owner renews the lease every third of it, so a claim
// that outlives its first lease stays its owner's; after fn returns, the
// renewals stop.
func TestLongRecordIsRenewed(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	mem := idempotency.NewMemoryStore()
	store := &countingStore{Store: mem}
	release := make(chan struct{})
	done := make(chan error, 1)
	start := clk.Now()
	const lease = 3 * time.Second
	go func() {
		_, err := idempotency.Do(context.Background(), store, "k", func(context.Context) ([]byte, error) {
			<-release
			return []byte("done"), nil
		}, idempotency.WithRenewedLease(lease), idempotency.WithClock(clk.Now), idempotency.WithSleep(clk.sleep))
		done <- err
	}()
	for i := 1; i <= 6; i++ { // two leases' worth of renewals
		clk.awaitSleeper(t)
		clk.advance(lease / 3)
	}
	clk.awaitSleeper(t) // the sixth renewal landed and the loop sleeps again
	if r := record(t, mem, "k"); r == nil || r.Status != idempotency.StatusInProgress || !r.LeaseUntil.Equal(start.Add(2*lease+lease)) {
		t.Fatalf("record after 6 renewals: %+v, want in progress with the lease %v", r, start.Add(3*lease))
	}
	// Another claimant, past the first lease, finds the claim live.
	runs := 0
	if _, err := idempotency.Do(context.Background(), mem, "k", ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithWait(0)); !errors.Is(err, idempotency.ErrInProgress) || runs != 0 {
		t.Fatalf("second claimant: %v, %d runs; want ErrInProgress", err, runs)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if claims, extends, completes := store.counts(); claims != 1 || extends != 6 || completes != 1 {
		t.Errorf("%d claims, %d extends, %d completes; want 1, 6, 1", claims, extends, completes)
	}
}

// The owner stalls (its renewals fail) until its lease lapses and another
// invocation takes the key: the next renewal finds the claim lost and
// cancels fn's context with ErrLeaseLost as the cause; whatever fn does
// then, its owner cannot complete over the new one (fencing).
func TestRenewalFindsClaimLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		honourCtx bool
	}{{"FnStops", true}, {"FnIgnoresCtx", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			mem := idempotency.NewMemoryStore()
			stall := &idempotency.StoreError{Op: "extend", Key: "k", Err: errors.New("network unreachable")}
			const lease = 3 * time.Second
			store := &countingStore{Store: mem, failExtend: func(n int) error {
				if n <= 4 {
					return stall
				}
				return nil
			}}
			release := make(chan struct{})
			canceled := make(chan error, 1)
			done := make(chan error, 1)
			go func() {
				_, err := idempotency.Do(context.Background(), store, "k", func(ctx context.Context) ([]byte, error) {
					select {
					case <-ctx.Done():
						canceled <- context.Cause(ctx)
						if tc.honourCtx {
							return nil, ctx.Err()
						}
						<-release
					case <-release:
					}
					return []byte("stale"), nil
				}, idempotency.WithRenewedLease(lease), idempotency.WithClock(clk.Now), idempotency.WithSleep(clk.sleep),
					idempotency.WithStoreRetries(0, noWait))
				done <- err
			}()
			for range 4 { // four failed renewals, at 1 s to 4 s: the lease (3 s) lapses
				clk.awaitSleeper(t)
				clk.advance(lease / 3)
			}
			clk.awaitSleeper(t)
			// The lease has lapsed: B claims, as a retry would.
			holdClaim(t, mem, "k", "B", clk.Now(), idempotency.DefaultLease)
			clk.advance(lease / 3) // the fifth renewal is refused
			if cause := <-canceled; !errors.Is(cause, idempotency.ErrLeaseLost) {
				t.Fatalf("fn's context ended with %v, want ErrLeaseLost", cause)
			}
			close(release)
			if err := <-done; !errors.Is(err, idempotency.ErrLeaseLost) {
				t.Fatalf("Do = %v, want ErrLeaseLost", err)
			}
			if r := record(t, mem, "k"); r == nil || r.Owner != "B" || r.Status != idempotency.StatusInProgress {
				t.Fatalf("record after the stale owner finished: %+v, want B's claim intact", r)
			}
		})
	}
}

// A key in progress under a claim for another payload fails at once with
// ErrPayloadMismatch: waiting could only end in the same answer.
func TestWaitNotForAnotherPayload(t *testing.T) {
	t.Parallel()
	clk := newClock()
	store := idempotency.NewMemoryStore()
	now := clk.Now()
	if rec, err := store.Claim(context.Background(), idempotency.Claim{Key: "k", Owner: "other", Now: now, PayloadHash: idempotency.PayloadHash([]byte("p1")),
		LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
		t.Fatal(rec, err)
	}
	var slept time.Duration
	runs := 0
	_, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithPayload([]byte("p2")),
		idempotency.WithLease(time.Minute), idempotency.WithClock(clk.Now), autoSleep(clk, &slept, nil))
	if !errors.Is(err, idempotency.ErrPayloadMismatch) || runs != 0 || slept != 0 {
		t.Fatalf("Do = %v, %d runs, waited %v; want ErrPayloadMismatch at once", err, runs, slept)
	}
}
