package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// benchItem and benchOrder are the ~267-byte order payload of the peer
// benchmarks (make bench-peers).
type benchItem struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type benchOrder struct {
	OrderID    string      `json:"orderId"`
	CustomerID string      `json:"customerId"`
	Amount     float64     `json:"amount"`
	Currency   string      `json:"currency"`
	Items      []benchItem `json:"items"`
	CreatedAt  string      `json:"createdAt"`
}

// kinesisFixture returns the raw bytes of a 10,000-record Kinesis event of
// orders: the file named by SLUICE_BENCH_KINESIS (such as the peers'
// kinesis-10k.json), or one generated in the same shape.
func kinesisFixture(tb testing.TB, n int) []byte {
	tb.Helper()
	if path := os.Getenv("SLUICE_BENCH_KINESIS"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("SLUICE_BENCH_KINESIS: %v", err)
		}
		return raw
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 11, 3, 9, 30, 0, 0, time.UTC)
	at := base
	b := &sevents.KinesisBuilder{
		StreamARN:         "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
		ShardID:           "shardId-000000000003",
		InvokeIdentityARN: "arn:aws:iam::123456789012:role/orders-consumer",
		Clock:             func() time.Time { return at },
	}
	currencies := []string{"USD", "EUR", "GBP", "JPY"}
	for i := range n {
		at = base.Add(time.Duration(i) * 3 * time.Millisecond)
		o := benchOrder{
			OrderID:    fmt.Sprintf("ord-k-%08d", i),
			CustomerID: fmt.Sprintf("cust-%06d", rnd.IntN(50000)),
			Currency:   currencies[rnd.IntN(len(currencies))],
			CreatedAt:  at.Format("2006-01-02T15:04:05.000Z"),
		}
		var cents int64
		for range 3 {
			qty, pc := 1+rnd.IntN(5), int64(199+rnd.IntN(19800))
			o.Items = append(o.Items, benchItem{SKU: fmt.Sprintf("SKU-%06d", rnd.IntN(1000000)), Qty: qty, Price: float64(pc) / 100})
			cents += int64(qty) * pc
		}
		o.Amount = float64(cents) / 100
		data, _ := json.Marshal(o)
		b.Add(fmt.Sprintf("pk-%03d", rnd.IntN(100)), data)
	}
	raw, err := json.Marshal(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

var benchSink float64

func reportPerRecord(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
}

// BenchmarkKinesis10k is the whole path Lambda pays for a 10,000-record
// batch: raw event bytes in, response bytes out, every order decoded into a
// struct, a trivial function per record.
func BenchmarkKinesis10k(b *testing.B) {
	raw := kinesisFixture(b, 10000)
	var n int
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[benchOrder]) error {
		benchSink += r.Value.Amount
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	var probe events.KinesisEvent
	if err := json.Unmarshal(raw, &probe); err != nil {
		b.Fatal(err)
	}
	n = len(probe.Records)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		out, err := h.Invoke(context.Background(), raw)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	reportPerRecord(b, n)
	b.ReportMetric(float64(testing.AllocsPerRun(1, func() { h.Invoke(context.Background(), raw) }))/float64(n), "allocs/record")
}

// BenchmarkKinesis10kHandLoop is the same work written by hand: decode the
// event with encoding/json into events.KinesisEvent, decode each order, build
// the response with encoding/json.
func BenchmarkKinesis10kHandLoop(b *testing.B) {
	raw := kinesisFixture(b, 10000)
	var probe events.KinesisEvent
	if err := json.Unmarshal(raw, &probe); err != nil {
		b.Fatal(err)
	}
	n := len(probe.Records)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	b.ResetTimer()
	for b.Loop() {
		var ev events.KinesisEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			b.Fatal(err)
		}
		resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
		for i := range ev.Records {
			var o benchOrder
			if err := json.Unmarshal(ev.Records[i].Kinesis.Data, &o); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: ev.Records[i].Kinesis.SequenceNumber})
				break
			}
			benchSink += o.Amount
		}
		if _, err := json.Marshal(resp); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, n)
}

func noEnv(string) (string, bool) { return "", false }
