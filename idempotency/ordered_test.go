package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// gatedStore is a MemoryStore whose completes wait, per key, for the test
// to let them land (a nil sent, or the channel closed) or fail (an error
// sent).
type gatedStore struct {
	*idempotency.MemoryStore
	gates map[string]chan error

	mu     sync.Mutex
	groups [][]string // the keys of each CompleteAll, as it was called
}

func newGatedStore(keys []string) *gatedStore {
	s := &gatedStore{MemoryStore: idempotency.NewMemoryStore(), gates: map[string]chan error{}}
	for _, k := range keys {
		s.gates[k] = make(chan error)
	}
	return s
}

func (s *gatedStore) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	select {
	case err := <-s.gates[key]:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.MemoryStore.Complete(ctx, key, owner, result, expires)
}

// CompleteAll waits for the gate of each key of the group, in order: the
// group is written once every gate let it, and not at all (nothing
// changes) when one sends an error.
func (s *gatedStore) CompleteAll(ctx context.Context, cs []idempotency.Completion) error {
	var keys []string
	for _, c := range cs {
		keys = append(keys, c.Key)
	}
	s.mu.Lock()
	s.groups = append(s.groups, keys)
	s.mu.Unlock()
	for _, c := range cs {
		select {
		case err := <-s.gates[c.Key]:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryStore.CompleteAll(ctx, cs)
}

func laneKeys(n int) ([]string, []idempotency.BatchKey) {
	keys := make([]string, n)
	ahead := make([]idempotency.BatchKey, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i+1)
		ahead[i] = idempotency.BatchKey{Key: keys[i]}
	}
	return keys, ahead
}

// waitFor polls cond for up to a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// claimed waits until the batch's claims ahead of keys are in the store,
// so each record finds its claim taken (a record that comes before its
// claim was sent claims for itself, with the package's Do).
func claimed(t *testing.T, store *gatedStore, keys []string) {
	t.Helper()
	waitFor(t, "the claims ahead", func() bool {
		recs, err := store.Get(context.Background(), keys)
		return err == nil && len(recs) == len(keys)
	})
}

// On an ordered lane a record's function starts only while at most the
// batch's depth of the lane's completes are in flight: with every complete
// held back, exactly depth+1 functions run (the last one's own complete
// is then in flight too) and the next waits; once the completes land the
// lane goes on, and Finish returns when all are stored.
func TestBatchOrderedDepth(t *testing.T) {
	for _, depth := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			keys, ahead := laneKeys(6)
			store := newGatedStore(keys)
			ctx := context.Background()
			b, err := idempotency.ClaimBatch(ctx, store, ahead, idempotency.WithOrderedDepth(depth))
			if err != nil {
				t.Fatal(err)
			}
			b.Ordered()
			claimed(t, store, keys)
			var ran atomic.Int32
			done := make(chan error, 1)
			go func() {
				for _, k := range keys {
					if _, err := b.Do(ctx, k, func(context.Context) ([]byte, error) { ran.Add(1); return nil, nil }); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			waitFor(t, "the first functions", func() bool { return ran.Load() == int32(depth+1) })
			time.Sleep(50 * time.Millisecond)
			if got := ran.Load(); got != int32(depth+1) {
				t.Fatalf("%d functions ran with every complete held back; want depth+1 = %d", got, depth+1)
			}
			for _, k := range keys {
				close(store.gates[k])
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if failed := b.Finish(nil); len(failed) != 0 {
				t.Fatalf("Finish: %v", failed)
			}
			recs, err := store.Get(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if r := recs[k]; r == nil || r.Status != idempotency.StatusCompleted {
					t.Fatalf("%s: %+v after Finish; want completed", k, r)
				}
			}
		})
	}
}

// A complete that fails stops its lane: the record waiting for a slot
// fails with ErrLaneStopped without running, Finish reports the failed
// key (its record and the lane's later ones are then reported), and the
// records that ran after it completed, so a retry of the lane runs the
// failed record and the stopped one again and finds those duplicates.
func TestBatchOrderedCompleteFailureStopsLane(t *testing.T) {
	keys, ahead := laneKeys(4)
	store := newGatedStore(keys)
	ctx := context.Background()
	opts := []idempotency.Option{idempotency.WithOrderedDepth(2), idempotency.WithStoreRetries(0, noWait), idempotency.WithRenewedLease(200 * time.Millisecond)}
	b, err := idempotency.ClaimBatch(ctx, store, ahead, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	claimed(t, store, keys)
	runs := map[string]int{}
	var mu sync.Mutex
	fn := func(k string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			runs[k]++
			return nil, nil
		}
	}
	for _, k := range keys[:3] { // k1, k2, k3 run; their completes are held back
		if _, err := b.Do(ctx, k, fn(k)); err != nil {
			t.Fatal(err)
		}
	}
	fourth := make(chan error, 1)
	go func() { // three completes in flight, depth 2: k4 waits for a slot
		_, err := b.Do(ctx, keys[3], fn(keys[3]))
		fourth <- err
	}()
	time.Sleep(20 * time.Millisecond)
	store.gates["k1"] <- errors.New("the table is gone")
	err = <-fourth
	if !errors.Is(err, idempotency.ErrLaneStopped) {
		t.Fatalf("k4: %v; want ErrLaneStopped", err)
	}
	close(store.gates["k2"])
	close(store.gates["k3"])
	failed := b.Finish(nil)
	if len(failed) != 1 || failed["k1"] == nil {
		t.Fatalf("Finish: %v; want k1 only", failed)
	}
	if fmt.Sprint(runs) != "map[k1:1 k2:1 k3:1]" {
		t.Fatalf("runs %v; want k1, k2, k3 once and k4 not", runs)
	}

	// The retry: the lane from k1 on again.
	close(store.gates["k1"])
	close(store.gates["k4"])
	b, err = idempotency.ClaimBatch(ctx, store, ahead, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	claimed(t, store, keys)
	for _, k := range keys {
		if _, err := b.Do(ctx, k, fn(k)); err != nil {
			t.Fatalf("retry %s: %v", k, err)
		}
	}
	if failed := b.Finish(nil); len(failed) != 0 {
		t.Fatalf("retry Finish: %v", failed)
	}
	if fmt.Sprint(runs) != "map[k1:2 k2:1 k3:1 k4:1]" {
		t.Fatalf("runs %v after the retry; want k1 twice (its complete failed), k2 and k3 duplicates, k4 once", runs)
	}
}

// Separate lanes of one batch have separate depths: one lane's completes
// held back do not hold the other lane's records.
func TestBatchOrderedLanesIndependent(t *testing.T) {
	keys, ahead := laneKeys(4)
	store := newGatedStore(keys)
	ctx := context.Background()
	b, err := idempotency.ClaimBatch(ctx, store, ahead, idempotency.WithOrderedDepth(0))
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	claimed(t, store, keys)
	nop := func(context.Context) ([]byte, error) { return nil, nil }
	if _, err := b.DoLane(ctx, "a", "k1", nop); err != nil { // its complete is held back
		t.Fatal(err)
	}
	close(store.gates["k2"])
	close(store.gates["k3"])
	for _, k := range []string{"k2", "k3"} { // lane b is not held by lane a
		if _, err := b.DoLane(ctx, "b", k, nop); err != nil {
			t.Fatal(err)
		}
	}
	waiting := make(chan error, 1)
	go func() { _, err := b.DoLane(ctx, "a", "k4", nop); waiting <- err }()
	select {
	case err := <-waiting:
		t.Fatalf("k4 ran while k1's complete was in flight at depth 0: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
	close(store.gates["k1"])
	close(store.gates["k4"])
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	if failed := b.Finish(nil); len(failed) != 0 {
		t.Fatalf("Finish: %v", failed)
	}
}

func TestWithOrderedDepthValidated(t *testing.T) {
	for _, d := range []int{-1, idempotency.DefaultInFlight + 1} {
		if _, err := idempotency.ClaimBatch(context.Background(), idempotency.NewMemoryStore(), nil, idempotency.WithOrderedDepth(d)); err == nil {
			t.Fatalf("WithOrderedDepth(%d): no error", d)
		}
	}
}

// A lane's completes are written in the lane's order, each after the one
// before it returned: with k1's complete held back and k2's, k3's free,
// neither k2 nor k3 is completed in the store, so what a kill leaves
// behind is always a prefix of the lane completed and its last records to
// run again, in order (never k2 completed and k1 not, which would make
// k1's repeat come after k2's effect).
func TestBatchOrderedCompletesInLaneOrder(t *testing.T) {
	keys, ahead := laneKeys(3)
	store := newGatedStore(keys)
	ctx := context.Background()
	b, err := idempotency.ClaimBatch(ctx, store, ahead, idempotency.WithOrderedDepth(3))
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	claimed(t, store, keys)
	close(store.gates["k2"])
	close(store.gates["k3"])
	for _, k := range keys {
		if _, err := b.Do(ctx, k, func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	status := func() string {
		recs, err := store.Get(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%s:%s", k, recs[k].Status))
		}
		return fmt.Sprint(out)
	}
	if got, want := status(), "[k1:INPROGRESS k2:INPROGRESS k3:INPROGRESS]"; got != want {
		t.Fatalf("with k1's complete held back: %s; want %s (a later complete landed before an earlier one)", got, want)
	}
	close(store.gates["k1"])
	if failed := b.Finish(nil); len(failed) != 0 {
		t.Fatalf("Finish: %v", failed)
	}
	if got, want := status(), "[k1:COMPLETED k2:COMPLETED k3:COMPLETED]"; got != want {
		t.Fatalf("after Finish: %s; want %s", got, want)
	}
}

func (s *gatedStore) groupsSeen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.groups)
}

// statusOf is each key's status in the store, in order.
func statusOf(t *testing.T, store *gatedStore, keys []string) string {
	t.Helper()
	recs, err := store.Get(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if recs[k] == nil {
			out = append(out, k+":-")
			continue
		}
		out = append(out, fmt.Sprintf("%s:%s", k, recs[k].Status))
	}
	return fmt.Sprint(out)
}

// The completes that come while one write of a lane is in flight are
// written together, in one CompleteAll, once it returned; and while a
// group is held back nothing after it is completed: the completions
// stored stay a prefix of the lane.
func TestBatchOrderedGroupsArePrefixes(t *testing.T) {
	keys, ahead := laneKeys(5)
	store := newGatedStore(keys)
	ctx := context.Background()
	b, err := idempotency.ClaimBatch(ctx, store, ahead, idempotency.WithOrderedDepth(8))
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	claimed(t, store, keys)
	nop := func(context.Context) ([]byte, error) { return nil, nil }
	run := func(ks ...string) {
		t.Helper()
		for _, k := range ks {
			if _, err := b.Do(ctx, k, nop); err != nil {
				t.Fatal(err)
			}
		}
	}
	run("k1", "k2", "k3") // k1's complete is written alone and held back; k2's and k3's wait for it
	time.Sleep(20 * time.Millisecond)
	if got := store.groupsSeen(); got != "[]" {
		t.Fatalf("groups %s while k1's complete is in flight; want none", got)
	}
	close(store.gates["k1"])
	waitFor(t, "the group of k2 and k3", func() bool { return store.groupsSeen() == "[[k2 k3]]" })
	run("k4", "k5") // the group of k2 and k3 is held back: k4 and k5 wait for it
	time.Sleep(20 * time.Millisecond)
	if got, want := statusOf(t, store, keys), "[k1:COMPLETED k2:INPROGRESS k3:INPROGRESS k4:INPROGRESS k5:INPROGRESS]"; got != want {
		t.Fatalf("with the group of k2 and k3 held back: %s; want %s", got, want)
	}
	close(store.gates["k2"])
	close(store.gates["k3"])
	close(store.gates["k4"])
	close(store.gates["k5"])
	if failed := b.Finish(nil); len(failed) != 0 {
		t.Fatalf("Finish: %v", failed)
	}
	if got, want := store.groupsSeen(), "[[k2 k3] [k4 k5]]"; got != want {
		t.Fatalf("groups %s; want %s", got, want)
	}
	if got, want := statusOf(t, store, keys), "[k1:COMPLETED k2:COMPLETED k3:COMPLETED k4:COMPLETED k5:COMPLETED]"; got != want {
		t.Fatalf("after Finish: %s; want %s", got, want)
	}
}

// A group whose one key was lost (its lease lapsed and another owner took
// it) fails as a whole (CompleteAll is all-or-nothing: storetest holds
// every store to it); the batch then writes the group one complete after
// another, so that, as when each complete was written alone, only the
// lost key's record fails (ErrLeaseLost, reported by Finish), the records
// around it are completed, and the lane's next record fails with
// ErrLaneStopped without running.
func TestBatchOrderedGroupFailureFailsOnlyItsKey(t *testing.T) {
	keys, ahead := laneKeys(5)
	store := newGatedStore(keys)
	ctx := context.Background()
	b, err := idempotency.ClaimBatch(ctx, store, ahead, idempotency.WithOrderedDepth(8), idempotency.WithStoreRetries(0, noWait))
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	claimed(t, store, keys)
	var ran []string
	fn := func(k string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { ran = append(ran, k); return nil, nil }
	}
	for _, k := range keys[:4] { // k1 is written alone, held back; k2, k3, k4 wait for it
		if _, err := b.Do(ctx, k, fn(k)); err != nil {
			t.Fatal(err)
		}
	}
	// k3's claim is lost: another owner holds it now.
	recs, err := store.Get(ctx, []string{"k3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Release(ctx, "k3", recs["k3"].Owner); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if rec, err := store.Claim(ctx, idempotency.Claim{Key: "k3", Owner: "other", Now: now, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
		t.Fatalf("the other owner's claim: %v, %v", rec, err)
	}
	for _, k := range keys {
		close(store.gates[k])
	}
	// Once the group returned, the lane is stopped: a probe with a
	// canceled context finds it so at the gate (before that, it gets
	// through the gate and fails to claim, running nothing).
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	waitFor(t, "the group's failure", func() bool {
		_, err := b.Do(canceled, "probe", func(context.Context) ([]byte, error) { t.Error("the probe ran"); return nil, nil })
		return errors.Is(err, idempotency.ErrLaneStopped)
	})
	if got := store.groupsSeen(); got != "[[k2 k3 k4]]" {
		t.Fatalf("groups %s; want [[k2 k3 k4]]", got)
	}
	_, err = b.Do(ctx, "k5", fn("k5"))
	if !errors.Is(err, idempotency.ErrLaneStopped) {
		t.Fatalf("k5 after the failed group: %v; want ErrLaneStopped", err)
	}
	failed := b.Finish(nil)
	if len(failed) != 1 || !errors.Is(failed["k3"], idempotency.ErrLeaseLost) || !strings.Contains(failed["k3"].Error(), `"k3"`) {
		t.Fatalf("Finish: %v; want k3 only, ErrLeaseLost naming it", failed)
	}
	if fmt.Sprint(ran) != "[k1 k2 k3 k4]" {
		t.Fatalf("ran %v; want k1 to k4, not k5", ran)
	}
	if got, want := statusOf(t, store, keys), "[k1:COMPLETED k2:COMPLETED k3:INPROGRESS k4:COMPLETED k5:-]"; got != want {
		t.Fatalf("after the failed group (k5's claim given back by Finish): %s; want %s", got, want)
	}
	recs, err = store.Get(ctx, []string{"k3"})
	if err != nil || recs["k3"].Owner != "other" {
		t.Fatalf("k3: %+v, %v; want the other owner's claim", recs["k3"], err)
	}
}
