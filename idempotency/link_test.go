package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/idemlink"
)

// The functions package handlers takes through internal/idemlink are
// this package's: set by its init, of the types handlers asks for.
func TestIdemlinkFuncs(t *testing.T) {
	f := idemlink.Get[idempotency.Store, idempotency.Option, *idempotency.Cache]()
	cache := idempotency.NewCache(10)
	if got := f.CacheOf(idempotency.WithTTL(time.Hour), idempotency.WithCache(cache)); got != cache {
		t.Fatalf("CacheOf = %p, want the WithCache cache %p", got, cache)
	}
	if got := f.CacheOf(idempotency.WithTTL(time.Hour)); got != nil {
		t.Fatalf("CacheOf without WithCache = %p, want nil", got)
	}
	// A bad option fails NewBatch with a nil Batch, not a nil pointer in
	// an interface.
	if b, err := f.NewBatch(context.Background(), idempotency.NewMemoryStore(), nil, idempotency.WithOrderedDepth(-1)); err == nil || b != nil {
		t.Fatalf("NewBatch(WithOrderedDepth(-1)) = %v, %v; want nil and an error", b, err)
	}

	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	b, err := f.NewBatch(ctx, store, []idemlink.Ahead{{Key: "a"}, {Key: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	b.Ordered()
	runs := 0
	for _, k := range []string{"a", "b"} {
		if _, err := b.DoLane(ctx, "lane", k, func(context.Context) ([]byte, error) { runs++; return []byte(k), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if failed := b.Finish(nil); len(failed) != 0 || runs != 2 {
		t.Fatalf("Finish = %v after %d runs; want none failed after 2", failed, runs)
	}
}
