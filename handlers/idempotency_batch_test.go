package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

// getStore counts every request to a MemoryStore, batch reads included.
type getStore struct {
	*idempotency.MemoryStore
	claims, gets, getKeys atomic.Int32
}

func (s *getStore) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	s.claims.Add(1)
	return s.MemoryStore.Claim(ctx, c)
}

func (s *getStore) Get(ctx context.Context, keys []string) (map[string]*idempotency.Record, error) {
	s.gets.Add(1)
	s.getKeys.Add(int32(len(keys)))
	return s.MemoryStore.Get(ctx, keys)
}

func okMsgs(n int) [][2]string {
	m := make([][2]string, n)
	for i := range m {
		m[i] = [2]string{"", "ok"}
	}
	return m
}

// asRedelivered is the SQS event raw as its messages look on their
// receive-th delivery (ApproximateReceiveCount).
func asRedelivered(t *testing.T, raw []byte, receive int) []byte {
	t.Helper()
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	for i := range ev.Records {
		ev.Records[i].Attributes["ApproximateReceiveCount"] = strconv.Itoa(receive)
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIdempotencyReplayCostsOneLookup: a first pass of 250 new messages
// costs a claim each and no read (a refused claim would answer a
// duplicate); the batch delivered again (ApproximateReceiveCount 2) costs
// one batch read and no claim, and runs nothing; delivered again as a
// first delivery, its claims answer it, all at once.
func TestIdempotencyReplayCostsOneLookup(t *testing.T) {
	raw, _ := sqsEvent(t, false, okMsgs(250)...)
	store := &getStore{MemoryStore: idempotency.NewMemoryStore()}
	var runs atomic.Int32
	var rep BatchReport
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { runs.Add(1); return nil }, idemOpts(store, &rep)...)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), raw); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("first pass: %s, %v", out, err)
	}
	if runs.Load() != 250 || store.claims.Load() != 250 || store.gets.Load() != 0 {
		t.Fatalf("first pass: runs %d claims %d lookups %d; want 250, 250, 0", runs.Load(), store.claims.Load(), store.gets.Load())
	}
	for _, tc := range []struct {
		name                 string
		event                []byte
		claims, gets, getted int32
	}{
		{"redelivered", asRedelivered(t, raw, 2), 0, 1, 250},
		{"delivered again as new", raw, 250, 0, 0},
	} {
		store.claims.Store(0)
		store.gets.Store(0)
		store.getKeys.Store(0)
		if out, err := h.Invoke(context.Background(), tc.event); err != nil || len(failures(t, out)) != 0 {
			t.Fatalf("%s: %s, %v", tc.name, out, err)
		}
		if runs.Load() != 250 || store.claims.Load() != tc.claims || store.gets.Load() != tc.gets || store.getKeys.Load() != tc.getted || rep.Duplicates != 250 {
			t.Fatalf("%s: runs %d claims %d lookups %d (of %d keys) duplicates %d; want 250 (no new run), %d, %d (%d), 250",
				tc.name, runs.Load(), store.claims.Load(), store.gets.Load(), store.getKeys.Load(), rep.Duplicates, tc.claims, tc.gets, tc.getted)
		}
	}
	// Some redelivered, some new: the new are claimed at once, the others
	// read first; one record fails and comes back, read first again.
	mixed, _ := sqsEvent(t, false, okMsgs(300)...)
	var ev events.SQSEvent
	if err := json.Unmarshal(mixed, &ev); err != nil {
		t.Fatal(err)
	}
	for i := range ev.Records {
		if i < 250 {
			ev.Records[i].Attributes["ApproximateReceiveCount"] = "3"
		}
	}
	mixed, _ = json.Marshal(ev)
	store.claims.Store(0)
	store.gets.Store(0)
	store.getKeys.Store(0)
	if out, err := h.Invoke(context.Background(), mixed); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("mixed: %s, %v", out, err)
	}
	if runs.Load() != 300 || store.claims.Load() != 50 || store.gets.Load() != 1 || store.getKeys.Load() != 250 || rep.Duplicates != 250 {
		t.Fatalf("mixed: runs %d claims %d lookups %d (of %d keys) duplicates %d; want 300, 50, 1 (250), 250",
			runs.Load(), store.claims.Load(), store.gets.Load(), store.getKeys.Load(), rep.Duplicates)
	}
}

