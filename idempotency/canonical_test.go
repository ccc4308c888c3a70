package idempotency_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

func TestCanonicalJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{`{"b":1,"a":{"d":[1,2],"c":"x"}}`, `{"a":{"c":"x","d":[1,2]},"b":1}`, true},
		{" {\n \"a\" : 1.50 }\n", `{"a":1.50}`, true}, // numbers as written
		{`{"s":"\u00e9<&>"}`, `{"s":"é<&>"}`, true},
		{`[3,"a",null,true]`, `[3,"a",null,true]`, true},
		{`{"a":1} {"b":2}`, "", false}, // two values
		{`{"a":`, "", false},
		{"plain text", "", false},
		{"{\"a\":\"\xff\"}", "", false}, // invalid UTF-8: hashed as bytes
	} {
		got, ok := idempotency.CanonicalJSON([]byte(tc.in))
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("CanonicalJSON(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPayloadHashIsCanonical(t *testing.T) {
	a := idempotency.PayloadHash([]byte(`{"order":"7","amount":10}`))
	b := idempotency.PayloadHash([]byte(`{ "amount": 10, "order": "7" }`))
	c := idempotency.PayloadHash([]byte(`{"order":"7","amount":11}`))
	if a != b || a == c {
		t.Fatalf("hashes %s %s %s; want the first two equal and the third different", a, b, c)
	}
	if raw := idempotency.PayloadHash([]byte("not json")); raw != hexSum("not json") {
		t.Fatalf("a payload that is not JSON hashes its bytes: %s", raw)
	}
}

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// The same request with its keys reordered is a duplicate, not a mismatch;
// another request is a mismatch; a record stored by an earlier version
// (the hash of the bytes as they were) still matches its payload.
func TestDoPayloadReorderedIsDuplicate(t *testing.T) {
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	fn := func(context.Context) ([]byte, error) { return []byte("r"), nil }
	if _, err := idempotency.Do(ctx, store, "k", fn, idempotency.WithPayload([]byte(`{"a":1,"b":2}`))); err != nil {
		t.Fatal(err)
	}
	ran := false
	res, err := idempotency.Do(ctx, store, "k", func(context.Context) ([]byte, error) { ran = true; return nil, nil },
		idempotency.WithPayload([]byte(`{"b":2, "a":1}`)))
	if err != nil || ran || string(res) != "r" {
		t.Fatalf("reordered: %q, %v, ran %v; want the duplicate's result", res, err, ran)
	}
	if _, err := idempotency.Do(ctx, store, "k", fn, idempotency.WithPayload([]byte(`{"a":1,"b":3}`))); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Fatalf("another payload: %v; want ErrPayloadMismatch", err)
	}
	legacy := `{"z":1, "a":2}`
	now := time.Now()
	if rec, err := store.Claim(ctx, idempotency.Claim{Key: "old", Owner: "o", Now: now, PayloadHash: hexSum(legacy),
		LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); err != nil || rec != nil {
		t.Fatal(rec, err)
	}
	if err := store.Complete(ctx, "old", "o", []byte("old-result"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	res, err = idempotency.Do(ctx, store, "old", fn, idempotency.WithPayload([]byte(legacy)))
	if err != nil || string(res) != "old-result" {
		t.Fatalf("legacy hash: %q, %v; want the stored result", res, err)
	}
}

// A claim taken ahead is kept alive while its record waits for its turn:
// after several leases another claimant still finds it held, and the
// record then runs under it (no second claim) and completes at Finish.
func TestBatchKeepsClaimsAheadAlive(t *testing.T) {
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	lease := 300 * time.Millisecond
	b, err := idempotency.ClaimBatch(ctx, store, []idempotency.BatchKey{{Key: "a"}, {Key: "b"}}, idempotency.WithRenewedLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * lease)
	now := time.Now()
	if rec, err := store.Claim(ctx, idempotency.Claim{Key: "a", Owner: "other", Now: now, LeaseUntil: now.Add(time.Second), Expires: now.Add(time.Hour)}); err != nil || rec == nil || rec.Status != idempotency.StatusInProgress {
		t.Fatalf("another claimant after three leases: %+v, %v; want the claim ahead still held", rec, err)
	}
	if _, err := b.Do(ctx, "a", func(context.Context) ([]byte, error) { return []byte("done"), nil }); err != nil {
		t.Fatal(err)
	}
	if failed := b.Finish(nil); len(failed) != 0 {
		t.Fatalf("Finish: %v", failed)
	}
	recs, _ := store.Get(ctx, []string{"a", "b"})
	if recs["a"] == nil || recs["a"].Status != idempotency.StatusCompleted || string(recs["a"].Result) != "done" || recs["b"] != nil {
		t.Fatalf("after Finish: a %+v, b %+v; want a completed, b released", recs["a"], recs["b"])
	}
}
