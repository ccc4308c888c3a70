package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// ddbOrder is the order as a DynamoDB item.
type ddbOrder struct {
	OrderID    string  `dynamodbav:"orderId"`
	CustomerID string  `dynamodbav:"customerId"`
	Amount     float64 `dynamodbav:"amount"`
	Currency   string  `dynamodbav:"currency"`
	Status     string  `dynamodbav:"status"`
	Version    int     `dynamodbav:"version"`
	CreatedAt  string  `dynamodbav:"createdAt"`
}

// dynamodbFixture is a 10,000-record NEW_AND_OLD_IMAGES event of MODIFY
// records of orders.
func dynamodbFixture(tb testing.TB, n int) []byte {
	rnd := rand.New(rand.NewPCG(5, 6))
	b := &sevents.DynamoDBBuilder{}
	for i := range n {
		o := ddbOrder{OrderID: fmt.Sprintf("ord-d-%08d", i), CustomerID: fmt.Sprintf("cust-%06d", rnd.IntN(50000)), Amount: float64(rnd.IntN(100000)) / 100,
			Currency: "EUR", Status: "PLACED", Version: 1, CreatedAt: "2025-11-03T09:30:00.000Z"}
		nw := o
		nw.Status, nw.Version = "PAID", 2
		if err := b.Modify(map[string]string{"orderId": o.OrderID}, o, nw); err != nil {
			tb.Fatal(err)
		}
	}
	raw, err := json.Marshal(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// benchEvent returns the event file named by the environment variable env
// (bench/gen writes them for make bench-peers), or else gen().
func benchEvent(tb testing.TB, env string, gen func() []byte) []byte {
	tb.Helper()
	if path := os.Getenv(env); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("%s: %v", env, err)
		}
		return raw
	}
	return gen()
}

func BenchmarkDynamoDB10k(b *testing.B) {
	raw := benchEvent(b, "SLUICE_BENCH_DYNAMODB", func() []byte { return dynamodbFixture(b, 10000) })
	h, err := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbOrder]) error {
		benchSink += r.New.Amount - r.Old.Amount
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	reportPerRecord(b, 10000)
}

// BenchmarkDynamoDB10kHandLoop: encoding/json into events.DynamoDBEvent,
// both images of each record into the struct (with events.UnmarshalImage,
// attributevalue's rules), the response with encoding/json.
func BenchmarkDynamoDB10kHandLoop(b *testing.B) {
	raw := benchEvent(b, "SLUICE_BENCH_DYNAMODB", func() []byte { return dynamodbFixture(b, 10000) })
	b.ReportAllocs()
	for b.Loop() {
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			b.Fatal(err)
		}
		resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
		for i := range ev.Records {
			var nw, old ddbOrder
			if sevents.UnmarshalImage(ev.Records[i].Change.NewImage, &nw) != nil || sevents.UnmarshalImage(ev.Records[i].Change.OldImage, &old) != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[i].Change.SequenceNumber})
				break
			}
			benchSink += nw.Amount - old.Amount
		}
		if _, err := json.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, 10000)
}

// kafkaFixture is a 10,000-record MSK event of orders over 4 partitions.
func kafkaFixture(tb testing.TB, n int) []byte {
	rnd := rand.New(rand.NewPCG(7, 8))
	b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/orders/abc"}
	for i := range n {
		o := benchOrder{OrderID: fmt.Sprintf("ord-f-%08d", i), CustomerID: fmt.Sprintf("cust-%06d", rnd.IntN(50000)), Currency: "EUR",
			CreatedAt: "2025-11-03T09:30:00.000Z", Amount: 12.5,
			Items: []benchItem{{SKU: "SKU-000001", Qty: 1, Price: 1}, {SKU: "SKU-000002", Qty: 2, Price: 2}, {SKU: "SKU-000003", Qty: 3, Price: 3}}}
		v, _ := json.Marshal(o)
		b.Add("orders", int64(i%4), []byte(o.CustomerID), v)
	}
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func BenchmarkKafka10k(b *testing.B) {
	raw := benchEvent(b, "SLUICE_BENCH_KAFKA", func() []byte { return kafkaFixture(b, 10000) })
	h, err := NewKafka(func(ctx context.Context, r KafkaRecord[benchOrder]) error {
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
	reportPerRecord(b, 10000)
}

// BenchmarkKafka10kHandLoop: encoding/json into events.KafkaEvent, each
// value base64-decoded and decoded into the order, the response marshalled.
func BenchmarkKafka10kHandLoop(b *testing.B) {
	raw := benchEvent(b, "SLUICE_BENCH_KAFKA", func() []byte { return kafkaFixture(b, 10000) })
	b.ReportAllocs()
	for b.Loop() {
		var ev events.KafkaEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			b.Fatal(err)
		}
		resp := sevents.KafkaEventResponse{BatchItemFailures: []sevents.KafkaBatchItemFailure{}}
		for part, recs := range ev.Records {
			for _, r := range recs {
				v, err := base64.StdEncoding.DecodeString(r.Value)
				var o benchOrder
				if err == nil {
					err = json.Unmarshal(v, &o)
				}
				if err != nil {
					resp.BatchItemFailures = append(resp.BatchItemFailures, sevents.KafkaBatchItemFailure{ItemIdentifier: sevents.KafkaItemIdentifier{Partition: part, Offset: r.Offset}})
					break
				}
				benchSink += o.Amount
			}
		}
		if _, err := json.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, 10000)
}
