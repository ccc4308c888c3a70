package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// laneStore is a MemoryStore that counts lane claims, lane writes and
// reads, and can hold the lane writes of one owner back (gate) until the
// test lets them go.
type laneStore struct {
	*idempotency.MemoryStore
	claims, saves, gets atomic.Int32
	refused             atomic.Int32

	mu      sync.Mutex
	gate    chan struct{} // when set, writes wait for it to close
	saved   []idempotency.LaneSave
	waiting atomic.Int32
	delay   time.Duration // each lane claim and write takes this long
}

func newLaneStore() *laneStore { return &laneStore{MemoryStore: idempotency.NewMemoryStore()} }

func (s *laneStore) ClaimLane(ctx context.Context, c idempotency.LaneClaim) (*idempotency.LaneRecord, error) {
	s.claims.Add(1)
	time.Sleep(s.delay)
	rec, err := s.MemoryStore.ClaimLane(ctx, c)
	if err == nil && rec.Owner != c.Owner {
		s.refused.Add(1)
	}
	return rec, err
}

func (s *laneStore) SaveLane(ctx context.Context, sv idempotency.LaneSave) error {
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		s.waiting.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
			s.waiting.Add(-1)
			return &idempotency.StoreError{Op: "save lane", Key: sv.Lane, Err: ctx.Err()}
		}
		s.waiting.Add(-1)
	}
	s.saves.Add(1)
	time.Sleep(s.delay)
	err := s.MemoryStore.SaveLane(ctx, sv)
	if err == nil {
		s.mu.Lock()
		s.saved = append(s.saved, sv)
		s.mu.Unlock()
	}
	return err
}

func (s *laneStore) Get(ctx context.Context, keys []string) (map[string]*idempotency.Record, error) {
	s.gets.Add(1)
	return s.MemoryStore.Get(ctx, keys)
}

func (s *laneStore) hold() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *laneStore) let() {
	s.mu.Lock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	s.mu.Unlock()
}

// pos is the position of record n of a test lane.
func pos(n int) string {
	p, _ := idempotency.Position(fmt.Sprint(n))
	return p
}

// laneBatch is records from..to of lane, each of order "" (one at a
// time, in order) unless orders gives its order.
func laneBatch(lane string, from, to int, orders ...string) []idempotency.BatchKey {
	var out []idempotency.BatchKey
	for n := from; n <= to; n++ {
		a := idempotency.BatchKey{Key: fmt.Sprintf("%s#%d", lane, n), Lane: lane, Pos: pos(n)}
		if i := n - from; i < len(orders) {
			a.Order = orders[i]
		}
		out = append(out, a)
	}
	return out
}

