package handlers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

// A crashed invocation left its claim behind (its owner is dead and will
// never renew it): the retry's record waits for the claim to lapse, then
// runs, in the same invocation; nothing is reported.
func TestIdempotencyRetryWaitsForDeadClaim(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"})
	store := idempotency.NewMemoryStore()
	now := time.Now()
	if rec, err := store.Claim(context.Background(), idempotency.Claim{Key: "orders-fn#" + ids[1], Owner: "crashed",
		Now: now, LeaseUntil: now.Add(300 * time.Millisecond), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
		t.Fatal(rec, err)
	}
	var mu sync.Mutex
	ran := map[string]int{}
	var rep BatchReport
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
		mu.Lock()
		ran[r.MessageID()]++
		mu.Unlock()
		return nil
	}, idemOpts(store, &rep)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := h.Invoke(ctx, raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v: %+v", out, err, rep.Records)
	}
	if ran[ids[0]] != 1 || ran[ids[1]] != 1 || rep.Duplicates != 0 {
		t.Fatalf("runs %v, %d duplicates; want each message run once", ran, rep.Duplicates)
	}
}

// gateStore tells, through seen, when a key has had its second claim (the
// second record with the key found it in progress).
type gateStore struct {
	idempotency.Store
	key    string
	mu     sync.Mutex
	claims int
	seen   chan struct{}
}

func (s *gateStore) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	rec, err := s.Store.Claim(ctx, c)
	if c.Key == s.key {
		s.mu.Lock()
		if s.claims++; s.claims == 2 {
			close(s.seen)
		}
		s.mu.Unlock()
	}
	return rec, err
}

// Two records of one SQS batch carry the same business key and run at once:
// the second waits for the first and is its duplicate, instead of failing
// as "claimed by another invocation". With no wait it fails, saying the
// other record is of this batch, and dead letters do not count it.
func TestIdempotencySameKeyInOneBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait bool
	}{{"Waits", true}, {"NoWait", false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &sevents.SQSBuilder{}
			b.Add(string(payload("order-7", "first")))
			b.Add(string(payload("order-7", "second")))
			b.Add(string(payload("order-8", "ok")))
			raw, _ := sevents.MarshalEvent(b.Event())
			gate := &gateStore{Store: idempotency.NewMemoryStore(), key: "orders-fn#order-7", seen: make(chan struct{})}
			var iopts []idempotency.Option
			if !tc.wait {
				iopts = append(iopts, idempotency.WithWait(0))
			}
			var mu sync.Mutex
			var runs []string
			var rep BatchReport
			dest := &sink{}
			h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
				if r.Value.ID == "order-7" {
					<-gate.seen // hold the first until the second has found it in progress
				}
				mu.Lock()
				runs = append(runs, r.Value.Action)
				mu.Unlock()
				return nil
			}, idemOpts(gate, &rep, WithConcurrency(3), WithIdempotency(gate, iopts...),
				WithIdempotencyKey(func(r SQSRecord[msg]) string { return r.Value.ID }),
				WithDeadLetters(dest, dlq.WithMaxAttempts(1)))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := h.Invoke(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 || len(dest.ids()) != 0 {
				t.Fatalf("runs %v, quarantined %v; want order-7 once and order-8, nothing quarantined", runs, dest.ids())
			}
			failed := failures(t, out)
			if tc.wait {
				if len(failed) != 0 || rep.Duplicates != 1 {
					t.Fatalf("reported %v, %d duplicates; want none reported and one duplicate", failed, rep.Duplicates)
				}
				return
			}
			if len(failed) != 1 || rep.Duplicates != 0 {
				t.Fatalf("reported %v, %d duplicates; want the second order-7 reported", failed, rep.Duplicates)
			}
			for _, r := range rep.Records {
				if r.Err == nil {
					continue
				}
				if !errors.Is(r.Err, idempotency.ErrInProgress) || !strings.Contains(r.Err.Error(), "another record of this batch") {
					t.Fatalf("record %s: %v; want ErrInProgress naming another record of this batch", r.ID, r.Err)
				}
			}
		})
	}
}

