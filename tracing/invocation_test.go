package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/tracing"
)

func env(m map[string]string) tracing.Option {
	return tracing.WithLookupEnv(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

func okSQS(t *testing.T, r *recorder, more ...tracing.Option) invoker {
	t.Helper()
	logger, _ := quiet()
	return handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[string]) error { return nil }, opts(r, logger, more...)...)
}

func oneMessage() any {
	b := &sevents.SQSBuilder{}
	return b.Add(`"hello"`).Event()
}

// The batch span's parent is the invocation's span: the one otellambda
// (or any instrumentation) put in the context, or the one Sluice starts
// under Lambda's trace header, from the context or the environment.
func TestInvocationParent(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:0"
	wantTrace, _ := trace.TraceIDFromHex("5759e988bd862e3fe1be46a994272793")
	wantParent, _ := trace.SpanIDFromHex("53995c3f42cd8ad8")

	t.Run("a span in the context", func(t *testing.T) {
		r := newRecorder(t)
		h := okSQS(t, r)
		ctx, inv := r.tp.Tracer("otellambda").Start(lambdaCtx("r"), "orders", trace.WithSpanKind(trace.SpanKindServer))
		if _, err := invoke(t, ctx, h, oneMessage()); err != nil {
			t.Fatal(err)
		}
		inv.End()
		set := spansOf(t, r)
		if set.batch.Parent().SpanID() != inv.SpanContext().SpanID() {
			t.Errorf("batch parent %s, want the context's span %s", set.batch.Parent().SpanID(), inv.SpanContext().SpanID())
		}
		if n := len(set.all); n != 3 {
			t.Errorf("%d spans, want 3: Sluice started an invocation span of its own", n)
		}
		if got := str(set.batch, "faas.invocation_id"); got != "r" {
			t.Errorf("batch faas.invocation_id %q", got)
		}
	})
	for _, where := range []string{"context", "environment"} {
		t.Run("trace header in the "+where, func(t *testing.T) {
			r := newRecorder(t)
			ctx := lambdaCtx("r")
			var e map[string]string
			if where == "context" {
				//lint:ignore SA1029 the key aws-lambda-go keeps the trace header under
				ctx = context.WithValue(ctx, "x-amzn-trace-id", header)
			} else {
				e = map[string]string{tracing.EnvTraceHeader: header, tracing.EnvFunctionName: "orders"}
			}
			h := okSQS(t, r, env(e))
			if _, err := invoke(t, ctx, h, oneMessage()); err != nil {
				t.Fatal(err)
			}
			set := spansOf(t, r)
			inv := set.invocation
			if inv == nil {
				t.Fatal("no invocation span")
			}
			if inv.SpanContext().TraceID() != wantTrace || inv.Parent().SpanID() != wantParent || !inv.Parent().IsRemote() {
				t.Errorf("invocation span: trace %s parent %s (remote %v); want %s under %s", inv.SpanContext().TraceID(), inv.Parent().SpanID(), inv.Parent().IsRemote(), wantTrace, wantParent)
			}
			if where == "environment" && inv.Name() != "orders" {
				t.Errorf("invocation span %q, want the function's name", inv.Name())
			}
			if set.batch.Parent().SpanID() != inv.SpanContext().SpanID() {
				t.Error("the batch span is not the invocation span's child")
			}
		})
	}
}

