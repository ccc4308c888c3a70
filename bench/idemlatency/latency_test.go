package idemlatency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/bench/latencyproxy"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/idempotency/redisstore"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

type order struct {
	OrderID string  `json:"orderId"`
	Amount  float64 `json:"amount"`
}

func rtt(b *testing.B) time.Duration {
	v := os.Getenv("SLUICE_BENCH_RTT")
	if v == "" {
		return 50 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("SLUICE_BENCH_RTT=%q: want a duration such as 50ms", v)
	}
	return d
}

// firstRecords returns an event of the first n records of the file env
// names, or of gen's.
func firstRecords(b testing.TB, env string, n int, gen func() ([]byte, error)) []byte {
	var raw []byte
	var err error
	if path := os.Getenv(env); path != "" {
		raw, err = os.ReadFile(path)
	} else {
		raw, err = gen()
	}
	if err != nil {
		b.Fatalf("%s: %v", env, err)
	}
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatalf("%s: %v", env, err)
	}
	if len(ev.Records) < n {
		b.Fatalf("%s: %d records, want at least %d", env, len(ev.Records), n)
	}
	ev.Records = ev.Records[:n]
	out, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func orderJSON(i int, rnd *rand.Rand) []byte {
	return fmt.Appendf(nil, `{"orderId":"ord-%08d","customerId":"cust-%06d","amount":12.5,"currency":"EUR"}`, i, rnd.IntN(50000))
}

func sqsEvent(b testing.TB) []byte {
	return firstRecords(b, "SLUICE_BENCH_SQS", 100, func() ([]byte, error) {
		rnd := rand.New(rand.NewPCG(3, 4))
		sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
		for i := range 100 {
			sb.Add(string(orderJSON(i, rnd)))
		}
		return sevents.MarshalEvent(sb.Event())
	})
}

func kinesisEvent(b *testing.B) []byte {
	return firstRecords(b, "SLUICE_BENCH_KINESIS", 40, func() ([]byte, error) {
		rnd := rand.New(rand.NewPCG(1, 2))
		kb := &sevents.KinesisBuilder{}
		for i := range 40 {
			kb.Add(fmt.Sprintf("cust-%d", rnd.IntN(50)), orderJSON(i, rnd))
		}
		return sevents.MarshalEvent(kb.Event())
	})
}

// counter counts a store's requests and its write requests (a
// transaction of several completes counts once).
type counter struct{ requests, writes atomic.Int64 }

func (c *counter) reset() { c.requests.Store(0); c.writes.Store(0) }

// backend is one store behind a latency proxy; fresh returns a store with
// no records, setup outside the timer.
type backend struct {
	name  string
	count *counter
	fresh func(b testing.TB) idempotency.Store
	close func()
}

func dynamoBackend(b testing.TB, d time.Duration) backend {
	ep := os.Getenv("SLUICE_BENCH_DYNAMODB")
	if ep == "" {
		ep = servers.DynamoDB(b).Endpoint
	}
	p, err := latencyproxy.Start(strings.TrimPrefix(ep, "http://"), d)
	if err != nil {
		b.Fatal(err)
	}
	cfg := func(endpoint string) aws.Config {
		return aws.Config{Region: servers.Region, BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider(servers.AccessKeyID, servers.SecretAccessKey, "")}
	}
	c := &counter{}
	db := dynamodb.NewFromConfig(cfg("http://"+p.Addr()), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("benchRequests",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					c.requests.Add(1)
					switch middleware.GetOperationName(ctx) {
					case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems":
						c.writes.Add(1)
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	})
	admin := dynamodb.NewFromConfig(cfg(ep)) // set-up goes around the proxy
	var tables []string
	n, start := 0, time.Now().UnixNano() // names no earlier backend used

	return backend{name: "dynamodb", count: c,
		fresh: func(b testing.TB) idempotency.Store {
			n++
			table := fmt.Sprintf("bench-latency-%d-%d-%d", os.Getpid(), start, n)
			if err := dynamodbstore.CreateTable(context.Background(), admin, table); err != nil {
				b.Fatal(err)
			}
			tables = append(tables, table)
			s, err := dynamodbstore.New(db, table)
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		close: func() {
			for _, t := range tables {
				admin.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &t})
			}
			p.Close()
		}}
}

// redisHook counts commands; a pipeline is one request (one round trip).
type redisHook struct{ c *counter }

func (redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.requests.Add(1)
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			h.c.writes.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.requests.Add(1)
		return next(ctx, cmds)
	}
}

