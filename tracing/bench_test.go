package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/tracing"
)

// The per-record cost of tracing, on the handlers benchmarks' paths
// (handlers.BenchmarkKinesis10k and BenchmarkSQS1k without tracing): the
// spans made and ended, exported to an exporter that drops them (Discard),
// or sent over OTLP/HTTP to a loopback receiver and flushed before the
// answer (OTLP).

type benchOrder struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

var benchSink float64

func kinesisPayload(b *testing.B, n int) []byte {
	kb := &sevents.KinesisBuilder{}
	for i := range n {
		m, _ := json.Marshal(benchOrder{fmt.Sprint("o-", i), float64(i)})
		kb.Add(fmt.Sprint("pk-", i%64), m)
	}
	raw, err := json.Marshal(kb.Event())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func sqsPayload(b *testing.B, n int) []byte {
	sb := &sevents.SQSBuilder{}
	for i := range n {
		m, _ := json.Marshal(benchOrder{fmt.Sprint("o-", i), float64(i)})
		sb.Add(string(m))
	}
	raw, err := json.Marshal(sb.Event())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// otlpSink is a loopback OTLP/HTTP receiver that reads and drops what it
// is sent: the cost of the export as the function pays it, not a
// backend's.
func otlpSink(b *testing.B) (string, *atomic.Int64) {
	var bytes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL, &bytes
}

func provider(b *testing.B, kind string) *sdktrace.TracerProvider {
	var exp sdktrace.SpanExporter
	switch kind {
	case "Discard":
		exp = tracetest.NewNoopExporter()
	case "OTLP":
		url, _ := otlpSink(b)
		var err error
		exp, err = otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(url+"/v1/traces"))
		if err != nil {
			b.Fatal(err)
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

func BenchmarkKinesis10kTraced(b *testing.B) {
	raw := kinesisPayload(b, 10000)
	for _, kind := range []string{"Discard", "OTLP"} {
		b.Run(kind, func(b *testing.B) {
			h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[benchOrder]) error {
				benchSink += r.Value.Amount
				return nil
			}, handlers.WithLogger(slog.New(slog.DiscardHandler)), tracing.On(tracing.WithTracerProvider(provider(b, kind))))
			run(b, h, raw, 10000)
		})
	}
}

func BenchmarkSQS1kTraced(b *testing.B) {
	raw := sqsPayload(b, 1000)
	for _, kind := range []string{"Discard", "OTLP"} {
		b.Run(kind, func(b *testing.B) {
			h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[benchOrder]) error {
				benchSink += r.Value.Amount
				return nil
			}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithConcurrency(1),
				tracing.On(tracing.WithTracerProvider(provider(b, kind))))
			run(b, h, raw, 1000)
		})
	}
}

func run(b *testing.B, h invoker, raw []byte, n int) {
	b.ReportAllocs()
	for b.Loop() {
		if out, err := h.Invoke(lambdaCtx("bench"), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
}

// BenchmarkFlush is what flushing costs at the end of an invocation of one
// SQS message: the batch's three spans sent over OTLP/HTTP to a loopback
// receiver, against the same invocation whose spans the batcher keeps
// (WithoutFlush).
func BenchmarkFlush(b *testing.B) {
	raw := sqsPayload(b, 1)
	for _, flush := range []bool{false, true} {
		name := "WithoutFlush"
		if flush {
			name = "Flush"
		}
		b.Run(name, func(b *testing.B) {
			o := []tracing.Option{tracing.WithTracerProvider(provider(b, "OTLP"))}
			if !flush {
				o = append(o, tracing.WithoutFlush())
			}
			h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[benchOrder]) error { return nil },
				handlers.WithLogger(slog.New(slog.DiscardHandler)), tracing.On(o...))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Invoke(lambdaCtx("bench"), raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
