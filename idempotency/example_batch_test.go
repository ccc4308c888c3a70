package idempotency_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/idempotency"
)

// A hand-written loop over a batch (an SQS FIFO batch, say): every key is
// claimed at once, each record runs under its claim in its message
// group's order, and the batch answers once Finish says which completes
// failed. Delivered again, the batch's records are duplicates: their
// functions do not run.
func ExampleClaimBatch() {
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	type message struct{ id, group, body string }
	batch := []message{{"m1", "alice", "charge 10"}, {"m2", "bob", "charge 7"}, {"m3", "alice", "refund 10"}}

	handle := func(msgs []message, redelivered bool) (failed []string) {
		keys := make([]idempotency.BatchKey, len(msgs))
		for i, m := range msgs {
			// A redelivery was probably completed: read it before claiming.
			keys[i] = idempotency.BatchKey{Key: "payments#" + m.id, Lookup: redelivered}
		}
		b, err := idempotency.ClaimBatch(ctx, store, keys)
		if err != nil {
			panic(err) // only a bad option fails it
		}
		b.Ordered() // a group's records start once its earlier completes are (nearly) written
		for _, m := range msgs {
			ran := false
			_, err := b.DoLane(ctx, m.group, "payments#"+m.id, func(context.Context) ([]byte, error) {
				ran = true
				fmt.Println("ran", m.id, m.body) // the effect
				return nil, nil
			})
			switch {
			case err != nil:
				failed = append(failed, m.id) // report it (and, in a group, every later one)
			case !ran:
				fmt.Println("duplicate", m.id)
			}
		}
		for key := range b.Finish(nil) { // each key whose completion was not stored
			failed = append(failed, key)
		}
		return failed
	}
	fmt.Println("failed:", handle(batch, false))
	fmt.Println("failed:", handle(batch, true))
	// Output:
	// ran m1 charge 10
	// ran m2 charge 7
	// ran m3 refund 10
	// failed: []
	// duplicate m1
	// duplicate m2
	// duplicate m3
	// failed: []
}