// runLane runs the records of keys in order through a new batch, with fn
// deciding each one's fate (nil: success), and finishes it with handled;
// it returns which records ran, each record's error, and Finish's. As the
// engine's ordered policies do, a record's failure stops the later
// records of its order, unless handled says the batch answered it as
// handled (it was quarantined).
func runLane(t *testing.T, store idempotency.Store, keys []idempotency.BatchKey, fn func(key string) error, handled func(string) bool, opts ...idempotency.Option) (ran []string, errs map[string]error, failed map[string]error) {
	t.Helper()
	ctx := context.Background()
	b, err := idempotency.ClaimBatch(ctx, store, keys, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	errs = map[string]error{}
	stoppedAt := map[string]bool{}
	for _, a := range keys {
		if stoppedAt[a.Order] {
			continue
		}
		_, err := b.DoLane(ctx, a.Order, a.Key, func(context.Context) ([]byte, error) {
			ran = append(ran, a.Key)
			if fn != nil {
				return nil, fn(a.Key)
			}
			return nil, nil
		})
		if err != nil {
			errs[a.Key] = err
			if handled == nil || !handled(a.Key) {
				stoppedAt[a.Order] = true
			}
		}
	}
	return ran, errs, b.Finish(handled)
}

func keysOf(keys []idempotency.BatchKey) []string {
	out := make([]string, len(keys))
	for i, a := range keys {
		out[i] = a.Key
	}
	return out
}

// TestLaneCosts: a lane of 40 new records costs one lane claim and a
// write per 8 records (the default depth), the last releasing the lease,
// and no claim per record; the same records again cost one refused
// claim, and nothing runs.
func TestLaneCosts(t *testing.T) {
	store := newLaneStore()
	// A store 20 ms away: the records (microseconds each) complete long
	// before their oldest would have waited a round trip, however loaded
	// the machine.
	store.delay = 20 * time.Millisecond
	keys := laneBatch("lane-a", 1, 40)
	ran, errs, failed := runLane(t, store, keys, nil, nil)
	if len(ran) != 40 || len(errs) != 0 || len(failed) != 0 {
		t.Fatalf("ran %d, errors %v, failed %v", len(ran), errs, failed)
	}
	// The first batch of a lane also reads its records' own keys, once.
	if c, s, g := store.claims.Load(), store.saves.Load(), store.gets.Load(); c != 1 || s != 5 || g != 1 {
		t.Fatalf("%d lane claims, %d lane writes, %d reads; want 1, 5 (8 records each) and 1", c, s, g)
	}
	if last := store.saved[len(store.saved)-1]; !last.LeaseUntil.IsZero() || last.Position != pos(40) {
		t.Fatalf("the last write %+v, want position 40 and the lease released", last)
	}
	store.claims.Store(0)
	store.saves.Store(0)
	store.gets.Store(0)
	ran, errs, failed = runLane(t, store, keys, nil, nil)
	if len(ran) != 0 || len(errs) != 0 || len(failed) != 0 || store.claims.Load() != 1 || store.refused.Load() != 1 || store.saves.Load() != 0 || store.gets.Load() != 0 {
		t.Fatalf("replay: ran %v, errors %v, %d claims (%d refused), %d writes, %d reads; want nothing run, one refused claim",
			ran, errs, store.claims.Load(), store.refused.Load(), store.saves.Load(), store.gets.Load())
	}
	// The next records of the lane: no read of their own keys any more.
	store.claims.Store(0)
	ran, _, _ = runLane(t, store, laneBatch("lane-a", 41, 44), nil, nil)
	if len(ran) != 4 || store.gets.Load() != 0 || store.claims.Load() != 1 || store.saves.Load() != 1 {
		t.Fatalf("next batch: ran %d, %d reads, %d claims, %d writes; want 4, 0, 1, 1", len(ran), store.gets.Load(), store.claims.Load(), store.saves.Load())
	}
}

// TestLaneDepthBoundsTheWindow: while the lane's writes are held back,
// exactly depth+1 records run (the records a kill could leave to run
// again), then the lane waits; once the writes land it goes on.
func TestLaneDepthBoundsTheWindow(t *testing.T) {
	for _, depth := range []int{0, 1, 8} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			store := newLaneStore()
			keys := laneBatch("lane-d", 1, 20)
			ctx := context.Background()
			b, err := idempotency.ClaimBatch(ctx, store, keys, idempotency.WithOrderedDepth(depth))
			if err != nil {
				t.Fatal(err)
			}
			b.Ordered()
			store.hold()
			var ran atomic.Int32
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, a := range keys {
					if _, err := b.DoLane(ctx, "", a.Key, func(context.Context) ([]byte, error) { ran.Add(1); return nil, nil }); err != nil {
						t.Error(err)
					}
				}
			}()
			waitFor(t, "a write held back", func() bool { return store.waiting.Load() == 1 })
			time.Sleep(20 * time.Millisecond) // give the lane time to run past the bound, if it would
			if got := ran.Load(); got != int32(depth+1) {
				t.Fatalf("%d records ran while the checkpoint waited; want depth+1 = %d", got, depth+1)
			}
			store.let()
			<-done
			if failed := b.Finish(nil); len(failed) != 0 || ran.Load() != 20 {
				t.Fatalf("failed %v after %d runs", failed, ran.Load())
			}
		})
	}
}