// A record whose key stays in progress elsewhere past the wait fails with
// ErrInProgress, and dead letters do not count that as an attempt: not on
// SQS, whose receive count is already past the limit, and not on a stream,
// even alone in its batch (where each delivery is counted before it runs,
// and repeated deliveries without an answer would blame it for a crash).
func TestIdempotencyInProgressIsNotAnAttempt(t *testing.T) {
	live := func(t *testing.T, store idempotency.Store, key string) {
		t.Helper()
		now := time.Now()
		if rec, err := store.Claim(context.Background(), idempotency.Claim{Key: key, Owner: "elsewhere",
			Now: now, LeaseUntil: now.Add(time.Hour), Expires: now.Add(time.Hour)}); rec != nil || err != nil {
			t.Fatal(rec, err)
		}
	}
	t.Run("SQS", func(t *testing.T) {
		b := &sevents.SQSBuilder{}
		b.Add(string(payload("0", "ok")))
		b.Add(string(payload("1", "ok")))
		ev := b.Event()
		ev.Records[1].Attributes["ApproximateReceiveCount"] = "7"
		raw, _ := sevents.MarshalEvent(ev)
		store := idempotency.NewMemoryStore()
		live(t, store, "orders-fn#"+ev.Records[1].MessageId)
		dest := &sink{}
		var rep BatchReport
		h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil },
			idemOpts(store, &rep, WithIdempotency(store, idempotency.WithWait(0)), WithDeadLetters(dest, dlq.WithMaxAttempts(3)))...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(context.Background(), raw)
		if got := failures(t, out); err != nil || len(got) != 1 || got[0] != ev.Records[1].MessageId || len(dest.ids()) != 0 {
			t.Fatalf("reported %v (%v), quarantined %v; want message 1 reported, nothing quarantined", got, err, dest.ids())
		}
	})
	t.Run("KinesisAlone", func(t *testing.T) {
		b := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", ShardID: "shardId-000000000007"}
		b.Add("pk", payload("0", "ok"))
		ev := b.Event()
		raw, _ := sevents.MarshalEvent(ev)
		store := idempotency.NewMemoryStore()
		live(t, store, "orders-fn#"+ev.Records[0].EventID)
		dest := &sink{}
		attempts := dlq.NewMemory(0)
		var rep BatchReport
		runs := 0
		h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { runs++; return nil },
			idemOpts(store, &rep, WithIdempotency(store, idempotency.WithWait(0)),
				WithDeadLetters(dest, dlq.WithMaxAttempts(2), dlq.WithAttempts(attempts)))...)
		if err != nil {
			t.Fatal(err)
		}
		for delivery := 1; delivery <= 4; delivery++ {
			// A lone record that fails makes no progress: a function error.
			if out, err := h.Invoke(context.Background(), raw); err == nil || len(dest.ids()) != 0 {
				t.Fatalf("delivery %d: %s %v, quarantined %v; want a function error, nothing quarantined", delivery, out, err, dest.ids())
			}
			if r := rep.Records[0]; !errors.Is(r.Err, idempotency.ErrInProgress) || r.Quarantined {
				t.Fatalf("delivery %d: %+v; want it failed with ErrInProgress, not quarantined", delivery, r)
			}
		}
		if runs != 0 {
			t.Fatalf("the function ran %d times while the key was held elsewhere", runs)
		}
		// Once the key is free the record runs.
		if err := store.Release(context.Background(), "orders-fn#"+ev.Records[0].EventID, "elsewhere"); err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(context.Background(), raw)
		if got := failures(t, out); err != nil || len(got) != 0 || runs != 1 || len(dest.ids()) != 0 {
			t.Fatalf("after the release: reported %v (%v), %d runs, quarantined %v", got, err, runs, dest.ids())
		}
	})
}

func TestSharedKeys(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{nil, "map[]"},
		{[]string{"a", "b"}, "map[]"},
		{[]string{"a", "b", "a", "", ""}, "map[a:true]"},
		{[]string{"a", "a", "b", "b", "b"}, "map[a:true b:true]"},
	} {
		if got := fmt.Sprint(sharedKeys(tc.keys)); got != tc.want {
			t.Errorf("sharedKeys(%q) = %s, want %s", tc.keys, got, tc.want)
		}
	}
}
