package idemlatency_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
)

// A source of BenchmarkUnits: how its events of 40 records are built, the
// next batch (the same lanes, later records) and how its handler is built
// with options.
type unitSource struct {
	name string
	// events returns an event of records [from, from+40).
	events func(b testing.TB, from int) []byte
	// handler builds the handler with opts; the key function is the
	// business key's (WithIdempotencyKey).
	handler func(b testing.TB, store idempotency.Store, calls *atomic.Int64, businessKey bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error)
}

func unitSources() []unitSource {
	const n = 40
	must := func(b testing.TB, ev any) []byte {
		raw, err := sevents.MarshalEvent(ev)
		if err != nil {
			b.Fatal(err)
		}
		return raw
	}
	orderID := func(i int) string { return fmt.Sprintf("ord-%08d", i) }
	orderOf := func(i int) string { return `{"orderId":"` + orderID(i) + `","amount":12.5}` }
	sqsH := func(fifo bool) func(b testing.TB, store idempotency.Store, calls *atomic.Int64, bk bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error) {
		return func(b testing.TB, store idempotency.Store, calls *atomic.Int64, bk bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error) {
			fn := func(ctx context.Context, r handlers.SQSRecord[order]) error { calls.Add(1); return nil }
			opts = append(opts, handlers.WithIdempotency(store), quiet)
			if bk {
				opts = append(opts, handlers.WithIdempotencyKey(func(r handlers.SQSRecord[order]) string { return r.Value.OrderID }))
			}
			var h interface {
				Invoke(context.Context, []byte) ([]byte, error)
			}
			var err error
			if fifo {
				h, err = handlers.NewSQSFIFO(fn, append(opts, handlers.WithSkipGroupOnFailure())...)
			} else {
				h, err = handlers.NewSQS(fn, opts...)
			}
			if err != nil {
				b.Fatal(err)
			}
			return h.Invoke
		}
	}
	kinesisH := func(pf int) func(b testing.TB, store idempotency.Store, calls *atomic.Int64, bk bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error) {
		return func(b testing.TB, store idempotency.Store, calls *atomic.Int64, bk bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error) {
			opts = append(opts, handlers.WithIdempotency(store), quiet, handlers.WithParallelizationFactor(pf))
			if bk {
				opts = append(opts, handlers.WithIdempotencyKey(func(r handlers.KinesisRecord[order]) string { return r.Value.OrderID }))
			}
			h, err := handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[order]) error { calls.Add(1); return nil }, opts...)
			if err != nil {
				b.Fatal(err)
			}
			return h.Invoke
		}
	}
	kinesisE := func(b testing.TB, from int) []byte {
		rnd := rand.New(rand.NewPCG(1, 2))
		kb := &sevents.KinesisBuilder{}
		for i := range from + n {
			pk := fmt.Sprintf("cust-%d", rnd.IntN(50))
			kb.Add(pk, []byte(orderOf(i)))
		}
		ev := kb.Event()
		ev.Records = ev.Records[from:]
		return must(b, ev)
	}
	return []unitSource{
		{"sqs", func(b testing.TB, from int) []byte {
			sb := &sevents.SQSBuilder{}
			for i := range from + n {
				sb.Add(orderOf(i))
			}
			ev := sb.Event()
			ev.Records = ev.Records[from:]
			return must(b, ev)
		}, sqsH(false)},
		{"sqs-fifo-4-groups", func(b testing.TB, from int) []byte {
			sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}
			for i := range from + n {
				sb.AddFIFO(orderOf(i), fmt.Sprint("g", i%4), "")
			}
			ev := sb.Event()
			ev.Records = ev.Records[from:]
			return must(b, ev)
		}, sqsH(true)},
		{"kinesis", kinesisE, kinesisH(1)},
		{"kinesis-pf2", kinesisE, kinesisH(2)},
		{"dynamodb-10-items", func(b testing.TB, from int) []byte {
			db := &sevents.DynamoDBBuilder{FirstSequence: uint64(from)}
			for i := from; i < from+n; i++ {
				item := map[string]any{"id": fmt.Sprint("item-", i%10)}
				if err := db.Modify(item, map[string]any{"id": item["id"], "orderId": orderID(i - 1)}, map[string]any{"id": item["id"], "orderId": orderID(i)}); err != nil {
					b.Fatal(err)
				}
			}
			return must(b, db.Event())
		}, func(b testing.TB, store idempotency.Store, calls *atomic.Int64, bk bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error) {
			opts = append(opts, handlers.WithIdempotency(store), quiet)
			if bk {
				opts = append(opts, handlers.WithIdempotencyKey(func(r handlers.DynamoDBRecord[order]) string { return r.New.OrderID }))
			}
			h, err := handlers.NewDynamoDB(func(ctx context.Context, r handlers.DynamoDBRecord[order]) error { calls.Add(1); return nil }, opts...)
			if err != nil {
				b.Fatal(err)
			}
			return h.Invoke
		}},
		{"kafka-2-partitions", func(b testing.TB, from int) []byte {
			kb := &sevents.KafkaBuilder{}
			for i := range from + n {
				kb.Add("orders", int64(i%2), nil, []byte(orderOf(i)))
			}
			ev := kb.Event()
			for k, recs := range ev.Records {
				ev.Records[k] = recs[from/2:]
			}
			return must(b, ev)
		}, func(b testing.TB, store idempotency.Store, calls *atomic.Int64, bk bool, opts ...handlers.Option) func(context.Context, []byte) ([]byte, error) {
			opts = append(opts, handlers.WithIdempotency(store), quiet)
			if bk {
				opts = append(opts, handlers.WithIdempotencyKey(func(r handlers.KafkaRecord[order]) string { return r.Value.OrderID }))
			}
			h, err := handlers.NewKafka(func(ctx context.Context, r handlers.KafkaRecord[order]) error { calls.Add(1); return nil }, opts...)
			if err != nil {
				b.Fatal(err)
			}
			return h.Invoke
		}},
	}
}

