package handlers

import (
	"context"
	"fmt"
	"testing"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

// benchRTT is the delay of every store call in the latency benchmarks: the
// critical path in round trips is wall time / benchRTT ("rtts/batch").
const benchRTT = 5 * time.Millisecond

// runIdemLatency runs the handler's batch b.N times against a delayStore
// and reports round trips on the critical path and store calls per record.
// replay runs the batch once untimed first, so each timed pass is a
// replay; otherwise each pass gets a fresh store (a first pass).
func runIdemLatency(b *testing.B, n int, replay bool, invoke func(idempotency.Store) func() ([]byte, error)) {
	b.ReportAllocs()
	var wall time.Duration
	var calls, writes int64
	passes := 0
	for b.Loop() {
		b.StopTimer()
		store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), rtt: benchRTT}
		run := invoke(store)
		if replay {
			if _, err := run(); err != nil {
				b.Fatal(err)
			}
			store.reset()
		}
		b.StartTimer()
		start := time.Now()
		out, err := run()
		wall += time.Since(start)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
		calls += store.calls()
		writes += store.writes()
		passes++
	}
	b.ReportMetric(float64(wall)/float64(passes)/float64(benchRTT), "rtts/batch")
	b.ReportMetric(float64(wall)/float64(passes)/float64(benchRTT)/float64(n), "rtts/record")
	b.ReportMetric(float64(calls)/float64(passes)/float64(n), "calls/record")
	b.ReportMetric(float64(writes)/float64(passes)/float64(n), "writes/record")
}

func sqsIdemBatch(b *testing.B, n int, fifo bool, groups int) []byte {
	sb := &sevents.SQSBuilder{}
	if fifo {
		sb.QueueARN = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
	}
	for i := range n {
		if fifo {
			sb.AddFIFO(string(payload(fmt.Sprint(i), "ok")), fmt.Sprintf("g%d", i%groups), "")
		} else {
			sb.Add(string(payload(fmt.Sprint(i), "ok")))
		}
	}
	raw, err := sevents.MarshalEvent(sb.Event())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func benchSQSIdem(b *testing.B, n int, fifo bool, groups int, replay bool) {
	raw := sqsIdemBatch(b, n, fifo, groups)
	var rep BatchReport
	runIdemLatency(b, n, replay, func(store idempotency.Store) func() ([]byte, error) {
		h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil }, idemOpts(store, &rep)...)
		if err != nil {
			b.Fatal(err)
		}
		return func() ([]byte, error) { return h.Invoke(context.Background(), raw) }
	})
}

func benchKinesisIdem(b *testing.B, n int) {
	raw, _ := kinesisIdemEvent(b, n)
	var rep BatchReport
	runIdemLatency(b, n, false, func(store idempotency.Store) func() ([]byte, error) {
		h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return nil }, idemOpts(store, &rep)...)
		if err != nil {
			b.Fatal(err)
		}
		return func() ([]byte, error) { return h.Invoke(context.Background(), raw) }
	})
}

func BenchmarkIdemLatencySQS100First(b *testing.B)  { benchSQSIdem(b, 100, false, 0, false) }
func BenchmarkIdemLatencySQS100Replay(b *testing.B) { benchSQSIdem(b, 100, false, 0, true) }
func BenchmarkIdemLatencyFIFO100Groups4(b *testing.B) {
	benchSQSIdem(b, 100, true, 4, false)
}
func BenchmarkIdemLatencyKinesis40(b *testing.B)  { benchKinesisIdem(b, 40) }
func BenchmarkIdemLatencyKinesis200(b *testing.B) { benchKinesisIdem(b, 200) }
