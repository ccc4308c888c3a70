package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/sqsdest"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

// requestStore counts attempts-store requests.
type requestStore struct {
	dlq.AttemptsStore
	n atomic.Int64
}

func (s *requestStore) Begin(ctx context.Context, key string, now time.Time) (dlq.Attempts, error) {
	s.n.Add(1)
	return s.AttemptsStore.Begin(ctx, key, now)
}

func (s *requestStore) Fail(ctx context.Context, key string, counted bool, f dlq.Failure) (dlq.Attempts, error) {
	s.n.Add(1)
	return s.AttemptsStore.Fail(ctx, key, counted, f)
}

// acceptAll is an SQS client that accepts every SendMessageBatch, counting
// the calls (the destination's requests).
type acceptAll struct{ n atomic.Int64 }

func (c *acceptAll) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.n.Add(1)
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

type benchCmd struct {
	ID     string `json:"id"`
	Poison bool   `json:"poison,omitempty"`
}

// BenchmarkDeadLetterRequests counts, per record, the requests quarantine
// makes to the attempts store and to the SQS destination, for a
// 10,000-record Kinesis batch that is healthy and one with 1% poison
// records (permanent failures), with dlq.WithMaxAttempts(3).
func BenchmarkDeadLetterRequests(b *testing.B) {
	for _, poisonEvery := range []int{0, 100} {
		name := "healthy"
		if poisonEvery > 0 {
			name = "poison1pct"
		}
		b.Run(name, func(b *testing.B) {
			const n = 10_000
			kb := &sevents.KinesisBuilder{}
			for i := range n {
				data, _ := json.Marshal(benchCmd{ID: fmt.Sprint(i), Poison: poisonEvery > 0 && i%poisonEvery == 50})
				kb.Add(fmt.Sprintf("pk-%d", i%16), data)
			}
			raw, _ := json.Marshal(kb.Event())
			store := &requestStore{AttemptsStore: dlq.NewMemory(0)}
			client := &acceptAll{}
			dest, err := sqsdest.New(client, "https://sqs.us-east-1.amazonaws.com/123456789012/dlq")
			if err != nil {
				b.Fatal(err)
			}
			var quarantined atomic.Int64
			h, err := handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[benchCmd]) error {
				if r.Value.Poison {
					return batch.Permanent(fmt.Errorf("order %s is invalid", r.Value.ID))
				}
				return nil
			}, handlers.WithLogger(slog.New(slog.DiscardHandler)),
				handlers.WithOnBatch(func(_ context.Context, r handlers.BatchReport) { quarantined.Add(int64(r.Quarantined)) }),
				handlers.WithDeadLetters(dest, dlq.WithMaxAttempts(3), dlq.WithAttempts(store)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			invocations := 0
			for b.Loop() {
				if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
					b.Fatalf("%s %v", out, err)
				}
				invocations++
			}
			records := float64(invocations * n)
			b.ReportMetric(float64(store.n.Load())/records, "store-req/record")
			b.ReportMetric(float64(client.n.Load())/records, "dest-req/record")
			b.ReportMetric(float64(store.n.Load())/float64(invocations), "store-req/invocation")
			b.ReportMetric(float64(quarantined.Load())/float64(invocations), "quarantined/invocation")
		})
	}
}
