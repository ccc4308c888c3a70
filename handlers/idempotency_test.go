package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

func fnEnv(k string) (string, bool) {
	if k == EnvFunctionName {
		return "orders-fn", true
	}
	return "", false
}

// countingStore counts claims, and fails them when failClaims is set.
type countingStore struct {
	idempotency.Store
	claims     atomic.Int32
	failClaims bool
}

func (s *countingStore) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	s.claims.Add(1)
	if s.failClaims {
		return nil, &idempotency.StoreError{Op: "claim", Key: c.Key, Err: errors.New("table missing")}
	}
	return s.Store.Claim(ctx, c)
}

// completed reports whether key holds a completed record in s.
func completed(t *testing.T, s idempotency.Store, key string) bool {
	t.Helper()
	rec, err := s.Claim(context.Background(), idempotency.Claim{Key: key, Owner: "probe", Now: time.Now(),
		LeaseUntil: time.Now().Add(time.Minute), Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return rec != nil && rec.Status == idempotency.StatusCompleted
}

func idemOpts(store idempotency.Store, rep *BatchReport, extra ...Option) []Option {
	return append([]Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(fnEnv), WithoutRetry(),
		WithIdempotency(store), WithOnBatch(func(_ context.Context, r BatchReport) { *rep = r })}, extra...)
}

func TestIdempotencyFirstRunThenDuplicates(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"}, [2]string{"", "ok"})
	store := idempotency.NewMemoryStore()
	var mu sync.Mutex
	runs := map[string]int{}
	var rep BatchReport
	var logs bytes.Buffer
	o := idemOpts(store, &rep, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
		mu.Lock()
		runs[r.MessageID()]++
		mu.Unlock()
		return nil
	}, o...)
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		out, err := h.Invoke(context.Background(), raw)
		if err != nil || len(failures(t, out)) != 0 {
			t.Fatalf("pass %d: %s %v", pass, out, err)
		}
		want := pass * len(ids)
		if rep.Duplicates != want {
			t.Fatalf("pass %d: %d duplicates, want %d", pass, rep.Duplicates, want)
		}
		for _, r := range rep.Records {
			if r.Outcome != batch.Succeeded || r.Duplicate != (pass == 1) {
				t.Fatalf("pass %d: %+v", pass, r)
			}
		}
	}
	for _, id := range ids {
		if runs[id] != 1 {
			t.Fatalf("message %s ran %d times", id, runs[id])
		}
		if !completed(t, store, "orders-fn#"+id) {
			t.Fatalf("no completed record under orders-fn#%s", id)
		}
	}
	if !strings.Contains(logs.String(), `"duplicates":3`) {
		t.Fatalf("the batch line should count 3 duplicates: %s", logs.String())
	}
}

func TestIdempotencyInProgressElsewhereFails(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"})
	store := idempotency.NewMemoryStore()
	now := time.Now()
	if rec, err := store.Claim(context.Background(), idempotency.Claim{Key: "orders-fn#" + ids[1], Owner: "elsewhere",
		Now: now, LeaseUntil: now.Add(time.Hour), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
		t.Fatal(rec, err)
	}
	ran := map[string]bool{}
	var rep BatchReport
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { ran[r.MessageID()] = true; return nil },
		idemOpts(store, &rep, WithConcurrency(1), WithIdempotency(store, idempotency.WithWait(0)))...)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); !slices.Equal(got, pick(ids, 1)) || ran[ids[1]] || !ran[ids[0]] {
		t.Fatalf("reported %v, ran %v", got, ran)
	}
	if !errors.Is(rep.Records[1].Err, idempotency.ErrInProgress) || rep.Duplicates != 0 {
		t.Fatalf("record 1: %+v", rep.Records[1])
	}
}