// BenchmarkUnits reports what idempotency costs per record on the
// DynamoDB store (DynamoDB Local, no delay: the counts, not the time, are
// the point) for every source and mode, on a batch of 40 records:
//
//   - sources: SQS standard; SQS FIFO in 4 groups (skip-group); Kinesis,
//     one shard, 50 partition keys, parallelization factor 1 and 2;
//     DynamoDB Streams, 10 items; Kafka, 2 partitions;
//   - modes: default (a checkpoint per ordered lane; a claim per message
//     on SQS standard), per-record (handlers.WithIdempotencyPerRecord: a
//     claim and a complete per record), business-key
//     (handlers.WithIdempotencyKey: per-record claims under the order's
//     id);
//   - phases: next (the batch after one that ran the lanes' earlier
//     records: what a lane pays batch after batch) and replay (that batch
//     again; on SQS, redelivered).
//
// Metrics per record: requests, writes (write requests), WCU and RCU
// (write and read units as DynamoDB reports them; a refused conditional
// write counted as one unit, as billed).
//
//	go test -run '^$' -bench Units -benchtime 3x ./bench/idemlatency
func BenchmarkUnits(b *testing.B) {
	be := dynamoBackend(b, 0)
	defer be.close()
	for _, src := range unitSources() {
		earlier, next := src.events(b, 0), src.events(b, 40)
		for _, mode := range []string{"default", "per-record", "business-key"} {
			var opts []handlers.Option
			if mode == "per-record" {
				opts = append(opts, handlers.WithIdempotencyPerRecord())
			}
			build := func(store idempotency.Store) (func(context.Context, []byte) ([]byte, error), *atomic.Int64) {
				calls := &atomic.Int64{}
				return src.handler(b, store, calls, mode == "business-key", opts...), calls
			}
			replay := next
			if src.name == "sqs" {
				replay = redelivered(b, next)
			}
			for _, ph := range []struct {
				phase
				raw []byte
			}{
				{phase{name: "next", prior: [][]byte{earlier}}, next},
				{phase{name: "replay", prior: [][]byte{earlier, next}, replay: true}, replay},
			} {
				b.Run(src.name+"/"+mode+"/"+ph.name, func(b *testing.B) {
					run(b, be, 0, ph.raw, 40, ph.phase, build, `{"batchItemFailures":[]}`)
				})
			}
		}
	}
}
