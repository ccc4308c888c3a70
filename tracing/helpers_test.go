package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/tracing"
)

// recorder is an SDK provider whose spans land in memory.
type recorder struct {
	*tracetest.SpanRecorder
	tp *sdktrace.TracerProvider
}

func newRecorder(t *testing.T, opts ...sdktrace.TracerProviderOption) *recorder {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(sr)}, opts...)...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &recorder{sr, tp}
}

// producer starts and ends a PRODUCER span in a provider of its own (the
// service that sent the record) and returns its span context.
func producer(t *testing.T, name string) trace.SpanContext {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	_, s := tp.Tracer("producer").Start(context.Background(), name, trace.WithSpanKind(trace.SpanKindProducer))
	s.End()
	return s.SpanContext()
}

// traceparent and tracestate are sc in W3C Trace Context.
func traceContext(sc trace.SpanContext) propagation.MapCarrier {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c
}

// xrayHeader is sc as an X-Ray trace header (AWSTraceHeader).
func xrayHeader(sc trace.SpanContext) string {
	c := propagation.MapCarrier{}
	xray.Propagator{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["X-Amzn-Trace-Id"]
}

func withState(t *testing.T, sc trace.SpanContext, state string) trace.SpanContext {
	t.Helper()
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	return sc.WithTraceState(ts)
}

type invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// lambdaCtx is an invocation's context as aws-lambda-go makes it.
func lambdaCtx(requestID string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		AwsRequestID: requestID, InvokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:orders"})
}

func invoke(t *testing.T, ctx context.Context, h invoker, event any) ([]byte, error) {
	t.Helper()
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	return h.Invoke(ctx, payload)
}

// quiet is a logger that keeps its lines for the test to read.
func quiet() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// logLines are buf's JSON lines.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func str(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attr(s, attribute.Key(key))
	return v.String()
}

// spansOf sorts the ended spans: the invocation's (kind SERVER, or nil),
// the batch's, and the records' by messaging.message.id.
type spanSet struct {
	invocation sdktrace.ReadOnlySpan
	batch      sdktrace.ReadOnlySpan
	records    map[string]sdktrace.ReadOnlySpan
	all        []sdktrace.ReadOnlySpan
}

func spansOf(t *testing.T, r *recorder) spanSet {
	t.Helper()
	set := spanSet{records: map[string]sdktrace.ReadOnlySpan{}, all: r.Ended()}
	for _, s := range set.all {
		switch {
		case s.SpanKind() == trace.SpanKindServer:
			set.invocation = s
		case s.SpanKind() == trace.SpanKindConsumer:
			if _, ok := attr(s, "messaging.batch.message_count"); ok {
				if set.batch != nil {
					t.Fatalf("two batch spans: %s and %s", set.batch.Name(), s.Name())
				}
				set.batch = s
				continue
			}
			id := str(s, "messaging.message.id")
			if _, dup := set.records[id]; dup {
				t.Fatalf("two spans for record %s", id)
			}
			set.records[id] = s
		}
	}
	if set.batch == nil {
		t.Fatalf("no batch span among %d spans", len(set.all))
	}
	for id, s := range set.records {
		if s.Parent().SpanID() != set.batch.SpanContext().SpanID() {
			t.Errorf("record %s: parent %s, want the batch span %s", id, s.Parent().SpanID(), set.batch.SpanContext().SpanID())
		}
	}
	return set
}

// linked returns the span contexts s links to.
func linked(s sdktrace.ReadOnlySpan) []trace.SpanContext {
	var out []trace.SpanContext
	for _, l := range s.Links() {
		out = append(out, l.SpanContext)
	}
	return out
}

// linksTo checks that s links to exactly want, in any order (ignoring the
// remote flag), each link read from from (unless from is "").
func linksTo(t *testing.T, what string, s sdktrace.ReadOnlySpan, from string, want ...trace.SpanContext) {
	t.Helper()
	if len(s.Links()) != len(want) {
		t.Fatalf("%s: %d links %v, want %d", what, len(s.Links()), linked(s), len(want))
	}
	for _, w := range want {
		found := false
		for _, l := range s.Links() {
			got := l.SpanContext
			if got.TraceID() != w.TraceID() || got.SpanID() != w.SpanID() || got.TraceFlags() != w.TraceFlags() || got.TraceState().String() != w.TraceState().String() {
				continue
			}
			found = true
			if from != "" {
				var src string
				for _, kv := range l.Attributes {
					if kv.Key == tracing.AttrLinkSource {
						src = kv.Value.AsString()
					}
				}
				if src != from {
					t.Errorf("%s: link to %v read from %q, want %q", what, w.SpanID(), src, from)
				}
			}
		}
		if !found {
			t.Errorf("%s: no link to %v/%v %s among %v", what, w.TraceID(), w.SpanID(), w.TraceState(), linked(s))
		}
	}
}

func eventsNamed(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func opts(r *recorder, logger *slog.Logger, more ...tracing.Option) []handlers.Option {
	return []handlers.Option{handlers.WithLogger(logger), tracing.On(append([]tracing.Option{tracing.WithTracerProvider(r.tp)}, more...)...)}
}