func TestRedelivered(t *testing.T) {
	for count, want := range map[int]bool{0: false, 1: false, 2: true, 9: true} {
		if got := redelivered(count); got != want {
			t.Errorf("redelivered(%d) = %v, want %v", count, got, want)
		}
	}
}

// TestIdempotencyWarmCache: with idempotency.WithCache, a container's second
// sight of a batch needs no request at all, and neither does a
// one-record batch the cache knows.
func TestIdempotencyWarmCache(t *testing.T) {
	raw, _ := sqsEvent(t, false, okMsgs(20)...)
	store := &getStore{MemoryStore: idempotency.NewMemoryStore()}
	cache := idempotency.NewCache(1000)
	var rep BatchReport
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil },
		idemOpts(store, &rep, WithIdempotency(store, idempotency.WithCache(cache)))...)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if out, err := h.Invoke(context.Background(), raw); err != nil || len(failures(t, out)) != 0 {
			t.Fatalf("%s, %v", out, err)
		}
	}
	if store.claims.Load() != 20 || store.gets.Load() != 0 || store.getKeys.Load() != 0 || cache.Len() != 20 || rep.Duplicates != 20 {
		t.Fatalf("claims %d lookups %d (keys %d) cached %d duplicates %d; want 20, 0 (0), 20, 20",
			store.claims.Load(), store.gets.Load(), store.getKeys.Load(), cache.Len(), rep.Duplicates)
	}
	// The builder names messages by position: this is the first record
	// again, alone: no lookup, and the cache answers it.
	one, _ := sqsEvent(t, false, okMsgs(1)...)
	if _, err := h.Invoke(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	if store.gets.Load() != 0 || store.claims.Load() != 20 || rep.Duplicates != 1 {
		t.Fatalf("one record: lookups %d claims %d duplicates %d; want no lookup, no claim, 1 duplicate",
			store.gets.Load(), store.claims.Load(), rep.Duplicates)
	}
}

// TestIdempotencyOnDuplicateGetsResult: the result a record stored with
// idempotency.SetResult reaches WithOnDuplicate on a replay, found by the
// batch lookup and by a claim alike.
func TestIdempotencyOnDuplicateGetsResult(t *testing.T) {
	for _, lookup := range []bool{true, false} {
		t.Run(fmt.Sprint("lookup=", lookup), func(t *testing.T) {
			raw, ids := sqsEvent(t, false, okMsgs(3)...)
			var store idempotency.Store = idempotency.NewMemoryStore()
			if !lookup {
				store = &countingStore{Store: store} // no Get: the claims find the duplicates
			}
			var mu sync.Mutex
			got := map[string]string{}
			var rep BatchReport
			h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
				idempotency.SetResult(ctx, []byte("receipt-"+r.MessageID()))
				return nil
			}, idemOpts(store, &rep, WithOnDuplicate(func(ctx context.Context, r SQSRecord[msg], result []byte) error {
				mu.Lock()
				defer mu.Unlock()
				got[r.MessageID()] = string(result)
				return nil
			}))...)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if out, err := h.Invoke(context.Background(), raw); err != nil || len(failures(t, out)) != 0 {
					t.Fatalf("%s, %v", out, err)
				}
			}
			if len(got) != 3 || rep.Duplicates != 3 {
				t.Fatalf("OnDuplicate saw %v, duplicates %d", got, rep.Duplicates)
			}
			for _, id := range ids {
				if got[id] != "receipt-"+id {
					t.Fatalf("record %s: result %q", id, got[id])
				}
			}
		})
	}
}

