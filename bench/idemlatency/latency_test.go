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

func sqsEvent(b testing.TB) []byte { return sqsEventN(b, 100) }

// sqsEventN is the first n messages of the SQS event (n at most 1,000).
func sqsEventN(b testing.TB, n int) []byte {
	return firstRecords(b, "SLUICE_BENCH_SQS", n, func() ([]byte, error) {
		rnd := rand.New(rand.NewPCG(3, 4))
		sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
		for i := range 1000 {
			sb.Add(string(orderJSON(i, rnd)))
		}
		return sevents.MarshalEvent(sb.Event())
	})
}

// kinesisEvent is the first n records of the Kinesis event (one shard; n
// at most 1,000), from offset on: a lane's earlier records (offset 0) or
// its next ones.
func kinesisEvent(b testing.TB, offset, n int) []byte {
	raw := firstRecords(b, "SLUICE_BENCH_KINESIS", offset+n, func() ([]byte, error) {
		rnd := rand.New(rand.NewPCG(1, 2))
		kb := &sevents.KinesisBuilder{}
		for i := range 1000 {
			kb.Add(fmt.Sprintf("cust-%d", rnd.IntN(50)), orderJSON(i, rnd))
		}
		return sevents.MarshalEvent(kb.Event())
	})
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatal(err)
	}
	ev.Records = ev.Records[offset:]
	out, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// redelivered is the SQS event raw as its messages look when SQS delivers
// them again (ApproximateReceiveCount 2): what a replay of a batch is in
// production.
func redelivered(b testing.TB, raw []byte) []byte {
	var ev struct{ Records []map[string]any }
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatal(err)
	}
	for _, r := range ev.Records {
		attrs, _ := r["attributes"].(map[string]any)
		if attrs == nil {
			b.Fatalf("an SQS record without attributes: %v", r)
		}
		attrs["ApproximateReceiveCount"] = "2"
	}
	out, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// counter counts a store's requests and its write requests (a
// transaction of several completes counts once), and on DynamoDB the
// write and read units each request is billed as AWS prices them for
// items under 1 KB (every item here is): a PutItem, UpdateItem or
// DeleteItem one write unit, refused or not; a TransactWriteItems two per
// item; an eventually consistent BatchGetItem half a read unit per key
// asked for, found or not. (DynamoDB Local's own ConsumedCapacity counts
// a transaction's items as one unit each, and a read of no item as none.)
type counter struct {
	requests, writes atomic.Int64
	mu               sync.Mutex
	wcu, rcu         float64
}

func (c *counter) reset() {
	c.requests.Store(0)
	c.writes.Store(0)
	c.mu.Lock()
	c.wcu, c.rcu = 0, 0
	c.mu.Unlock()
}

func (c *counter) units() (wcu, rcu float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wcu, c.rcu
}

func (c *counter) add(wcu, rcu float64) {
	c.mu.Lock()
	c.wcu += wcu
	c.rcu += rcu
	c.mu.Unlock()
}

// billed is the units a DynamoDB request is billed (see counter).
func billed(params any) (wcu, rcu float64) {
	switch p := params.(type) {
	case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
		return 1, 0
	case *dynamodb.TransactWriteItemsInput:
		return 2 * float64(len(p.TransactItems)), 0
	case *dynamodb.BatchGetItemInput:
		for _, ka := range p.RequestItems {
			per := 0.5
			if aws.ToBool(ka.ConsistentRead) {
				per = 1
			}
			rcu += per * float64(len(ka.Keys))
		}
		return 0, rcu
	case *dynamodb.GetItemInput:
		if aws.ToBool(p.ConsistentRead) {
			return 0, 1
		}
		return 0, 0.5
	}
	return 0, 0
}

// capacity adds what each request is billed to c.
func (c *counter) capacity(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	c.add(billed(in.Parameters))
	return next.HandleInitialize(ctx, in)
}

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
			if err := s.Initialize.Add(middleware.InitializeMiddlewareFunc("benchCapacity", c.capacity), middleware.After); err != nil {
				return err
			}
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

