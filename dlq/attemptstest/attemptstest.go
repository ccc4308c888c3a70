// Package attemptstest is the conformance suite every dlq.AttemptsStore
// must pass.
package attemptstest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
)

// Run tests the store newStore returns (a fresh store or a fresh table per
// call; keys are unique per subtest either way).
func Run(t *testing.T, newStore func(t *testing.T) dlq.AttemptsStore) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	key := func(t *testing.T) string {
		return fmt.Sprintf("fn#arn:aws:kinesis:us-east-1:1:stream/s#%s-%d", t.Name(), now.UnixNano())
	}
	check := func(t *testing.T, what string, got dlq.Attempts, err error, want dlq.Attempts) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.Count != want.Count || got.Isolated != want.Isolated || !got.FirstFailure.Equal(want.FirstFailure) ||
			!got.LastFailure.Equal(want.LastFailure) || got.LastError != want.LastError || got.LastClass != want.LastClass {
			t.Fatalf("%s = %+v, want %+v", what, got, want)
		}
	}

	t.Run("ForgetStartsOver", func(t *testing.T) {
		s, k := newStore(t), key(t)
		f, ok := s.(dlq.Forgetter)
		if !ok {
			t.Fatalf("%T does not implement dlq.Forgetter, which sluice redrive needs to replay a record quarantined for crashing", s)
		}
		for range 3 {
			if _, err := s.Begin(ctx, k, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Forget(ctx, k); err != nil {
			t.Fatalf("Forget: %v", err)
		}
		a, err := s.Begin(ctx, k, now)
		check(t, "Begin after Forget", a, err, dlq.Attempts{Count: 1, Isolated: 1})
		if err := f.Forget(ctx, k+"-never-seen"); err != nil {
			t.Fatalf("Forget of an unknown key: %v", err)
		}
	})

	t.Run("BeginCounts", func(t *testing.T) {
		s, k := newStore(t), key(t)
		a, err := s.Begin(ctx, k, now)
		check(t, "Begin 1", a, err, dlq.Attempts{Count: 1, Isolated: 1})
		a, err = s.Begin(ctx, k, now.Add(time.Second))
		check(t, "Begin 2", a, err, dlq.Attempts{Count: 2, Isolated: 2})
		a, err = s.Begin(ctx, k+"-other", now)
		check(t, "Begin of another key", a, err, dlq.Attempts{Count: 1, Isolated: 1})
	})

	t.Run("FailCountsAndResetsIsolated", func(t *testing.T) {
		s, k := newStore(t), key(t)
		t1, t2 := now.Add(time.Second), now.Add(2*time.Second)
		a, err := s.Fail(ctx, k, false, dlq.Failure{Time: now, Error: "boom", Class: "plain"})
		check(t, "Fail uncounted", a, err, dlq.Attempts{Count: 1, FirstFailure: now, LastFailure: now, LastError: "boom", LastClass: "plain"})
		a, err = s.Begin(ctx, k, t1)
		check(t, "Begin", a, err, dlq.Attempts{Count: 2, Isolated: 1, FirstFailure: now, LastFailure: now, LastError: "boom", LastClass: "plain"})
		a, err = s.Fail(ctx, k, true, dlq.Failure{Time: t2, Error: "again", Class: "transient"})
		check(t, "Fail counted", a, err, dlq.Attempts{Count: 2, FirstFailure: now, LastFailure: t2, LastError: "again", LastClass: "transient"})
	})

	t.Run("Concurrent", func(t *testing.T) {
		s, k := newStore(t), key(t)
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			wg.Go(func() {
				if _, err := s.Begin(ctx, k, now); err != nil {
					errs <- err
				}
				if _, err := s.Fail(ctx, k, false, dlq.Failure{Time: now.Add(time.Duration(i) * time.Millisecond), Error: "x", Class: "plain"}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		a, err := s.Begin(ctx, k, now)
		if err != nil || a.Count != 2*n+1 || a.Isolated != 1 {
			t.Fatalf("after %d Begin and %d Fail and one Begin: %+v, %v; want Count %d, Isolated 1", n, n, a, err, 2*n+1)
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Begin(cctx, key(t), now); err == nil {
			t.Fatal("Begin with a canceled context succeeded")
		}
	})
}