// Lambda's header says Sampled=0 when active tracing is off: with the
// SDK's default sampler (parent-based) nothing is traced, unless
// OTEL_TRACES_SAMPLER is set, which then decides.
func TestSampledZero(t *testing.T) {
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0"
	t.Run("no sampler set", func(t *testing.T) {
		r := newRecorder(t, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
		h := okSQS(t, r, env(map[string]string{tracing.EnvTraceHeader: header}))
		if _, err := invoke(t, lambdaCtx("r"), h, oneMessage()); err != nil {
			t.Fatal(err)
		}
		if n := len(r.Ended()); n != 0 {
			t.Errorf("%d spans recorded under Sampled=0", n)
		}
	})
	t.Run("OTEL_TRACES_SAMPLER set", func(t *testing.T) {
		r := newRecorder(t, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
		h := okSQS(t, r, env(map[string]string{tracing.EnvTraceHeader: header, tracing.EnvSampler: "parentbased_always_on"}))
		if _, err := invoke(t, lambdaCtx("r"), h, oneMessage()); err != nil {
			t.Fatal(err)
		}
		set := spansOf(t, r)
		if set.invocation == nil || set.invocation.Parent().IsValid() {
			t.Fatalf("want a root invocation span, the sampler's decision: %+v", set.invocation)
		}
		if len(set.records) != 1 {
			t.Errorf("%d record spans", len(set.records))
		}
	})
}

// faas.coldstart is true on a Tracer's first invocation only.
func TestColdStart(t *testing.T) {
	r := newRecorder(t)
	h := okSQS(t, r)
	for range 2 {
		if _, err := invoke(t, lambdaCtx("r"), h, oneMessage()); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range r.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			got = append(got, str(s, "faas.coldstart"))
		}
	}
	if len(got) != 2 || got[0] != "true" || got[1] != "false" {
		t.Errorf("faas.coldstart %v, want [true false]", got)
	}
}

// The spans are exported before the handler answers: the batcher's own
// schedule (an hour here) would export them long after Lambda froze the
// process.
func TestFlushedBeforeAnswer(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour), sdktrace.WithMaxExportBatchSize(1<<20)))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	logger, _ := quiet()
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[string]) error { return nil },
		handlers.WithLogger(logger), tracing.On(tracing.WithTracerProvider(tp)))
	if _, err := invoke(t, lambdaCtx("r"), h, oneMessage()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 3 {
		t.Fatalf("%d spans exported when the handler answered, want 3 (invocation, batch, record)", n)
	}
	// WithoutFlush leaves them to the batcher.
	exp.Reset()
	h = handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[string]) error { return nil },
		handlers.WithLogger(logger), tracing.On(tracing.WithTracerProvider(tp), tracing.WithoutFlush()))
	if _, err := invoke(t, lambdaCtx("r"), h, oneMessage()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("WithoutFlush: %d spans exported at once", n)
	}
}

// Sluice's log lines carry the trace and span ids of the record (or the
// batch) they are about; the user's logger gets the same from the record's
// context with NewLogHandler.
func TestLogLinesCarryIDs(t *testing.T) {
	r := newRecorder(t)
	logger, buf := quiet()
	var user bytes.Buffer
	userLog := slog.New(tracing.NewLogHandler(slog.NewJSONHandler(&user, nil)))
	f := act(map[string]int{"t": 1})
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error {
		userLog.InfoContext(ctx, "charging", "id", m.Value.ID)
		return f(ctx, m.Value)
	}, append(opts(r, logger), handlers.WithConcurrency(1))...)
	b, ids := sqsEvent(action{"t", "transient"}, action{"f", "fail"})
	if _, err := invoke(t, lambdaCtx("r"), h, b.Event()); err != nil {
		t.Fatal(err)
	}
	set := spansOf(t, r)
	spanOf := func(id string) (string, string) {
		sc := set.records[id].SpanContext()
		return sc.TraceID().String(), sc.SpanID().String()
	}
	var retry, failed, done bool
	for _, l := range logLines(t, buf) {
		tid, sid := l["trace_id"], l["span_id"]
		switch l["msg"] {
		case "sluice: record failed transiently, retrying":
			retry = true
			if wt, ws := spanOf(ids[0]); tid != wt || sid != ws {
				t.Errorf("retry line %v/%v, want the record's %s/%s", tid, sid, wt, ws)
			}
		case "sluice: record failed":
			failed = true
			if wt, ws := spanOf(ids[1]); tid != wt || sid != ws {
				t.Errorf("failure line %v/%v, want the record's %s/%s", tid, sid, wt, ws)
			}
		case "sluice: batch done":
			done = true
			if sid != set.batch.SpanContext().SpanID().String() {
				t.Errorf("batch line span %v, want the batch's", sid)
			}
		}
	}
	if !retry || !failed || !done {
		t.Fatalf("log lines missing (retry %v, failed %v, done %v):\n%s", retry, failed, done, buf)
	}
	lines := logLines(t, &user)
	if len(lines) < 2 {
		t.Fatalf("user log: %s", user.String())
	}
	for _, l := range lines {
		id := ids[0]
		if l["id"] == "f" {
			id = ids[1]
		}
		if wt, ws := spanOf(id); l["trace_id"] != wt || l["span_id"] != ws {
			t.Errorf("user line %v: ids %v/%v, want %s/%s", l, l["trace_id"], l["span_id"], wt, ws)
		}
	}
}

// A Firehose transformation is not traced: the option is refused, not
// ignored.
func TestFirehoseRefusesTracing(t *testing.T) {
	r := newRecorder(t)
	_, err := handlers.NewFirehose(func(ctx context.Context, rec handlers.FirehoseRecord[string]) (handlers.FirehoseResult, error) {
		return handlers.Dropped(), nil
	}, tracing.On(tracing.WithTracerProvider(r.tp)))
	if err == nil || !strings.Contains(err.Error(), "WithTracer") {
		t.Fatalf("NewFirehose with tracing.On: %v", err)
	}
}