// TestLaneQuarantineAndRedrive: a record that failed but that the batch
// answered as handled (quarantined) is passed, a hole in the checkpoint:
// its redrive runs it once, and a second redrive finds it done.
func TestLaneQuarantineAndRedrive(t *testing.T) {
	store := newLaneStore()
	keys := laneBatch("lane-q", 1, 5)
	poison := keys[2].Key
	fail := func(k string) error {
		if k == poison {
			return errors.New("poison")
		}
		return nil
	}
	ran, errs, failed := runLane(t, store, keys, fail, func(string) bool { return true })
	if len(ran) != 5 || len(errs) != 1 || errs[poison] == nil || len(failed) != 0 {
		t.Fatalf("ran %v, errors %v, failed %v", ran, errs, failed)
	}
	// The whole batch again (a duplicate delivery): only the hole runs.
	ran, _, _ = runLane(t, store, keys, fail, func(string) bool { return true })
	if !slices.Equal(ran, []string{poison}) {
		t.Fatalf("the batch again ran %v, want only the quarantined %s", ran, poison)
	}
	// Its redrive, alone: it runs and completes.
	ran, errs, failed = runLane(t, store, keys[2:3], nil, nil)
	if !slices.Equal(ran, []string{poison}) || len(errs) != 0 || len(failed) != 0 {
		t.Fatalf("the redrive ran %v (%v, %v), want the quarantined record", ran, errs, failed)
	}
	ran, _, _ = runLane(t, store, keys[2:3], nil, nil)
	if len(ran) != 0 {
		t.Fatalf("a second redrive ran %v, want nothing: it completed", ran)
	}
}

// TestLaneSkippedBatch: the lane's record 3 fails and is reported; Lambda
// gives up on it (its retries ran out, the batch went to the on-failure
// destination) and delivers records from 6 on. Records 3 to 5 are a hole:
// a redrive of them runs them; records before 3 stay duplicates.
func TestLaneSkippedBatch(t *testing.T) {
	store := newLaneStore()
	keys := laneBatch("lane-s", 1, 5)
	ran, _, _ := runLane(t, store, keys, func(k string) error {
		if k == keys[2].Key {
			return errors.New("fails")
		}
		return nil
	}, func(string) bool { return false })
	if len(ran) != 3 {
		t.Fatalf("ran %v, want records 1 to 3 (the lane stops at 3)", ran)
	}
	ran, _, failed := runLane(t, store, laneBatch("lane-s", 6, 8), nil, nil)
	if len(ran) != 3 || len(failed) != 0 {
		t.Fatalf("the batch after the skip ran %v (%v)", ran, failed)
	}
	// The redrive of the skipped batch (sluice fetch-failed, then
	// redrive): 3, 4 and 5 run; 1 and 2 are duplicates.
	ran, _, _ = runLane(t, store, laneBatch("lane-s", 1, 5), nil, nil)
	if want := keysOf(laneBatch("lane-s", 3, 5)); !slices.Equal(ran, want) {
		t.Fatalf("the redrive ran %v, want %v", ran, want)
	}
	ran, _, _ = runLane(t, store, laneBatch("lane-s", 1, 8), nil, nil)
	if len(ran) != 0 {
		t.Fatalf("everything again ran %v, want nothing", ran)
	}
}

// TestLaneExtras: records of another order that completed after the
// lane's failed record are stored above the checkpoint, so the retry
// (which delivers them again with the failed one) skips them.
func TestLaneExtras(t *testing.T) {
	store := newLaneStore()
	keys := laneBatch("lane-x", 1, 4, "a", "a", "b", "b")
	ran, _, _ := runLane(t, store, keys, func(k string) error {
		if k == keys[1].Key {
			return errors.New("a2 fails")
		}
		return nil
	}, func(string) bool { return false })
	if want := []string{keys[0].Key, keys[1].Key, keys[2].Key, keys[3].Key}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v (order b goes on past a's failure)", ran, want)
	}
	ran, _, failed := runLane(t, store, keys[1:], nil, nil)
	if !slices.Equal(ran, []string{keys[1].Key}) || len(failed) != 0 {
		t.Fatalf("the retry from the failed record ran %v (%v); want only it", ran, failed)
	}
}

