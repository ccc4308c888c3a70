package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

// delayStore is a MemoryStore behind a fixed delay per call, as a store
// across a network: the critical path in round trips is wall time / rtt.
// It counts the calls, and fails the completes of failKey.
type delayStore struct {
	*idempotency.MemoryStore
	rtt                                  time.Duration
	claims, completes, extends, releases atomic.Int64
	gets, groups, grouped                atomic.Int64 // CompleteAll requests, and the completes in them
	laneClaims, laneSaves                atomic.Int64
	failKey                              string
	failLane                             bool // every lane write fails
}

func (s *delayStore) ClaimLane(ctx context.Context, c idempotency.LaneClaim) (*idempotency.LaneRecord, error) {
	s.laneClaims.Add(1)
	s.wait(ctx)
	return s.MemoryStore.ClaimLane(ctx, c)
}

func (s *delayStore) SaveLane(ctx context.Context, sv idempotency.LaneSave) error {
	s.laneSaves.Add(1)
	s.wait(ctx)
	if s.failLane {
		return &idempotency.StoreError{Op: "save lane", Key: sv.Lane, Err: errors.New("the table is gone")}
	}
	return s.MemoryStore.SaveLane(ctx, sv)
}

func (s *delayStore) wait(ctx context.Context) {
	if s.rtt > 0 {
		t := time.NewTimer(s.rtt)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

func (s *delayStore) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	s.claims.Add(1)
	s.wait(ctx)
	return s.MemoryStore.Claim(ctx, c)
}

func (s *delayStore) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	s.completes.Add(1)
	s.wait(ctx)
	if key == s.failKey {
		return &idempotency.StoreError{Op: "complete", Key: key, Err: errors.New("the table is gone")}
	}
	return s.MemoryStore.Complete(ctx, key, owner, result, expires)
}

func (s *delayStore) CompleteAll(ctx context.Context, cs []idempotency.Completion) error {
	s.groups.Add(1)
	s.grouped.Add(int64(len(cs)))
	s.wait(ctx)
	for _, c := range cs {
		if c.Key == s.failKey {
			return &idempotency.StoreError{Op: "complete", Key: c.Key, Err: errors.New("the table is gone")}
		}
	}
	return s.MemoryStore.CompleteAll(ctx, cs)
}

func (s *delayStore) Extend(ctx context.Context, key, owner string, until time.Time) error {
	s.extends.Add(1)
	s.wait(ctx)
	return s.MemoryStore.Extend(ctx, key, owner, until)
}

func (s *delayStore) Release(ctx context.Context, key, owner string) error {
	s.releases.Add(1)
	s.wait(ctx)
	return s.MemoryStore.Release(ctx, key, owner)
}

func (s *delayStore) Get(ctx context.Context, keys []string) (map[string]*idempotency.Record, error) {
	s.gets.Add(1)
	s.wait(ctx)
	return s.MemoryStore.Get(ctx, keys)
}

func (s *delayStore) calls() int64 {
	return s.writes() + s.gets.Load()
}

func (s *delayStore) writes() int64 {
	return s.claims.Load() + s.completes.Load() + s.extends.Load() + s.releases.Load() + s.groups.Load() + s.laneClaims.Load() + s.laneSaves.Load()
}

func (s *delayStore) reset() {
	for _, c := range []*atomic.Int64{&s.claims, &s.completes, &s.extends, &s.releases, &s.gets, &s.groups, &s.grouped, &s.laneClaims, &s.laneSaves} {
		c.Store(0)
	}
}

func kinesisIdemEvent(t testing.TB, n int) ([]byte, []string) {
	b := &sevents.KinesisBuilder{}
	for i := range n {
		b.Add("pk", payload(fmt.Sprint(i), "ok"))
	}
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, r := range ev.Records {
		ids[i] = r.EventID
	}
	return raw, ids
}

