package idemlatency_test

import (
	"context"
	"testing"
	"time"
)

// TestHarnessCounts: through the proxies, on both stores, a first pass of
// the 100-message batch costs a claim and a completion per message and no
// read; the batch redelivered (ApproximateReceiveCount 2) one read; the
// batch delivered again as new, a refused claim per message: as the
// benchmarks count them once connections are open and the server knows
// the scripts (the benchmarks' warm-up sample). So requests/record and
// writes/record measure the store's traffic, and the proxies pass it all.
func TestHarnessCounts(t *testing.T) {
	raw := sqsEvent(t)
	ctx := context.Background()
	for _, be := range backends(t, 2*time.Millisecond) {
		t.Run(be.name, func(t *testing.T) {
			defer be.close()
			warm, _ := sqsHandler(t)(be.fresh(t))
			for _, ev := range [][]byte{raw, redelivered(t, raw)} { // claims, then a read
				if out, err := warm(ctx, ev); err != nil || string(out) != `{"batchItemFailures":[]}` {
					t.Fatalf("warm-up: %s %v", out, err)
				}
			}
			invoke, calls := sqsHandler(t)(be.fresh(t))
			for _, phase := range []struct {
				name             string
				event            []byte
				runs             int64
				requests, writes int64
			}{
				{"first", raw, 100, 200, 200},
				{"replay", redelivered(t, raw), 0, 1, 0},
				{"again as new", raw, 0, 100, 100},
			} {
				be.count.reset()
				calls.Store(0)
				out, err := invoke(ctx, phase.event)
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
