package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

type Order struct {
	OrderID string  `json:"orderId"`
	Amount  float64 `json:"amount"`
}

func order(id string, amount float64) []byte {
	b, _ := json.Marshal(Order{id, amount})
	return b
}

// Examples keep logs out of their output.
var exampleOpts = []handlers.Option{
	handlers.WithLogger(slog.New(slog.DiscardHandler)),
}

func charge(o Order) error {
	if o.Amount <= 0 {
		return batch.Permanent(fmt.Errorf("order %s: amount must be positive", o.OrderID))
	}
	fmt.Println("charged", o.OrderID)
	return nil
}

// A Kinesis handler processes a shard's records in order and stops at the
// first failure, which it reports: Lambda retries the shard from there.
func ExampleMustKinesis() {
	h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[Order]) error {
		return charge(r.Value)
	}, exampleOpts...)
	// In main: lambda.Start(h)

	b := &sevents.KinesisBuilder{}
	b.Add("customer-1", order("o-1", 10)).Add("customer-2", order("o-2", -1)).Add("customer-1", order("o-3", 5))
	event, _ := json.Marshal(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)
	// Output:
	// charged o-1
	// {"batchItemFailures":[{"itemIdentifier":"49590338271490256608559690000000000000000000000000000001"}]} <nil>
}

// An SQS handler processes messages independently and reports each failure.
func ExampleMustSQS() {
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[Order]) error {
		return charge(r.Value)
	}, append(exampleOpts, handlers.WithConcurrency(1))...)

	b := &sevents.SQSBuilder{}
	b.Add(string(order("o-1", -1))).Add(string(order("o-2", 7))).Add("not json")
	event, _ := sevents.MarshalEvent(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)
	// Output:
	// charged o-2
	// {"batchItemFailures":[{"itemIdentifier":"00000001-0000-4000-8000-000000000001"},{"itemIdentifier":"00000003-0000-4000-8000-000000000003"}]} <nil>
}

// On a FIFO queue, WithSkipGroupOnFailure lets other message groups go on
// after a failure; the failed group's later messages are reported unprocessed.
func ExampleMustSQSFIFO() {
	h := handlers.MustSQSFIFO(func(ctx context.Context, r handlers.SQSRecord[Order]) error {
		return charge(r.Value)
	}, append(exampleOpts, handlers.WithSkipGroupOnFailure())...)

	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}
	b.AddFIFO(string(order("a-1", -1)), "customer-a", "")
	b.AddFIFO(string(order("b-1", 3)), "customer-b", "")
	b.AddFIFO(string(order("a-2", 4)), "customer-a", "")
	event, _ := sevents.MarshalEvent(b.Event())
	out, _ := h.Invoke(context.Background(), event)
	fmt.Println(string(out))
	// Output:
	// charged b-1
	// {"batchItemFailures":[{"itemIdentifier":"00000001-0000-4000-8000-000000000001"},{"itemIdentifier":"00000003-0000-4000-8000-000000000003"}]}
}

type Customer struct {
	ID    string `dynamodbav:"pk"`
	Email string `dynamodbav:"email"`
}

// A DynamoDB Streams handler sees the item before and after the change,
// decoded with the same dynamodbav tags the table uses.
func ExampleMustDynamoDB() {
	h := handlers.MustDynamoDB(func(ctx context.Context, r handlers.DynamoDBRecord[Customer]) error {
		switch r.EventName() {
		case "INSERT":
			fmt.Println("welcome", r.New.Email)
		case "MODIFY":
			fmt.Println("email changed from", r.Old.Email, "to", r.New.Email)
		case "REMOVE":
			fmt.Println("goodbye", r.Old.ID, "expired:", r.Expired())
		}
		return nil
	}, exampleOpts...)

	b := &sevents.DynamoDBBuilder{}
	key := map[string]string{"pk": "c-1"}
	b.Insert(key, Customer{"c-1", "a@example.com"})
	b.Modify(key, Customer{"c-1", "a@example.com"}, Customer{"c-1", "b@example.com"})
	b.Expire(key, Customer{"c-1", "b@example.com"})
	event, _ := json.Marshal(b.Event())
	out, _ := h.Invoke(context.Background(), event)
	fmt.Println(string(out))
	// Output:
	// welcome a@example.com
	// email changed from a@example.com to b@example.com
	// goodbye c-1 expired: true
	// {"batchItemFailures":[]}
}

