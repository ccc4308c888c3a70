package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// slowStore is a MemoryStore whose claims take a while, counting how many
// are in flight at once.
type slowStore struct {
	*idempotency.MemoryStore
	now, most atomic.Int32
	claims    atomic.Int32
}

func (s *slowStore) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	s.claims.Add(1)
	time.Sleep(5 * time.Millisecond)
	return s.MemoryStore.Claim(ctx, c)
}

// TestWithInFlight: a batch's claims go out at once, as many at a time as
// WithInFlight allows (not the functions' concurrency), and no more; the
// claims held for records that have not started are bounded too, so with
// 3 the records start as their claims come in.
func TestWithInFlight(t *testing.T) {
	for _, limit := range []int{3, 40} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			store := &slowStore{MemoryStore: idempotency.NewMemoryStore()}
			var ahead []idempotency.BatchKey
			for i := range 40 {
				ahead = append(ahead, idempotency.BatchKey{Key: fmt.Sprint("k", i)})
			}
			ctx := context.Background()
			b, err := idempotency.ClaimBatch(ctx, store, ahead, idempotency.WithInFlight(limit))
			if err != nil {
				t.Fatal(err)
			}
			if limit == 40 {
				waitFor(t, "every claim ahead", func() bool { return store.claims.Load() == 40 })
			}
			for _, a := range ahead {
				if _, err := b.Do(ctx, a.Key, func(context.Context) ([]byte, error) { return nil, nil }); err != nil {
					t.Fatal(err)
				}
			}
			if failed := b.Finish(nil); len(failed) != 0 {
				t.Fatal(failed)
			}
			if store.claims.Load() != 40 {
				t.Fatalf("%d claims for 40 keys", store.claims.Load())
			}
			// One record at a time runs here; a record that comes before
			// its claim was sent claims for itself, beside the batch's.
			if most := store.most.Load(); most > int32(limit)+1 || limit == 40 && most < 20 {
				t.Fatalf("%d claims in flight at most, with WithInFlight(%d)", most, limit)
			}
		})
	}
	for _, n := range []int{0, idempotency.MaxInFlight + 1} {
		if _, err := idempotency.ClaimBatch(context.Background(), idempotency.NewMemoryStore(), nil, idempotency.WithInFlight(n)); err == nil || !strings.Contains(err.Error(), "WithInFlight") {
			t.Errorf("WithInFlight(%d): %v, want an error naming it", n, err)
		}
	}
}
