package tracing_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/jaeger"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
)

// The whole path on real parts: a producer exports its send spans to
// Jaeger over OTLP; the conformance function, compiled and run under the
// Lambda Runtime Interface Emulator with only OpenTelemetry's standard
// environment variables set, processes the SQS batch and exports its
// spans; the test stops the function as soon as it answered (Lambda
// freezes it) and reads the spans and their links back from Jaeger's
// query API.
func TestJaegerEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j := jaeger.Start(t)

	// The producer: a service of its own, exporting to the same Jaeger.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(j.OTLP+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	ptp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("orders-api"))))
	send := func() trace.SpanContext {
		_, s := ptp.Tracer("orders-api").Start(ctx, "send queue", trace.WithSpanKind(trace.SpanKindProducer))
		s.End()
		return s.SpanContext()
	}
	viaXRay, viaAttr := send(), send()
	if err := ptp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	b := &sevents.SQSBuilder{}
	b.Add(`{"id":"a"}`).Add(`{"id":"b","action":"transient:1"}`).Add(`{"id":"c","action":"fail"}`)
	ev := b.Event()
	ev.Records[0].Attributes["AWSTraceHeader"] = xrayHeader(viaXRay)
	tp := traceContext(viaAttr)["traceparent"]
	ev.Records[1].MessageAttributes["traceparent"] = events.SQSMessageAttribute{StringValue: &tp, DataType: "String"}
	payload, _ := json.Marshal(ev)

	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	fn := rie.Start(t, bin,
		rie.Env("SLUICE_SOURCE", "sqs"),
		rie.Env("SLUICE_RETRY_BACKOFF", "1ms"),
		rie.Env("OTEL_EXPORTER_OTLP_ENDPOINT", j.OTLP),
		rie.Env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
		rie.Env("OTEL_SERVICE_NAME", "orders-consumer"),
		rie.Env("OTEL_TRACES_SAMPLER", "always_on"))
	out, err := fn.Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, fn.Logs())
	}
	if !strings.Contains(string(out), ev.Records[2].MessageId) {
		t.Fatalf("response %s does not report the failed message", out)
	}
	// Lambda may freeze or end the process once it answered: what was not
	// exported by then is lost.
	if err := fn.Stop(); err != nil {
		t.Fatal(err)
	}

	spans, err := j.Spans(ctx, "orders-consumer", 5)
	if err != nil {
		t.Fatalf("%v\nfunction log:\n%s", err, fn.Logs())
	}
	var inv, batchSpan *jaeger.Span
	recs := map[string]*jaeger.Span{}
	for i := range spans {
		s := &spans[i]
		switch {
		case s.Kind == int(trace.SpanKindServer) && s.Attr("faas.trigger") == "pubsub" && s.Attr("messaging.system") == "":
			inv = s
		case s.Attr("messaging.batch.message_count") != "":
			batchSpan = s
		case s.Attr("messaging.message.id") != "":
			recs[s.Attr("messaging.message.id")] = s
		}
	}
	if inv == nil || batchSpan == nil || len(recs) != 3 {
		t.Fatalf("from Jaeger: invocation %v, batch %v, %d record spans; want 1, 1, 3: %+v", inv != nil, batchSpan != nil, len(recs), spans)
	}
	if batchSpan.Name != "process queue" || batchSpan.ParentSpanID != inv.SpanID || batchSpan.Attr("messaging.batch.message_count") != "3" {
		t.Errorf("batch span %q (parent %s, invocation %s, count %s)", batchSpan.Name, batchSpan.ParentSpanID, inv.SpanID, batchSpan.Attr("messaging.batch.message_count"))
	}
	id := func(i int) string { return ev.Records[i].MessageId }
	for i := range 3 {
		if s := recs[id(i)]; s.ParentSpanID != batchSpan.SpanID || s.TraceID != batchSpan.TraceID {
			t.Errorf("record %d: parent %s in trace %s, want the batch span", i, s.ParentSpanID, s.TraceID)
		}
	}
	linksTo := func(i int, want trace.SpanContext) {
		t.Helper()
		s := recs[id(i)]
		if len(s.Links) != 1 || s.Links[0].TraceID != want.TraceID().String() || s.Links[0].SpanID != want.SpanID().String() {
			t.Errorf("record %d links %+v, want %s/%s", i, s.Links, want.TraceID(), want.SpanID())
		}
	}
	linksTo(0, viaXRay)
	linksTo(1, viaAttr)
	if n := len(recs[id(2)].Links); n != 0 {
		t.Errorf("record 2 has %d links, carries no context", n)
	}
	if s := recs[id(1)]; len(s.Events) == 0 || s.Events[0].Name != "sluice.retry" || s.Attr("sluice.attempts") != "2" {
		t.Errorf("the transient record: events %+v attempts %s", s.Events, s.Attr("sluice.attempts"))
	}
	if s := recs[id(2)]; s.Status.Code != 2 || s.Attr("sluice.error.class") != "plain" || s.Attr("sluice.reported") != "true" {
		t.Errorf("the failed record: status %+v class %q reported %q", s.Status, s.Attr("sluice.error.class"), s.Attr("sluice.reported"))
	}
	// The links lead somewhere: the producer's spans are in Jaeger too.
	for _, sc := range []trace.SpanContext{viaXRay, viaAttr} {
		got, err := j.Trace(ctx, sc.TraceID().String())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].SpanID != sc.SpanID().String() || got[0].Service != "orders-api" {
			t.Errorf("producer trace %s: %+v", sc.TraceID(), got)
		}
	}
}