// A lane that stops at a failed record gives back the claims taken ahead
// for the records after it (those issued by then): each is free at once,
// not after a lease.
func TestIdempotencyClaimsAheadReleasedOnLaneFailure(t *testing.T) {
	raw, ids := kinesisIdemEvent(t, 6)
	store := &delayStore{MemoryStore: idempotency.NewMemoryStore()}
	var rep BatchReport
	var ran atomic.Int32
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		ran.Add(1)
		if r.Value.ID == "2" {
			return errors.New("boom")
		}
		return nil
	}, idemOpts(store, &rep, WithIdempotencyPerRecord())...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); len(got) != 1 || !strings.HasSuffix(ids[2], ":"+got[0]) || ran.Load() != 3 {
		t.Fatalf("reported %v after %d runs; want %s after 3", got, ran.Load(), ids[2])
	}
	recs, err := store.Get(context.Background(), prefixed(ids))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		rec := recs["orders-fn#"+id]
		switch {
		case i < 2 && (rec == nil || rec.Status != idempotency.StatusCompleted):
			t.Errorf("record %d: %+v; want completed", i, rec)
		case i >= 2 && rec != nil:
			t.Errorf("record %d: %+v; want no record (released)", i, rec)
		}
	}
	// The claims ahead are issued while the first records run, so how many
	// were taken before record 2 failed depends on timing: every claim
	// taken is either completed (records 0 and 1) or given back, record
	// 2's among them, and none is left to lapse.
	if c, r := store.claims.Load(), store.releases.Load(); c < 3 || c > 6 || r != c-2 {
		t.Fatalf("claims %d, releases %d; want 3 to 6 claims, each but the two completed released", c, r)
	}
}

// A complete sent while the batch went on that fails makes its record
// fail, as idempotency.Do fails it (the function ran; its result is not
// stored), so the answer does not report it done.
func TestIdempotencyAsyncCompleteFailureIsReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		fifo bool
	}{{"Standard", false}, {"FIFO", true}} {
		t.Run(tc.name, func(t *testing.T) {
			raw, ids := sqsEvent(t, tc.fifo, [2]string{"g", "ok"}, [2]string{"g", "ok"}, [2]string{"g", "ok"})
			store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), failKey: "orders-fn#" + ids[1]}
			var rep BatchReport
			h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil }, idemOpts(store, &rep, WithIdempotencyPerRecord())...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{ids[1]}
			if tc.fifo {
				want = []string{ids[1], ids[2]} // the group's later messages go back with it
			}
			if got := failures(t, out); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("reported %v; want %v", got, want)
			}
			for _, r := range rep.Records {
				if r.ID == ids[1] && (r.Err == nil || !strings.Contains(r.Err.Error(), "not stored")) {
					t.Fatalf("record %s: %v; want the complete's failure", r.ID, r.Err)
				}
			}
		})
	}
}

func prefixed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "orders-fn#" + id
	}
	return out
}

// On a shard the completes overlap the next records' functions (up to
// idempotency.DefaultOrderedDepth in flight): a complete that fails fails
// its record, and the shard is reported from it on, although later
// records ran meanwhile; their completes landed, so the retry runs the
// failed record again and finds those duplicates, each effect once
// except the failed record's (its result was never stored).
func TestIdempotencyOrderedCompleteFailureReportsFromIt(t *testing.T) {
	raw, ids := kinesisIdemEvent(t, 8)
	store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), rtt: 5 * time.Millisecond, failKey: "orders-fn#" + ids[1]}
	var rep BatchReport
	var mu sync.Mutex
	runs := map[string]int{}
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		mu.Lock()
		defer mu.Unlock()
		runs[r.Value.ID]++
		return nil
	}, idemOpts(store, &rep, WithIdempotencyPerRecord(), WithIdempotency(store, idempotency.WithRenewedLease(200*time.Millisecond)))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); len(got) != 1 || !strings.HasSuffix(ids[1], ":"+got[0]) {
		t.Fatalf("reported %v; want record 1 (%s), the checkpoint of the failed complete", got, ids[1])
	}
	ranAfter := 0
	for i := 2; i < 8; i++ {
		ranAfter += runs[fmt.Sprint(i)]
	}
	if runs["0"] != 1 || runs["1"] != 1 || ranAfter < 1 {
		t.Fatalf("runs %v; want records 0 and 1 once, and later records run while record 1's complete was in flight", runs)
	}
	for _, r := range rep.Records {
		if r.ID == ids[1] && (r.Err == nil || !strings.Contains(r.Err.Error(), "not stored")) {
			t.Fatalf("record 1: %v; want the complete's failure", r.Err)
		}
	}
	t.Logf("records after the failed one that ran before the lane stopped: %d of 6", ranAfter)

	// The store recovers; Lambda delivers the shard again (record 1's claim
	// is left in progress: the retry waits for its lease to lapse).
	store.failKey = ""
	before := map[string]int{}
	for k, v := range runs {
		before[k] = v
	}
	out, err = h.Invoke(context.Background(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("retry: %s %v; want nothing reported", out, err)
	}
	for i := range 8 {
		id := fmt.Sprint(i)
		want := 1
		if i == 1 {
			want = 2 // its effect ran, its result was not stored: it runs again
		}
		if runs[id] != want {
			t.Errorf("record %d ran %d times (%d before the retry); want %d", i, runs[id], before[id], want)
		}
	}
	if rep.Duplicates != 1+ranAfter {
		t.Errorf("retry: %d duplicates; want record 0 and the %d later records that ran", rep.Duplicates, ranAfter)
	}
}