func TestIdempotencyFailureReleasesClaim(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"})
	store := idempotency.NewMemoryStore()
	fail := true
	runs := 0
	var rep BatchReport
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
		runs++
		if fail {
			return errors.New("downstream down")
		}
		return nil
	}, idemOpts(store, &rep, WithPartialResponseWhenNoneSucceed())...)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || !slices.Equal(failures(t, out), ids) {
		t.Fatalf("%s %v", out, err)
	}
	fail = false // the retry runs at once: the claim was given back
	out, err = h.Invoke(context.Background(), raw)
	if err != nil || len(failures(t, out)) != 0 || runs != 2 || rep.Duplicates != 0 {
		t.Fatalf("%s %v runs %d", out, err, runs)
	}
	if !completed(t, store, "orders-fn#"+ids[0]) {
		t.Fatal("record not completed after the retry")
	}
}

func TestIdempotencyTransientRetriesInsideOneClaim(t *testing.T) {
	raw, _ := kinesisTestEvent("ok", "ok")
	store := &countingStore{Store: idempotency.NewMemoryStore()}
	calls := map[string]int{}
	var rep BatchReport
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		calls[r.Value.ID]++
		if calls[r.Value.ID] <= 2 {
			return batch.Transient(errors.New("throttled"))
		}
		return nil
	}, idemOpts(store, &rep, WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Millisecond)}))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || len(failures(t, out)) != 0 || calls["0"] != 3 || calls["1"] != 3 {
		t.Fatalf("%s %v calls %v", out, err, calls)
	}
	if n := store.claims.Load(); n != 2 {
		t.Fatalf("%d claims for 2 records retried in process, want 2", n)
	}
	if rep.Records[0].Attempts != 3 {
		t.Fatalf("attempts %+v", rep.Records[0])
	}
}

func TestIdempotencyStoreFailureFailsRecord(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"})
	store := &countingStore{Store: idempotency.NewMemoryStore(), failClaims: true}
	ran := false
	var rep BatchReport
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { ran = true; return nil },
		idemOpts(store, &rep, WithPartialResponseWhenNoneSucceed())...)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || !slices.Equal(failures(t, out), ids) || ran {
		t.Fatalf("%s %v ran %v", out, err, ran)
	}
	var se *idempotency.StoreError
	if !errors.As(rep.Records[0].Err, &se) {
		t.Fatalf("record error %v", rep.Records[0].Err)
	}
}

func TestIdempotencyBusinessKey(t *testing.T) {
	// Two messages (two message ids) carrying the same order: one effect.
	b := &sevents.SQSBuilder{}
	b.Add(string(payload("order-7", "ok")))
	b.Add(string(payload("order-7", "ok")))
	b.Add(string(payload("order-8", "ok")))
	raw, _ := sevents.MarshalEvent(b.Event())
	store := idempotency.NewMemoryStore()
	var rep BatchReport
	var runs []string
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { runs = append(runs, r.Value.ID); return nil },
		idemOpts(store, &rep, WithConcurrency(1),
			WithIdempotencyKey(func(r SQSRecord[msg]) string { return r.Value.ID }))...)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), raw); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	if !slices.Equal(runs, []string{"order-7", "order-8"}) || rep.Duplicates != 1 || !rep.Records[1].Duplicate {
		t.Fatalf("runs %v, report %+v", runs, rep)
	}
	if !completed(t, store, "orders-fn#order-7") {
		t.Fatal("no record under the business key")
	}

	// A key function of another record type is refused at construction.
	_, err = NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil },
		idemOpts(store, &rep, WithIdempotencyKey(func(r KinesisRecord[msg]) string { return r.Value.ID }))...)
	if err == nil || !strings.Contains(err.Error(), "KinesisRecord") {
		t.Fatalf("mismatched key function: %v", err)
	}
	// And a key without a store.
	if _, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil },
		opts(WithIdempotencyKey(func(r SQSRecord[msg]) string { return "" }))...); err == nil {
		t.Fatal("WithIdempotencyKey without WithIdempotency should fail")
	}
}

