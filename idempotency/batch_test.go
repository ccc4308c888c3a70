package idempotency_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/idempotency"
)

// TestClaimBatchBadOption: an option Do would refuse fails ClaimBatch,
// with no Batch.
func TestClaimBatchBadOption(t *testing.T) {
	b, err := idempotency.ClaimBatch(context.Background(), idempotency.NewMemoryStore(), nil, idempotency.WithOrderedDepth(-1))
	if err == nil || b != nil {
		t.Fatalf("ClaimBatch(WithOrderedDepth(-1)) = %v, %v; want nil and an error", b, err)
	}
}

// TestClaimBatchOwnCache: without WithCache a batch keeps its completions
// in a cache of its own, so a record whose key another record of the
// batch completed (a key claimed ahead, given again, or one not given)
// is a duplicate with no store request; a new batch asks the store again.
func TestClaimBatchOwnCache(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{Store: idempotency.NewMemoryStore()}
	b, err := idempotency.ClaimBatch(ctx, rec, []idempotency.BatchKey{{Key: "a"}, {Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, k := range []string{"a", "a", "b", "b"} {
		res, err := b.DoLane(ctx, "", k, ok(&runs))
		if err != nil || string(res) != "ok" {
			t.Fatalf("DoLane(%q) = %q, %v; want the stored result", k, res, err)
		}
	}
	if failed := b.Finish(nil); len(failed) != 0 {
		t.Fatalf("Finish = %v; want none failed", failed)
	}
	if runs != 2 || len(rec.claims) != 2 {
		t.Fatalf("runs %d, claims %d; want 2 and 2 (the batch's cache answers each key's second record)", runs, len(rec.claims))
	}

	b, err = idempotency.ClaimBatch(ctx, rec, []idempotency.BatchKey{{Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Do(ctx, "a", ok(&runs)); err != nil {
		t.Fatal(err)
	}
	b.Finish(nil)
	if runs != 2 || len(rec.claims) != 3 {
		t.Fatalf("a new batch: runs %d, claims %d; want 2 and 3 (its refused claim answers the duplicate)", runs, len(rec.claims))
	}
}