// A Kafka handler runs partitions concurrently, each in offset order, and
// reports {partition, offset} for a failed record and the rest of its
// partition.
func ExampleMustKafka() {
	h := handlers.MustKafka(func(ctx context.Context, r handlers.KafkaRecord[Order]) error {
		if r.Value.Amount <= 0 {
			return errors.New("bad amount")
		}
		return nil
	}, exampleOpts...)

	b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/orders/1"}
	b.Add("orders", 0, nil, order("o-1", 1)).Add("orders", 0, nil, order("o-2", 0)).Add("orders", 0, nil, order("o-3", 2))
	b.Add("orders", 1, nil, order("o-4", 3))
	event, _ := sevents.MarshalEvent(b.Event())
	out, _ := h.Invoke(context.Background(), event)
	fmt.Println(string(out))
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}},{"itemIdentifier":{"partition":"orders-0","offset":2}}]}
}

// Transient errors are retried in process, with backoff, before the record
// fails.
func ExampleWithRetry() {
	calls := 0
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[Order]) error {
		calls++
		if calls < 3 {
			return batch.Transient(errors.New("throttled"))
		}
		return nil
	}, append(exampleOpts, handlers.WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Millisecond)}))...)

	event, _ := sevents.MarshalEvent((&sevents.SQSBuilder{}).Add(string(order("o-1", 1))).Event())
	out, _ := h.Invoke(context.Background(), event)
	fmt.Println(string(out), "after", calls, "calls")
	// Output:
	// {"batchItemFailures":[]} after 3 calls
}

// WithOnBatch shows what became of each record: its outcome, how many times
// it ran in this invocation, and whether the answer to Lambda names it.
func ExampleWithOnBatch() {
	calls := map[string]int{}
	h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[Order]) error {
		calls[r.Value.OrderID]++
		if r.Value.OrderID == "o-2" && calls["o-2"] == 1 {
			return batch.Transient(errors.New("throttled"))
		}
		return charge(r.Value)
	}, append(exampleOpts,
		handlers.WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Millisecond)}),
		handlers.WithOnBatch(func(ctx context.Context, rep handlers.BatchReport) {
			for _, r := range rep.Records {
				fmt.Printf("...%s key=%s %s attempts=%d reported=%v\n", r.ID[len(r.ID)-3:], r.Key, r.Outcome, r.Attempts, r.Reported)
			}
		}))...)

	b := &sevents.KinesisBuilder{}
	b.Add("c-1", order("o-1", 10)).Add("c-2", order("o-2", 20)).Add("c-1", order("o-3", -1)).Add("c-2", order("o-4", 5))
	event, _ := json.Marshal(b.Event())
	h.Invoke(context.Background(), event)
	// Output:
	// charged o-1
	// charged o-2
	// ...000 key=c-1 succeeded attempts=1 reported=false
	// ...001 key=c-2 succeeded attempts=2 reported=false
	// ...002 key=c-1 failed attempts=1 reported=true
	// ...003 key=c-2 not-attempted attempts=0 reported=false
}

// A middleware of your own wraps the function before the handler takes
// it; it runs innermost, once per attempt, inside the handler's retries.
func ExampleMustSQS_middleware() {
	logged := func(next batch.Handler[handlers.SQSRecord[Order]]) batch.Handler[handlers.SQSRecord[Order]] {
		return batch.HandlerFunc[handlers.SQSRecord[Order]](func(ctx context.Context, r handlers.SQSRecord[Order]) error {
			err := next.Handle(ctx, r)
			fmt.Println("order", r.Value.OrderID, "error:", err)
			return err
		})
	}
	calls := 0
	handle := func(ctx context.Context, r handlers.SQSRecord[Order]) error {
		if calls++; calls == 1 {
			return batch.Transient(errors.New("throttled"))
		}
		return nil
	}
	h := handlers.MustSQS(logged(batch.HandlerFunc[handlers.SQSRecord[Order]](handle)).Handle,
		append(exampleOpts, handlers.WithRetry(batch.RetryPolicy{Retries: 1, Backoff: batch.Exponential(time.Millisecond)}))...)

	event, _ := sevents.MarshalEvent((&sevents.SQSBuilder{}).Add(string(order("o-1", 1))).Event())
	out, _ := h.Invoke(context.Background(), event)
	fmt.Println(string(out))
	// Output:
	// order o-1 error: throttled
	// order o-1 error: <nil>
	// {"batchItemFailures":[]}
}