func TestIdempotencyMissingKey(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"})
	key := WithIdempotencyKey(func(r SQSRecord[msg]) string {
		if r.Value.ID == "0" {
			return ""
		}
		return "order-" + r.Value.ID
	})
	for _, optional := range []bool{false, true} {
		t.Run(fmt.Sprintf("optional=%v", optional), func(t *testing.T) {
			store := &countingStore{Store: idempotency.NewMemoryStore()}
			var rep BatchReport
			o := idemOpts(store, &rep, key, WithConcurrency(1))
			if optional {
				o = append(o, WithIdempotencyOptionalKey())
			}
			var runs []string
			h, _ := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { runs = append(runs, r.Value.ID); return nil }, o...)
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			got := failures(t, out)
			if optional {
				if len(got) != 0 || !slices.Equal(runs, []string{"0", "1"}) || store.claims.Load() != 1 {
					t.Fatalf("reported %v runs %v claims %d", got, runs, store.claims.Load())
				}
				return
			}
			if !slices.Equal(got, pick(ids, 0)) || !slices.Equal(runs, []string{"1"}) || !errors.Is(rep.Records[0].Err, ErrNoIdempotencyKey) {
				t.Fatalf("reported %v runs %v err %v", got, runs, rep.Records[0].Err)
			}
		})
	}
}

func TestIdempotencyDefaultKeys(t *testing.T) {
	tests := []struct {
		key  func() string
		want string
	}{
		{func() string {
			return KinesisRecord[msg]{Raw: events.KinesisEventRecord{EventID: "shardId-000000000000:4955"}}.idempotencyKey()
		}, "shardId-000000000000:4955"},
		{func() string {
			return DynamoDBRecord[msg]{Raw: events.DynamoDBEventRecord{EventID: "c4ca4238a0b9"}}.idempotencyKey()
		}, "c4ca4238a0b9"},
		{func() string { return SQSRecord[msg]{Raw: events.SQSMessage{MessageId: "059f36b4"}}.idempotencyKey() }, "059f36b4"},
		{func() string {
			return KafkaRecord[msg]{Raw: events.KafkaRecord{Topic: "orders", Partition: 3, Offset: 42}}.idempotencyKey()
		}, "orders-3-42"},
	}
	for _, tt := range tests {
		if got := tt.key(); got != tt.want {
			t.Errorf("key %q, want %q", got, tt.want)
		}
	}

	// Kafka end to end, without a function name: the key is the bare id.
	b := &sevents.KafkaBuilder{}
	b.Add("orders", 1, nil, payload("a", "ok"))
	raw, _ := sevents.MarshalEvent(b.Event())
	store := idempotency.NewMemoryStore()
	h, err := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return nil }, opts(WithIdempotency(store), WithIdempotencyPerRecord())...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if !completed(t, store, "orders-1-0") {
		t.Fatal("no record under orders-1-0")
	}
	// By default the partition keeps a checkpoint, under its lane's key.
	h, err = NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return nil }, opts(WithIdempotency(store))...)
	if err != nil {
		t.Fatal(err)
	}
	b.Add("orders", 1, nil, payload("b", "ok"))
	raw, _ = sevents.MarshalEvent(b.Event())
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if !laneCovers(t, store, "lane#kafka#orders-1", "1") || laneCovers(t, store, "lane#kafka#orders-1", "2") {
		t.Fatal("the checkpoint of lane#kafka#orders-1 does not stand at offset 1")
	}
}

// laneCovers reports whether the checkpoint of lane in s stands at or
// above position raw (a decimal sequence number or offset): a claim of it
// is refused, and the lane holds it.
func laneCovers(t *testing.T, s idempotency.Store, lane, raw string) bool {
	t.Helper()
	pos, ok := idempotency.Position(raw)
	if !ok {
		t.Fatalf("%q is not a position", raw)
	}
	now := time.Now()
	rec, err := s.(idempotency.LaneStore).ClaimLane(context.Background(), idempotency.LaneClaim{Lane: lane, Owner: "probe", Upto: pos,
		Now: now, LeaseUntil: now, Expires: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Owner == "probe" { // taken: the position is below; give it back
		if err := s.(idempotency.LaneStore).SaveLane(context.Background(), idempotency.LaneSave{Lane: lane, Owner: "probe", Expires: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return false
	}
	return rec.Position >= pos
}