func redisBackend(b testing.TB, d time.Duration) backend {
	addr := os.Getenv("SLUICE_BENCH_REDIS")
	if addr == "" {
		addr = servers.Redis(b).Addr
	}
	p, err := latencyproxy.Start(addr, d)
	if err != nil {
		b.Fatal(err)
	}
	c := &counter{}
	// As redisstore advises: a pool of idempotency.DefaultInFlight
	// connections, or a batch's claims queue for one (go-redis opens 10 per
	// CPU by default).
	client := redis.NewClient(&redis.Options{Addr: p.Addr(), PoolSize: idempotency.DefaultInFlight})
	client.AddHook(redisHook{c})
	n, start := 0, time.Now().UnixNano() // a prefix no earlier backend used
	return backend{name: "redis", count: c,
		fresh: func(b testing.TB) idempotency.Store {
			n++
			s, err := redisstore.New(client, redisstore.WithPrefix(fmt.Sprintf("bench-latency:%d:%d:%d:", os.Getpid(), start, n)))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		close: func() { client.Close(); p.Close() }}
}

func backends(b testing.TB, d time.Duration) []backend {
	return []backend{dynamoBackend(b, d), redisBackend(b, d)}
}

// invoker is a handler built on a store, and how many times its function ran.
type invoker func(store idempotency.Store) (func(context.Context, []byte) ([]byte, error), *atomic.Int64)

// run times one batch per iteration on a fresh store (replay: after an
// untimed first pass) and reports the wall time in round trips and the
// store's requests per record.
func run(b *testing.B, be backend, d time.Duration, raw []byte, n int, replay bool, build invoker, okOut string) {
	var reqs, writes int64
	iter := 0
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		iter++
		invoke, calls := build(be.fresh(b))
		if replay {
			if out, err := invoke(ctx, raw); err != nil || string(out) != okOut {
				b.Fatalf("first pass: %s %v", out, err)
			}
		}
		be.count.reset()
		calls.Store(0)
		b.StartTimer()
		out, err := invoke(ctx, raw)
		b.StopTimer()
		if err != nil || string(out) != okOut {
			b.Fatalf("%s: %s %v", be.name, out, err)
		}
		want := int64(n)
		if replay {
			want = 0
		}
		if c := calls.Load(); c != want {
			b.Fatalf("%s: the function ran %d times, want %d", be.name, c, want)
		}
		reqs += be.count.requests.Load()
		writes += be.count.writes.Load()
		b.StartTimer()
	}
	b.StopTimer()
	k := float64(iter * n)
	b.ReportMetric(float64(reqs)/k, "requests/record")
	b.ReportMetric(float64(writes)/k, "writes/record")
	b.ReportMetric(float64(n), "records")
	if d > 0 {
		b.ReportMetric(float64(b.Elapsed())/float64(iter)/float64(d), "RTTs")
	}
}

var quiet = handlers.WithLogger(slog.New(slog.DiscardHandler))

func sqsHandler(b testing.TB) invoker {
	return func(store idempotency.Store) (func(context.Context, []byte) ([]byte, error), *atomic.Int64) {
		calls := &atomic.Int64{}
		var mu sync.Mutex
		var sum float64
		h, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[order]) error {
			calls.Add(1)
			mu.Lock()
			sum += r.Value.Amount
			mu.Unlock()
			return nil
		}, handlers.WithIdempotency(store), quiet)
		if err != nil {
			b.Fatal(err)
		}
		return h.Invoke, calls
	}
}

func kinesisHandler(b *testing.B) invoker {
	return func(store idempotency.Store) (func(context.Context, []byte) ([]byte, error), *atomic.Int64) {
		calls := &atomic.Int64{}
		var sum float64
		h, err := handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[order]) error {
			calls.Add(1)
			sum += r.Value.Amount
			return nil
		}, handlers.WithIdempotency(store), quiet)
		if err != nil {
			b.Fatal(err)
		}
		return h.Invoke, calls
	}
}

// BenchmarkLatencySQS100: SQS standard, 100 messages, first pass and
// replay, on each store behind the proxy.
func BenchmarkLatencySQS100(b *testing.B) {
	d := rtt(b)
	raw := sqsEvent(b)
	for _, be := range backends(b, d) {
		b.Run(be.name, func(b *testing.B) {
			for _, phase := range []string{"first", "replay"} {
				b.Run(phase, func(b *testing.B) {
					run(b, be, d, raw, 100, phase == "replay", sqsHandler(b), `{"batchItemFailures":[]}`)
				})
			}
		})
		be.close()
	}
}

// BenchmarkLatencyKinesis40: Kinesis, 40 records of one shard, first pass
// and replay, on each store behind the proxy.
func BenchmarkLatencyKinesis40(b *testing.B) {
	d := rtt(b)
	raw := kinesisEvent(b)
	for _, be := range backends(b, d) {
		b.Run(be.name, func(b *testing.B) {
			for _, phase := range []string{"first", "replay"} {
				b.Run(phase, func(b *testing.B) {
					run(b, be, d, raw, 40, phase == "replay", kinesisHandler(b), `{"batchItemFailures":[]}`)
				})
			}
		})
		be.close()
	}
}