// TestLaneHeldElsewhere: a lane whose lease another invocation holds
// (one that timed out and is not dead yet) makes the batch wait for it;
// with no wait, its records fail with ErrInProgress, and none is run.
func TestLaneHeldElsewhere(t *testing.T) {
	store := newLaneStore()
	now := time.Now()
	if rec, err := store.ClaimLane(context.Background(), idempotency.LaneClaim{Lane: "lane-h", Owner: "other", Now: now,
		LeaseUntil: now.Add(150 * time.Millisecond), Expires: now.Add(time.Hour)}); err != nil || rec.Owner != "other" {
		t.Fatal(rec, err)
	}
	keys := laneBatch("lane-h", 1, 3)
	ran, errs, _ := runLane(t, store, keys, nil, nil, idempotency.WithWait(0))
	if len(ran) != 0 || len(errs) != 1 || !errors.Is(errs[keys[0].Key], idempotency.ErrInProgress) {
		t.Fatalf("ran %v, errors %v; want none run, the first in progress (the lane stops there)", ran, errs)
	}
	// With the default wait, the other's lease lapses and the batch runs,
	// not before.
	var first time.Time
	ran, errs, _ = runLane(t, store, keys, func(string) error {
		if first.IsZero() {
			first = time.Now()
		}
		return nil
	}, nil)
	if len(ran) != 3 || len(errs) != 0 || first.Before(now.Add(150*time.Millisecond)) {
		t.Fatalf("ran %v, errors %v, the first at %v (the lease ended at %v); want all run once the lease lapsed",
			ran, errs, first.Sub(now), 150*time.Millisecond)
	}
}

// TestLaneFencing: two invocations on one lane. The first holds the
// lease and stalls (its writes do not land, so its lease is not
// renewed); the lease lapses and the second takes the lane and runs.
// When the first's write finally goes, it is refused: its records whose
// completion it had not stored fail, and the second's checkpoint stands.
func TestLaneFencing(t *testing.T) {
	store := newLaneStore()
	keys := laneBatch("lane-f", 1, 6)
	ctx := context.Background()
	old, err := idempotency.ClaimBatch(ctx, store, keys, idempotency.WithRenewedLease(60*time.Millisecond), idempotency.WithOrderedDepth(2))
	if err != nil {
		t.Fatal(err)
	}
	old.Ordered()
	store.hold()
	oldRan := 0
	var oldErrs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, a := range keys {
			if _, err := old.DoLane(ctx, "", a.Key, func(context.Context) ([]byte, error) { oldRan++; return nil, nil }); err != nil {
				oldErrs = append(oldErrs, err)
			}
		}
	}()
	waitFor(t, "the old invocation to stall on its write", func() bool { return store.waiting.Load() >= 1 })
	time.Sleep(100 * time.Millisecond) // its lease (60 ms) lapses: its renewals wait behind the held write
	// The new invocation must not wait behind the held writes.
	store.mu.Lock()
	held := store.gate
	store.gate = nil
	store.mu.Unlock()
	ran, errs, failed := runLane(t, store, keys, nil, nil)
	if len(ran) != 6 || len(errs) != 0 || len(failed) != 0 {
		t.Fatalf("the new invocation ran %v, errors %v, failed %v; want every record (the old one stored none)", ran, errs, failed)
	}
	close(held) // the old invocation's write goes now, and is refused
	<-done
	oldFailed := old.Finish(nil)
	if oldRan != 3 || len(oldFailed) != 3 {
		t.Fatalf("the old invocation ran %d and has %d records failed (%v); want 3 run (depth 2 and one more), all 3 failed",
			oldRan, len(oldFailed), oldFailed)
	}
	for k, err := range oldFailed {
		if !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("%s: %v, want ErrLeaseLost", k, err)
		}
	}
	for _, err := range oldErrs {
		if !errors.Is(err, idempotency.ErrLaneStopped) {
			t.Errorf("a later record of the old invocation: %v, want ErrLaneStopped", err)
		}
	}
	// The lane is the new invocation's: everything is a duplicate.
	if ran, _, _ := runLane(t, store, keys, nil, nil); len(ran) != 0 {
		t.Fatalf("after both, %v ran again", ran)
	}
}

