package handlers_test

import (
	"context"
	"fmt"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
)

// With idempotency keyed by the order id, an order delivered twice (two
// messages, or one redelivered) is charged once; the second is a duplicate.
// In Lambda the store is a dynamodbstore.Store.
func ExampleWithIdempotencyKey() {
	store := idempotency.NewMemoryStore()
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[Order]) error {
		return charge(r.Value)
	}, append(exampleOpts, handlers.WithConcurrency(1),
		handlers.WithIdempotency(store),
		handlers.WithIdempotencyKey(func(r handlers.SQSRecord[Order]) string { return r.Value.OrderID }),
		handlers.WithOnBatch(func(ctx context.Context, r handlers.BatchReport) {
			fmt.Println("duplicates:", r.Duplicates)
		}))...)

	b := &sevents.SQSBuilder{}
	b.Add(string(order("o-1", 10))).Add(string(order("o-1", 10))).Add(string(order("o-2", 5)))
	event, _ := sevents.MarshalEvent(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)
	// Output:
	// charged o-1
	// charged o-2
	// duplicates: 1
	// {"batchItemFailures":[]} <nil>
}
