package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
)

// kinesisKPLFixture is kinesisFixture's n orders, with their partition
// keys, aggregated as the KPL does by default: user records packed into
// aggregates of at most 51,200 bytes (AggregationMaxSize), or of at most
// per user records when per > 0.
func kinesisKPLFixture(tb testing.TB, n, per int) []byte {
	tb.Helper()
	var plain events.KinesisEvent
	if err := json.Unmarshal(kinesisFixture(tb, n), &plain); err != nil {
		tb.Fatal(err)
	}
	first := plain.Records[0]
	b := &sevents.KinesisBuilder{StreamARN: first.EventSourceArn, ShardID: "shardId-000000000003", InvokeIdentityARN: first.InvokeIdentityArn}
	var users []kpl.Record
	size := 0
	flush := func() {
		if len(users) > 0 {
			b.AddAggregated(users...)
			users, size = nil, 0
		}
	}
	for _, r := range plain.Records {
		add := len(r.Kinesis.Data) + len(r.Kinesis.PartitionKey) + 16
		if per > 0 && len(users) == per || per == 0 && size+add > 51200 {
			flush()
		}
		users = append(users, kpl.Record{PartitionKey: r.Kinesis.PartitionKey, Data: r.Kinesis.Data})
		size += add
	}
	flush()
	raw, err := json.Marshal(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func benchKPL(b *testing.B, per int) {
	const n = 10000
	raw := kinesisKPLFixture(b, n, per)
	count := 0
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[benchOrder]) error {
		benchSink += r.Value.Amount
		count++
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` || count != n {
		b.Fatalf("%s %v: %d user records", out, err, count)
	}
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

// BenchmarkKinesisKPL10k is BenchmarkKinesis10k's 10,000 orders in KPL
// aggregates of the KPL's default size (51,200 bytes, about 180 orders):
// ns/record is per user record.
func BenchmarkKinesisKPL10k(b *testing.B) { benchKPL(b, 0) }

// BenchmarkKinesisKPL10kSmall is the same in aggregates of 4 orders, where
// the cost of each aggregate (its MD5, its tables) weighs most.
func BenchmarkKinesisKPL10kSmall(b *testing.B) { benchKPL(b, 4) }