// TestLaneOwnKeys: a lane's first batch reads its records' own keys: one
// completed by a version that claimed per record is a duplicate, one
// claimed and live elsewhere is in progress there.
func TestLaneOwnKeys(t *testing.T) {
	store := newLaneStore()
	keys := laneBatch("lane-o", 1, 3)
	now := time.Now()
	for i, owner := range []string{"done", "live"} {
		k := keys[i].Key
		if rec, err := store.Claim(context.Background(), idempotency.Claim{Key: k, Owner: owner, Now: now, LeaseUntil: now.Add(time.Hour), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
			t.Fatal(rec, err)
		}
	}
	if err := store.Complete(context.Background(), keys[0].Key, "done", nil, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ran, errs, _ := runLane(t, store, keys, nil, func(string) bool { return false }, idempotency.WithWait(0))
	if len(ran) != 0 || !errors.Is(errs[keys[1].Key], idempotency.ErrInProgress) {
		t.Fatalf("ran %v, errors %v; want record 1 a duplicate and record 2 in progress (the lane stops there)", ran, errs)
	}
	if err := store.Release(context.Background(), keys[1].Key, "live"); err != nil {
		t.Fatal(err)
	}
	ran, _, _ = runLane(t, store, keys[1:], nil, nil)
	if want := keysOf(keys[1:]); !slices.Equal(ran, want) {
		t.Fatalf("after the release ran %v, want %v", ran, want)
	}
	if g := store.gets.Load(); g != 2 {
		t.Fatalf("%d reads of own keys, want 2 (until one found none)", g)
	}
}

// TestLaneCrash: an invocation killed while its lane's write is in flight
// leaves the records since the last stored checkpoint to run again, in
// order: at most depth+1 of them.
func TestLaneCrash(t *testing.T) {
	store := newLaneStore()
	keys := laneBatch("lane-c", 1, 30)
	ctx, kill := context.WithCancel(context.Background())
	b, err := idempotency.ClaimBatch(ctx, store, keys, idempotency.WithRenewedLease(40*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	var ran []string
	var mu sync.Mutex
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i, a := range keys {
			if i == 12 {
				store.hold() // the write of records 9-16 never lands
			}
			_, err := b.DoLane(ctx, "", a.Key, func(context.Context) ([]byte, error) {
				mu.Lock()
				ran = append(ran, a.Key)
				mu.Unlock()
				return nil, nil
			})
			if err != nil {
				return
			}
		}
	}()
	waitFor(t, "the held write", func() bool { return store.waiting.Load() >= 1 })
	time.Sleep(20 * time.Millisecond)
	kill() // the process dies: its memory, its writes in flight and its lease's renewals with it
	<-stopped
	store.let()
	time.Sleep(60 * time.Millisecond) // its lease lapses
	// What the dead invocation stored: the position of its last write
	// that landed.
	store.mu.Lock()
	storedPos := ""
	for _, sv := range store.saved {
		if sv.Lane == "lane-c" && sv.State != nil {
			storedPos = max(storedPos, sv.Position)
		}
	}
	store.mu.Unlock()
	stored := 0
	for stored < len(keys) && keys[stored].Pos <= storedPos {
		stored++
	}
	again, _, failed := runLane(t, store, keys, nil, nil)
	mu.Lock()
	defer mu.Unlock()
	if want := keysOf(keys[stored:]); stored == 0 || !slices.Equal(again, want) || len(failed) != 0 {
		t.Fatalf("after the kill the retry ran %v (%v), want records %d on, in order (the dead invocation stored up to %q)", again, failed, stored+1, storedPos)
	}
	repeats := 0
	for _, k := range ran {
		if slices.Contains(again, k) {
			repeats++
		}
	}
	if repeats == 0 || repeats > idempotency.DefaultOrderedDepth+1 {
		t.Fatalf("%d records ran twice, want 1 to depth+1 = %d", repeats, idempotency.DefaultOrderedDepth+1)
	}
	if !strings.HasPrefix(fmt.Sprint(again), fmt.Sprintf("[lane-c#%d ", stored+1)) {
		t.Fatalf("the repeats do not start right after the stored checkpoint: %v", again)
	}
}

// TestLaneCoveredNamesTheCheckpoint: a record answered as a duplicate by
// its lane's checkpoint says so (Covered: the lane and its position), so
// the answer can name what shows it; one answered by its own key (what a
// version that claimed per record completed), or that ran, does not.
func TestLaneCoveredNamesTheCheckpoint(t *testing.T) {
	store := newLaneStore()
	ctx := context.Background()
	keys := laneBatch("lane-v", 1, 4)
	// Record 1 completed by its own key, before the lane had a checkpoint.
	now := time.Now()
	if rec, err := store.Claim(ctx, idempotency.Claim{Key: keys[0].Key, Owner: "v1", Now: now, LeaseUntil: now.Add(time.Hour), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
		t.Fatal(rec, err)
	}
	if err := store.Complete(ctx, keys[0].Key, "v1", nil, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run := func(keys []idempotency.BatchKey) (covered map[string]string, ran []string) {
		b, err := idempotency.ClaimBatch(ctx, store, keys)
		if err != nil {
			t.Fatal(err)
		}
		b.Ordered()
		covered = map[string]string{}
		for _, a := range keys {
			if _, err := b.DoLane(ctx, "", a.Key, func(context.Context) ([]byte, error) { ran = append(ran, a.Key); return nil, nil }); err != nil {
				t.Fatal(err)
			}
			if lane, pos, ok := b.Covered(a.Key); ok {
				covered[a.Key] = lane + " " + pos
			}
		}
		if failed := b.Finish(nil); len(failed) != 0 {
			t.Fatal(failed)
		}
		return covered, ran
	}
	covered, ran := run(keys[:3])
	if len(covered) != 0 || !slices.Equal(ran, keysOf(keys[1:3])) {
		t.Fatalf("first batch: covered %v, ran %v; want record 1 a duplicate by its own key (not covered), 2 and 3 run", covered, ran)
	}
	covered, ran = run(keys)
	// Record 1 too: the first batch's checkpoint moved over it.
	want := map[string]string{keys[0].Key: "lane-v " + pos(1), keys[1].Key: "lane-v " + pos(2), keys[2].Key: "lane-v " + pos(3)}
	if fmt.Sprint(covered) != fmt.Sprint(want) || !slices.Equal(ran, keysOf(keys[3:])) {
		t.Fatalf("again: covered %v, ran %v; want %v covered and record 4 run", covered, ran, want)
	}
	// What the lane stores says the same of each position.
	last := store.saved[len(store.saved)-1]
	rec := &idempotency.LaneRecord{Lane: last.Lane, Position: last.Position, State: last.State, Expires: last.Expires}
	for n, want := range map[int]bool{1: true, 2: true, 3: true, 4: true, 5: false} {
		if got, known, err := idempotency.LaneCovers(rec, pos(n), time.Now()); got != want || !known || err != nil {
			t.Errorf("LaneCovers(record %d) = %v, %v, %v; want %v", n, got, known, err, want)
		}
	}
}