// With WithOrderedDepth(0) each complete lands before the next record
// runs: when one fails, the next record fails with ErrLaneStopped without
// running, and dead letters count no attempt for it (nor for the record
// whose complete failed: its function succeeded).
func TestIdempotencyLaneStoppedIsNotAnAttempt(t *testing.T) {
	raw, ids := kinesisIdemEvent(t, 4)
	store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), rtt: time.Millisecond, failKey: "orders-fn#" + ids[1]}
	attempts := &attemptsCounter{AttemptsStore: dlq.NewMemory(0)}
	var rep BatchReport
	var ran atomic.Int32
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { ran.Add(1); return nil },
		dlOpts(&rep, &sink{}, []dlq.Option{dlq.WithMaxAttempts(1), dlq.WithAttempts(attempts)},
			WithIdempotencyPerRecord(), WithIdempotency(store, idempotency.WithOrderedDepth(0)))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); len(got) != 1 || !strings.HasSuffix(ids[1], ":"+got[0]) || ran.Load() != 2 {
		t.Fatalf("reported %v after %d runs; want record 1 (%s) after 2", got, ran.Load(), ids[1])
	}
	if r := rep.Records[2]; !errors.Is(r.Err, idempotency.ErrLaneStopped) {
		t.Fatalf("record 2: %v; want ErrLaneStopped", r.Err)
	}
	if attempts.fails != 0 || rep.Quarantined != 0 {
		t.Fatalf("%d attempts counted, %d quarantined; want none: no record's own attempt failed", attempts.fails, rep.Quarantined)
	}
}

// On a shard the completes that come while one is in flight go out in
// groups (idempotency.GroupCompleter), and the handler answers only once
// the last group has landed: every record is completed in the store when
// Invoke returns, with far fewer requests than records.
func TestIdempotencyOrderedGroupsLandBeforeTheAnswer(t *testing.T) {
	raw, ids := kinesisIdemEvent(t, 40)
	store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), rtt: 2 * time.Millisecond}
	var rep BatchReport
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return nil }, idemOpts(store, &rep, WithIdempotencyPerRecord())...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s, %v", out, err)
	}
	recs, err := store.MemoryStore.Get(context.Background(), prefixed(ids))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range prefixed(ids) {
		if r := recs[k]; r == nil || r.Status != idempotency.StatusCompleted {
			t.Fatalf("%s: %+v when Invoke returned; want completed", k, r)
		}
	}
	writes := store.completes.Load() + store.groups.Load()
	// A write carries on average at least 3 completes (with the default
	// depth of 8, up to 9 can wait for one write).
	if store.groups.Load() == 0 || store.completes.Load()+store.grouped.Load() != 40 || writes*3 > 40 {
		t.Fatalf("%d single completes and %d groups of %d completes; want all 40 completed in at most 13 requests, groups among them",
			store.completes.Load(), store.groups.Load(), store.grouped.Load())
	}
}
