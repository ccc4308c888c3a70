package idemlatency_test

import (
	"context"
	"testing"
	"time"
)

// TestHarnessCounts: through the proxies, on both stores, a first pass of
// the 100-message batch costs one lookup, a claim and a completion per
// message, and a replay one lookup, as the benchmarks count them once
// connections are open and the server knows the scripts (the benchmarks'
// warm-up sample). So requests/record and writes/record measure the
// store's traffic, and the proxies pass it all.
func TestHarnessCounts(t *testing.T) {
	raw := sqsEvent(t)
	ctx := context.Background()
	for _, be := range backends(t, 2*time.Millisecond) {
		t.Run(be.name, func(t *testing.T) {
			defer be.close()
			warm, _ := sqsHandler(t)(be.fresh(t))
			if out, err := warm(ctx, raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
				t.Fatalf("warm-up: %s %v", out, err)
			}
			invoke, calls := sqsHandler(t)(be.fresh(t))
			for _, phase := range []struct {
				name             string
				runs             int64
				requests, writes int64
			}{
				{"first", 100, 201, 200},
				{"replay", 0, 1, 0},
			} {
				be.count.reset()
				calls.Store(0)
				out, err := invoke(ctx, raw)
				if err != nil || string(out) != `{"batchItemFailures":[]}` {
					t.Fatalf("%s: %s %v", phase.name, out, err)
				}
				req, wr := be.count.requests.Load(), be.count.writes.Load()
				if calls.Load() != phase.runs || req != phase.requests || wr != phase.writes {
					t.Errorf("%s: %d runs, %d requests, %d writes; want %d runs, %d requests and %d writes",
						phase.name, calls.Load(), req, wr, phase.runs, phase.requests, phase.writes)
				}
			}
		})
	}
}
