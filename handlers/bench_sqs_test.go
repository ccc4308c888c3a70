package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// sqsFixture returns a 1,000-message SQS event of orders: the file named by
// SLUICE_BENCH_SQS (such as the peers' sqs-1k.json), or one generated in
// the same shape.
func sqsFixture(tb testing.TB, n int) []byte {
	tb.Helper()
	if path := os.Getenv("SLUICE_BENCH_SQS"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("SLUICE_BENCH_SQS: %v", err)
		}
		return raw
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	for i := range n {
		o := benchOrder{OrderID: fmt.Sprintf("ord-s-%08d", i), CustomerID: fmt.Sprintf("cust-%06d", rnd.IntN(50000)), Currency: "EUR",
			CreatedAt: "2025-11-03T09:30:00.000Z", Amount: 12.5,
			Items: []benchItem{{SKU: "SKU-000001", Qty: 1, Price: 1}, {SKU: "SKU-000002", Qty: 2, Price: 2}, {SKU: "SKU-000003", Qty: 3, Price: 3}}}
		body, _ := json.Marshal(o)
		b.Add(string(body))
	}
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkSQS1k is the whole path for a 1,000-message SQS batch, one
// message at a time (WithConcurrency(1), as the hand loop).
func BenchmarkSQS1k(b *testing.B) {
	raw := sqsFixture(b, 1000)
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[benchOrder]) error {
		benchSink += r.Value.Amount
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	reportPerRecord(b, 1000)
}

// BenchmarkSQS1kHandLoop is the same by hand with encoding/json.
func BenchmarkSQS1kHandLoop(b *testing.B) {
	raw := sqsFixture(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			b.Fatal(err)
		}
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for i := range ev.Records {
			var o benchOrder
			if err := json.Unmarshal([]byte(ev.Records[i].Body), &o); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
				continue
			}
			benchSink += o.Amount
		}
		if _, err := json.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, 1000)
}