// TestIdempotencyPayloadMismatch: two records sharing a business key with
// different payloads: the second fails permanently, never skipped, whether
// the mismatch is found by the lookup (a later batch) or by a claim.
func TestIdempotencyPayloadMismatch(t *testing.T) {
	type order struct {
		ID     string `json:"id"`
		Amount int    `json:"amount"`
	}
	store := idempotency.NewMemoryStore()
	var rep BatchReport
	var runs atomic.Int32
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[order]) error { runs.Add(1); return nil },
		idemOpts(store, &rep,
			WithIdempotencyKey(func(r SQSRecord[order]) string { return r.Value.ID }),
			WithIdempotencyPayload(func(r SQSRecord[order]) []byte { return []byte(r.Body()) }))...)
	if err != nil {
		t.Fatal(err)
	}
	first := sqsBodies(t, `{"id":"o-1","amount":5}`, `{"id":"o-2","amount":7}`)
	if out, err := h.Invoke(context.Background(), first); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s, %v", out, err)
	}
	second := sqsBodies(t, `{"id":"o-1","amount":5}`, `{"id":"o-2","amount":9}`)
	out, err := h.Invoke(context.Background(), second)
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(t, out); len(f) != 1 || runs.Load() != 2 {
		t.Fatalf("failures %v runs %d; want the o-2 record with another amount to fail, nothing rerun", f, runs.Load())
	}
	bad := rep.Records[1]
	if !errors.Is(bad.Err, idempotency.ErrPayloadMismatch) || batch.Classify(bad.Err) != batch.ClassPermanent {
		t.Fatalf("record o-2: %v (class %v); want a permanent ErrPayloadMismatch", bad.Err, batch.Classify(bad.Err))
	}
	if !rep.Records[0].Duplicate {
		t.Fatalf("record o-1 with the same payload should be a duplicate: %+v", rep.Records[0])
	}
}

func TestIdempotencyOptionTypes(t *testing.T) {
	store := idempotency.NewMemoryStore()
	for name, o := range map[string]Option{
		"WithIdempotencyPayload": WithIdempotencyPayload(func(r KinesisRecord[msg]) []byte { return nil }),
		"WithOnDuplicate":        WithOnDuplicate(func(context.Context, KinesisRecord[msg], []byte) error { return nil }),
	} {
		_, err := NewSQS(func(context.Context, SQSRecord[msg]) error { return nil }, WithIdempotency(store), o)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "SQSRecord") {
			t.Fatalf("%s with the wrong record type: %v", name, err)
		}
		_, err = NewSQS(func(context.Context, SQSRecord[msg]) error { return nil }, o)
		if err == nil || !strings.Contains(err.Error(), "need WithIdempotency") {
			t.Fatalf("%s without WithIdempotency: %v", name, err)
		}
	}
}

// sqsBodies is an SQS event of the given bodies.
func sqsBodies(t *testing.T, bodies ...string) []byte {
	t.Helper()
	b := &sevents.SQSBuilder{}
	for _, body := range bodies {
		b.Add(body)
	}
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestIdempotencyConcurrentBatches: invocations of one handler at once,
// of batches of different sizes, each run every record of their own
// batch once, under its own claim: a batch's records, kept for the
// layer's one function (runAhead) and reused by the next batch, never mix.
func TestIdempotencyConcurrentBatches(t *testing.T) {
	store := idempotency.NewMemoryStore()
	var mu sync.Mutex
	ran := map[string]int{}
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
		mu.Lock()
		ran[r.Value.ID]++
		mu.Unlock()
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(fnEnv), WithoutRetry(), WithIdempotency(store),
		WithIdempotencyKey(func(r SQSRecord[msg]) string { return r.Value.ID }))
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{2, 7, 30, 60}
	const rounds = 5
	var wg sync.WaitGroup
	for g, n := range sizes {
		wg.Go(func() {
			for round := range rounds {
				bodies := make([]string, n)
				for j := range bodies {
					bodies[j] = string(payload(fmt.Sprintf("g%d-r%d-%d", g, round, j), "ok"))
				}
				raw, _ := sqsEventOf(t, bodies...)
				out, err := h.Invoke(context.Background(), raw)
				if err != nil || len(failures(t, out)) != 0 {
					t.Errorf("batch %d round %d: %s, %v", g, round, out, err)
				}
			}
		})
	}
	wg.Wait()
	want := 0
	for g, n := range sizes {
		for round := range rounds {
			for j := range n {
				want++
				if id := fmt.Sprintf("g%d-r%d-%d", g, round, j); ran[id] != 1 {
					t.Errorf("%s ran %d times, want 1", id, ran[id])
				}
			}
		}
	}
	if len(ran) != want {
		t.Fatalf("%d records ran, want %d", len(ran), want)
	}
}
