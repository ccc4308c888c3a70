package dynamodbstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/bench/latencyproxy"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// latencyRTT is the round trip the loopback proxy adds in front of
// DynamoDB Local; wall time / latencyRTT is the critical path in round
// trips ("rtts/batch").
const latencyRTT = 50 * time.Millisecond

// BenchmarkIdemLatencyDynamoDB runs batches through handlers with the
// DynamoDB store, DynamoDB Local behind a 50 ms loopback latency proxy.
func BenchmarkIdemLatencyDynamoDB(b *testing.B) {
	srv := servers.DynamoDB(b)
	proxy, err := latencyproxy.Start(strings.TrimPrefix(srv.Endpoint, "http://"), latencyRTT)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { proxy.Close() })
	cfg := srv.AWSConfig()
	cfg.BaseEndpoint = aws.String("http://" + proxy.Addr())
	// As docs/handlers.md says: allow idempotency.DefaultInFlight
	// connections to stay open, so claims ahead reuse them.
	cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = idempotency.DefaultInFlight
	})
	db := dynamodb.NewFromConfig(cfg)
	admin := dynamodb.NewFromConfig(srv.AWSConfig())
	ctx := context.Background()

	sqs := func(n int) []byte {
		sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
		for i := range n {
			sb.Add(fmt.Sprintf(`{"orderId":"ord-%06d","amount":12.5}`, i))
		}
		raw, _ := sevents.MarshalEvent(sb.Event())
		return raw
	}
	kinesis := func(n int) []byte {
		kb := &sevents.KinesisBuilder{}
		for i := range n {
			kb.Add("pk", fmt.Appendf(nil, `{"orderId":"ord-%06d","amount":12.5}`, i))
		}
		raw, _ := sevents.MarshalEvent(kb.Event())
		return raw
	}
	type order struct {
		OrderID string  `json:"orderId"`
		Amount  float64 `json:"amount"`
	}
	for _, tc := range []struct {
		name   string
		n      int
		replay bool
	}{
		{"sqs100/first", 100, false},
		{"sqs100/replay", 100, true},
		{"kinesis40/first", 40, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw := sqs(tc.n)
			if strings.HasPrefix(tc.name, "kinesis") {
				raw = kinesis(tc.n)
			}
			var wall time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				table := fmt.Sprintf("bench-lat-%d-%d", os.Getpid(), time.Now().UnixNano())
				if err := dynamodbstore.CreateTable(ctx, admin, table); err != nil {
					b.Fatal(err)
				}
				store, err := dynamodbstore.New(db, table)
				if err != nil {
					b.Fatal(err)
				}
				opts := []handlers.Option{handlers.WithIdempotency(store), handlers.WithLogger(slog.New(slog.DiscardHandler))}
				var invoke func() ([]byte, error)
				if strings.HasPrefix(tc.name, "kinesis") {
					h, err := handlers.NewKinesis(func(context.Context, handlers.KinesisRecord[order]) error { return nil }, opts...)
					if err != nil {
						b.Fatal(err)
					}
					invoke = func() ([]byte, error) { return h.Invoke(ctx, raw) }
				} else {
					h, err := handlers.NewSQS(func(context.Context, handlers.SQSRecord[order]) error { return nil }, opts...)
					if err != nil {
						b.Fatal(err)
					}
					invoke = func() ([]byte, error) { return h.Invoke(ctx, raw) }
				}
				if tc.replay {
					if out, err := invoke(); err != nil || string(out) != `{"batchItemFailures":[]}` {
						b.Fatalf("first pass: %s %v", out, err)
					}
				}
				b.StartTimer()
				start := time.Now()
				out, err := invoke()
				wall += time.Since(start)
				b.StopTimer()
				if err != nil || string(out) != `{"batchItemFailures":[]}` {
					b.Fatalf("%s %v", out, err)
				}
				b.StartTimer()
			}
			per := wall / time.Duration(max(b.N, 1))
			b.ReportMetric(float64(per)/float64(time.Millisecond), "ms/batch")
			b.ReportMetric(float64(per)/float64(latencyRTT), "rtts/batch")
			b.ReportMetric(float64(per)/float64(latencyRTT)/float64(tc.n), "rtts/record")
		})
	}
}
