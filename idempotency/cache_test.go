package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// noGet hides MemoryStore's Get, as a store without batch reads.
type noGet struct{ idempotency.Store }

// TestCacheSkipsTheStore: a key Do completed, or found completed, is
// answered from the cache with no claim, until its expiry.
func TestCacheSkipsTheStore(t *testing.T) {
	clk := newClock()
	rec := &recorder{Store: idempotency.NewMemoryStore()}
	cache := idempotency.NewCache(10)
	opts := []idempotency.Option{idempotency.WithClock(clk.Now), idempotency.WithCache(cache), idempotency.WithTTL(time.Minute)}
	runs := 0
	for range 3 {
		res, err := idempotency.Do(context.Background(), rec, "k", ok(&runs), opts...)
		if err != nil || string(res) != "ok" {
			t.Fatalf("Do = %q, %v", res, err)
		}
	}
	if runs != 1 || len(rec.claims) != 1 {
		t.Fatalf("runs %d, claims %d; want 1 and 1 (the cache answers the duplicates)", runs, len(rec.claims))
	}
	// A second container (its own cache) learns of the completed key from
	// the claim, and remembers it.
	other := idempotency.NewCache(10)
	opts2 := []idempotency.Option{idempotency.WithClock(clk.Now), idempotency.WithCache(other)}
	for range 2 {
		if _, err := idempotency.Do(context.Background(), rec, "k", ok(&runs), opts2...); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 || len(rec.claims) != 2 || other.Len() != 1 {
		t.Fatalf("runs %d, claims %d, cached %d; want 1, 2, 1", runs, len(rec.claims), other.Len())
	}
	// Past the TTL the cache no longer answers, and the key runs again.
	clk.Add(2 * time.Minute)
	if _, err := idempotency.Do(context.Background(), rec, "k", ok(&runs), opts...); err != nil || runs != 2 {
		t.Fatalf("after expiry: runs %d, err %v; want a second run", runs, err)
	}
}

// TestCachePayloadMismatch: a cached key with another payload is still a
// mismatch, never a duplicate.
func TestCachePayloadMismatch(t *testing.T) {
	clk := newClock()
	cache := idempotency.NewCache(10)
	store := idempotency.NewMemoryStore()
	runs := 0
	if _, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithCache(cache), idempotency.WithPayload([]byte("a"))); err != nil {
		t.Fatal(err)
	}
	_, err := idempotency.Do(context.Background(), store, "k", ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithCache(cache), idempotency.WithPayload([]byte("b")))
	if !errors.Is(err, idempotency.ErrPayloadMismatch) || runs != 1 {
		t.Fatalf("err %v runs %d; want ErrPayloadMismatch and 1 run", err, runs)
	}
}

// TestCacheBounded: the oldest entry goes when the cache is full.
func TestCacheBounded(t *testing.T) {
	clk := newClock()
	cache := idempotency.NewCache(3)
	rec := &recorder{Store: idempotency.NewMemoryStore()}
	runs := 0
	for i := range 5 {
		if _, err := idempotency.Do(context.Background(), rec, fmt.Sprint(i), ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithCache(cache)); err != nil {
			t.Fatal(err)
		}
	}
	if cache.Len() != 3 {
		t.Fatalf("cache holds %d, want 3", cache.Len())
	}
	// Keys 2, 3, 4 are cached; 0 needs a claim (a duplicate there).
	before := len(rec.claims)
	for _, k := range []string{"4", "3", "2", "0"} {
		if _, err := idempotency.Do(context.Background(), rec, k, ok(&runs), idempotency.WithClock(clk.Now), idempotency.WithCache(cache)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(rec.claims) - before; got != 1 || runs != 5 {
		t.Fatalf("claims %d runs %d; want 1 claim (key 0) and no rerun", got, runs)
	}
}

// TestSetResult: the result a function stores with SetResult comes back to
// a duplicate.
func TestSetResult(t *testing.T) {
	store := idempotency.NewMemoryStore()
	fn := func(ctx context.Context) ([]byte, error) {
		idempotency.SetResult(ctx, []byte("payment-42"))
		return nil, nil
	}
	if _, err := idempotency.Do(context.Background(), store, "k", fn); err != nil {
		t.Fatal(err)
	}
	res, err := idempotency.Do(context.Background(), store, "k", func(context.Context) ([]byte, error) {
		t.Fatal("a duplicate ran")
		return nil, nil
	})
	if err != nil || string(res) != "payment-42" {
		t.Fatalf("duplicate got %q, %v; want payment-42", res, err)
	}
	idempotency.SetResult(context.Background(), []byte("x")) // outside Do: nothing happens
}

// TestBatchReadsFirst: the keys of a batch marked to be read first
// (redeliveries) are read in one request: the completed ones are
// duplicates with no claim, and the others (unknown, expired) are
// claimed; on a store without batch reads they are claimed.
func TestBatchReadsFirst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		getter bool
		claims int
	}{
		{"getter", true, 2}, // new, and old (expired)
		{"no getter", false, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			store := idempotency.NewMemoryStore()
			runs := 0
			for i := range 4 {
				if _, err := idempotency.Do(context.Background(), store, fmt.Sprint("done", i), ok(&runs), idempotency.WithClock(clk.Now)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := idempotency.Do(context.Background(), store, "old", ok(&runs), idempotency.WithClock(func() time.Time { return clk.Now().Add(-2 * time.Hour) })); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{Store: store}
			var s idempotency.Store = noGet{rec}
			if tc.getter {
				s = struct {
					idempotency.Store
					idempotency.Getter
				}{rec, store}
			}
			var ahead []idempotency.BatchKey
			for _, k := range []string{"done0", "done1", "new", "done2", "done3", "old"} {
				ahead = append(ahead, idempotency.BatchKey{Key: k, Lookup: true})
			}
			b, err := idempotency.ClaimBatch(context.Background(), s, ahead, idempotency.WithClock(clk.Now))
			if err != nil {
				t.Fatal(err)
			}
			ran := 0
			for _, a := range ahead {
				if _, err := b.Do(context.Background(), a.Key, ok(&ran)); err != nil {
					t.Fatal(err)
				}
			}
			if failed := b.Finish(nil); len(failed) != 0 {
				t.Fatal(failed)
			}
			if ran != 2 {
				t.Errorf("%d functions ran, want 2 (new and expired)", ran)
			}
			if len(rec.claims) != tc.claims {
				t.Errorf("%d claims, want %d", len(rec.claims), tc.claims)
			}
		})
	}
}
