package dynamodbstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

type benchOrder struct {
	OrderID    string  `json:"orderId"`
	CustomerID string  `json:"customerId"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency"`
	CreatedAt  string  `json:"createdAt"`
	Items      []struct {
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	} `json:"items"`
}

// sqsEvent returns a 1,000-message SQS event of orders: the file
// SLUICE_BENCH_SQS names (bench/gen's sqs-1k.json), or one of that shape.
func sqsEvent(b *testing.B) []byte {
	if path := os.Getenv("SLUICE_BENCH_SQS"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatalf("SLUICE_BENCH_SQS: %v", err)
		}
		return raw
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	for i := range 1000 {
		sb.Add(fmt.Sprintf(`{"orderId":"ord-s-%08d","customerId":"cust-%06d","amount":12.5,"currency":"EUR",`+
			`"createdAt":"2025-11-03T09:30:00.000Z","items":[{"sku":"SKU-000001","qty":1,"price":1},`+
			`{"sku":"SKU-000002","qty":2,"price":2},{"sku":"SKU-000003","qty":3,"price":3}]}`, i, rnd.IntN(50000)))
	}
	raw, err := sevents.MarshalEvent(sb.Event())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// meter counts DynamoDB requests (HTTP attempts, after the SDK's retries)
// per operation, and the capacity units DynamoDB reports. It asks for
// ReturnConsumedCapacity=TOTAL on each request, which changes what
// DynamoDB returns, not what it does. A refused conditional write returns
// no capacity; it costs one write unit per KB of the item (AWS bills a
// failed conditional write as a write), so meter counts 1 per refusal:
// every item here is under 1 KB.
type meter struct {
	mu       sync.Mutex
	requests map[string]int
	wcu, rcu float64
	refused  int
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests, m.wcu, m.rcu, m.refused = map[string]int{}, 0, 0, 0
}

func (m *meter) install(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("benchCapacity",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch p := in.Parameters.(type) {
				case *dynamodb.PutItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
				case *dynamodb.UpdateItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
				case *dynamodb.DeleteItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
				case *dynamodb.BatchGetItemInput:
					p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
				}
				out, md, err := next.HandleInitialize(ctx, in)
				write := func(c *types.ConsumedCapacity) {
					if c != nil {
						m.mu.Lock()
						m.wcu += aws.ToFloat64(c.CapacityUnits)
						m.mu.Unlock()
					}
				}
				switch r := out.Result.(type) {
				case *dynamodb.PutItemOutput:
					write(r.ConsumedCapacity)
				case *dynamodb.UpdateItemOutput:
					write(r.ConsumedCapacity)
				case *dynamodb.DeleteItemOutput:
					write(r.ConsumedCapacity)
				case *dynamodb.BatchGetItemOutput:
					m.mu.Lock()
					for _, c := range r.ConsumedCapacity {
						m.rcu += aws.ToFloat64(c.CapacityUnits)
					}
					m.mu.Unlock()
				}
				var ccf *types.ConditionalCheckFailedException
				if errors.As(err, &ccf) {
					m.mu.Lock()
					m.refused++
					m.wcu++
					m.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
		if err != nil {
			return err
		}
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("benchRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				op := middleware.GetOperationName(ctx)
				m.mu.Lock()
				m.requests[op]++
				m.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// benchConfig is DynamoDB Local: the one SLUICE_BENCH_DYNAMODB names
// (scripts/bench-peers.sh starts one for both sides), or a fresh one.
func benchConfig(b *testing.B) aws.Config {
	if ep := os.Getenv("SLUICE_BENCH_DYNAMODB"); ep != "" {
		return aws.Config{Region: servers.Region, BaseEndpoint: aws.String(ep),
			Credentials: credentials.NewStaticCredentialsProvider(servers.AccessKeyID, servers.SecretAccessKey, "")}
	}
	return servers.DynamoDB(b).AWSConfig()
}

// BenchmarkSQS1kIdempotent runs a 1,000-message SQS batch through
// handlers.NewSQS with WithIdempotency on the DynamoDB store (DynamoDB
// Local), as a function would: first with every key new, then the same
// batch again (every key completed). Each iteration has a fresh table.
// The handler has the defaults (8 messages at once);
// SLUICE_BENCH_CONCURRENCY sets WithConcurrency instead. It reports, per record, the requests (HTTP attempts), the write requests,
// and the write and read units, and per batch the wall time (ns/op).
func BenchmarkSQS1kIdempotent(b *testing.B) {
	raw := sqsEvent(b)
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatal(err)
	}
	n := len(ev.Records)
	cfg := benchConfig(b)
	m := &meter{}
	m.reset()
	db := dynamodb.NewFromConfig(cfg, m.install)
	admin := dynamodb.NewFromConfig(cfg)
	ctx := context.Background()
	for _, phase := range []string{"first", "replay"} {
		b.Run(phase, func(b *testing.B) {
			var calls atomic.Int64
			var sum float64
			var mu sync.Mutex
			fn := func(ctx context.Context, r handlers.SQSRecord[benchOrder]) error {
				calls.Add(1)
				mu.Lock()
				sum += r.Value.Amount
				mu.Unlock()
				return nil
			}
			var reqs, writes, wcu, rcu float64
			iter := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				iter++
				table := fmt.Sprintf("bench-idem-%s-%d-%d", phase, os.Getpid(), iter)
				if err := dynamodbstore.CreateTable(ctx, admin, table); err != nil {
					b.Fatal(err)
				}
				store, err := dynamodbstore.New(db, table)
				if err != nil {
					b.Fatal(err)
				}
				opts := []handlers.Option{handlers.WithIdempotency(store), handlers.WithLogger(slog.New(slog.DiscardHandler))}
				if c := os.Getenv("SLUICE_BENCH_CONCURRENCY"); c != "" {
					k, err := strconv.Atoi(c)
					if err != nil {
						b.Fatalf("SLUICE_BENCH_CONCURRENCY=%q: %v", c, err)
					}
					opts = append(opts, handlers.WithConcurrency(k))
				}
				h, err := handlers.NewSQS(fn, opts...)
				if err != nil {
					b.Fatal(err)
				}
				if phase == "replay" {
					if out, err := h.Invoke(ctx, raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
						b.Fatalf("first pass: %s %v", out, err)
					}
				}
				m.reset()
				calls.Store(0)
				b.StartTimer()
				out, err := h.Invoke(ctx, raw)
				b.StopTimer()
				if err != nil || string(out) != `{"batchItemFailures":[]}` {
					b.Fatalf("%s: %s %v", phase, out, err)
				}
				want := int64(n)
				if phase == "replay" {
					want = 0
				}
				if c := calls.Load(); c != want {
					b.Fatalf("%s: the function ran %d times, want %d", phase, c, want)
				}
				m.mu.Lock()
				for op, c := range m.requests {
					reqs += float64(c)
					if op == "PutItem" || op == "UpdateItem" || op == "DeleteItem" {
						writes += float64(c)
					}
				}
				wcu += m.wcu
				rcu += m.rcu
				m.mu.Unlock()
				if _, err := admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			k := float64(iter * n)
			b.ReportMetric(reqs/k, "requests/record")
			b.ReportMetric(writes/k, "writes/record")
			b.ReportMetric(wcu/k, "WCU/record")
			b.ReportMetric(rcu/k, "RCU/record")
			b.ReportMetric(float64(n), "records")
		})
	}
}