// phase is what a benchmark times: a batch of new records on a fresh
// store (first), the same batch again (replay), or, for an ordered
// source, a batch of new records on a lane that ran earlier records
// (next: prior is that earlier batch, run untimed first).
type phase struct {
	name   string
	prior  [][]byte // run untimed before the timed batch, on the same store
	replay bool     // the timed batch is a replay: nothing runs
}

// run times one batch per iteration on a fresh store and reports the
// wall time in round trips, and the store's requests, writes and (on
// DynamoDB) write and read units per record.
func run(b *testing.B, be backend, d time.Duration, raw []byte, n int, ph phase, build invoker, okOut string) {
	var reqs, writes int64
	var wcu, rcu float64
	iter := 0
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		iter++
		invoke, calls := build(be.fresh(b))
		for _, ev := range ph.prior {
			if out, err := invoke(ctx, ev); err != nil || string(out) != okOut {
				b.Fatalf("untimed pass before %s: %s %v", ph.name, out, err)
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
		if ph.replay {
			want = 0
		}
		if c := calls.Load(); c != want {
			b.Fatalf("%s: the function ran %d times, want %d", be.name, c, want)
		}
		reqs += be.count.requests.Load()
		writes += be.count.writes.Load()
		w, r := be.count.units()
		wcu, rcu = wcu+w, rcu+r
		b.StartTimer()
	}
	b.StopTimer()
	k := float64(iter * n)
	b.ReportMetric(float64(reqs)/k, "requests/record")
	b.ReportMetric(float64(writes)/k, "writes/record")
	if be.name == "dynamodb" {
		b.ReportMetric(wcu/k, "WCU/record")
		b.ReportMetric(rcu/k, "RCU/record")
	}
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

func kinesisHandler(b testing.TB) invoker {
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

// BenchmarkLatencySQS10 and BenchmarkLatencySQS100: SQS standard, 10
// messages (SQS's default batch size) and 100, first pass and replay, on
// each store behind the proxy.
func BenchmarkLatencySQS10(b *testing.B)  { benchSQS(b, 10) }
func BenchmarkLatencySQS100(b *testing.B) { benchSQS(b, 100) }

func benchSQS(b *testing.B, n int) {
	d := rtt(b)
	raw := sqsEventN(b, n)
	for _, be := range backends(b, d) {
		b.Run(be.name, func(b *testing.B) {
			// The replay is the batch delivered again, as SQS redelivers
			// it (ApproximateReceiveCount 2).
			for _, ph := range []struct {
				phase
				raw []byte
			}{
				{phase{name: "first"}, raw},
				{phase{name: "replay", prior: [][]byte{raw}, replay: true}, redelivered(b, raw)},
			} {
				b.Run(ph.name, func(b *testing.B) {
					run(b, be, d, ph.raw, n, ph.phase, sqsHandler(b), `{"batchItemFailures":[]}`)
				})
			}
		})
		be.close()
	}
}

// BenchmarkLatencyKinesis40 and BenchmarkLatencyKinesis200: Kinesis, 40
// and 200 records of one shard, in order, on each store behind the
// proxy: first (a lane's first batch, on a fresh store), next (new
// records on a lane that ran as many earlier ones: what a shard pays
// batch after batch) and replay (the next batch again).
func BenchmarkLatencyKinesis40(b *testing.B)  { benchKinesis(b, 40) }
func BenchmarkLatencyKinesis200(b *testing.B) { benchKinesis(b, 200) }

func benchKinesis(b *testing.B, n int) {
	d := rtt(b)
	earlier, next := kinesisEvent(b, 0, n), kinesisEvent(b, n, n)
	for _, be := range backends(b, d) {
		b.Run(be.name, func(b *testing.B) {
			for _, ph := range []struct {
				phase
				raw []byte
			}{
				{phase{name: "first"}, earlier},
				{phase{name: "next", prior: [][]byte{earlier}}, next},
				{phase{name: "replay", prior: [][]byte{earlier, next}, replay: true}, next},
			} {
				b.Run(ph.name, func(b *testing.B) {
					run(b, be, d, ph.raw, n, ph.phase, kinesisHandler(b), `{"batchItemFailures":[]}`)
				})
			}
		})
		be.close()
	}
}
