package tracing

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

// ScopeName is the instrumentation scope of Sluice's spans.
const ScopeName = "github.com/sluicehq/sluice/tracing"

// The attributes Sluice adds to the semantic conventions' own: what it
// decided about each record.
const (
	// AttrSource is the handler's source (events.Source: kinesis, sqs, ...).
	AttrSource = attribute.Key("sluice.source")
	// AttrKey is the record's ordering key: partition key, message group,
	// "<topic>-<partition>".
	AttrKey = attribute.Key("sluice.key")
	// AttrOutcome is succeeded, failed or not-attempted (batch.Outcome).
	AttrOutcome = attribute.Key("sluice.outcome")
	// AttrAttempts counts the record's runs in this invocation: 1 plus its
	// in-process retries, 0 when it was not attempted.
	AttrAttempts = attribute.Key("sluice.attempts")
	// AttrReported is true when the partial batch response names the
	// record, so Lambda delivers it again.
	AttrReported = attribute.Key("sluice.reported")
	// AttrErrorClass is the failed record's error class (batch.Class:
	// plain, transient, permanent).
	AttrErrorClass = attribute.Key("sluice.error.class")
	// AttrDuplicate is true when the record succeeded without running
	// because its effect had already completed (idempotency).
	AttrDuplicate = attribute.Key("sluice.duplicate")
	// AttrSkipped says why a record was answered without the function
	// (handlers.RecordOutcome.Skipped: "duplicate", "s3-test-event",
	// "control-message").
	AttrSkipped = attribute.Key("sluice.skipped")
	// AttrQuarantined is true when the record went to the dead-letter
	// destination; AttrQuarantineDestination, AttrQuarantineReason and
	// AttrQuarantineAttempts say where and why.
	AttrQuarantined           = attribute.Key("sluice.quarantined")
	AttrQuarantineDestination = attribute.Key("sluice.quarantine.destination")
	AttrQuarantineReason      = attribute.Key("sluice.quarantine.reason")
	AttrQuarantineAttempts    = attribute.Key("sluice.quarantine.attempts")
	// AttrNotAttempted says why a record was not attempted: "deadline"
	// (too close to the Lambda deadline) or "earlier-failure" (a record
	// before it in its order failed).
	AttrNotAttempted = attribute.Key("sluice.not_attempted.reason")
	// AttrFunctionError is set on the batch span when the invocation
	// answers with a function error instead of a partial batch response.
	AttrFunctionError = attribute.Key("sluice.function_error")
)

// The events on a record's span.
const (
	EventRetry       = "sluice.retry"
	EventDuplicate   = "sluice.duplicate"
	EventSkipped     = "sluice.skipped"
	EventQuarantined = "sluice.quarantined"
)

// An Option configures a Tracer.
type Option func(*Tracer)

// WithTracerProvider sets where spans go. Default: otel.GetTracerProvider()
// at New. When the provider has a ForceFlush method (the SDK's does), it
// is called at the end of each batch, before the handler answers.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(t *Tracer) { t.tp = tp }
}

// WithPropagator sets how a producer's span context is read from SQS
// message attributes, an SNS notification's attributes and Kafka headers.
// Default: W3C Trace Context (traceparent, tracestate). SQS's
// AWSTraceHeader system attribute is always read, in X-Ray's format.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(t *Tracer) { t.prop = p }
}

// WithCarrier names where a record carries its producer's span context
// when its source has no headers for it (Kinesis, DynamoDB Streams): f
// returns the carrier (nil when the record has none), which the
// propagator reads. JSONCarrier and AttributeCarrier are the usual ones.
// f runs on the worker that runs the record. For SQS and Kafka records it
// adds to what the tracer reads by itself.
func WithCarrier(f func(r handlers.TraceRecord) propagation.TextMapCarrier) Option {
	return func(t *Tracer) { t.carrier = f }
}

// WithoutFlush leaves flushing to the caller (spans are then exported when
// the provider's batcher decides, which Lambda may freeze).
func WithoutFlush() Option {
	return func(t *Tracer) { t.noFlush = true }
}

// withLookupEnv replaces os.LookupEnv (tests).
func withLookupEnv(f func(string) (string, bool)) Option {
	return func(t *Tracer) { t.lookupEnv = f }
}

// Tracer is Sluice's OpenTelemetry tracer: it implements handlers.Tracer.
type Tracer struct {
	tp        trace.TracerProvider
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator
	carrier   func(handlers.TraceRecord) propagation.TextMapCarrier
	noFlush   bool
	lookupEnv func(string) (string, bool)
	warm      atomic.Bool // an invocation has started: the next is not a cold start
}

var _ handlers.Tracer = (*Tracer)(nil)

// New returns a Tracer.
func New(opts ...Option) *Tracer {
	t := &Tracer{prop: propagation.TraceContext{}, lookupEnv: os.LookupEnv}
	for _, o := range opts {
		o(t)
	}
	if t.tp == nil {
		t.tp = otel.GetTracerProvider()
	}
	t.tracer = t.tp.Tracer(ScopeName)
	return t
}

// On returns the handler option that traces every invocation: a batch
// span per invocation and a span per record, linked to the producers'
// spans (see the package documentation).
func On(opts ...Option) handlers.Option { return handlers.WithTracer(New(opts...)) }

// LogIDs implements handlers.Tracer.
func (t *Tracer) LogIDs(ctx context.Context) (traceID, spanID string) { return IDs(ctx) }

// IDs returns the trace and span ids of the span in ctx (inside a record's
// function, the record's span), hex-encoded, or "" when there is none.
func IDs(ctx context.Context) (traceID, spanID string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

// source is what a source's spans share.
type source struct {
	system  attribute.KeyValue
	trigger attribute.KeyValue
}

// sources maps a handler's source to the messaging system and FaaS trigger
// of the semantic conventions. Kinesis and DynamoDB Streams have no
// messaging.system value there; these follow its naming.
var sources = map[sevents.Source]source{
	sevents.SourceSQS:      {semconv.MessagingSystemAWSSQS, semconv.FaaSTriggerPubSub},
	sevents.SourceSQSFIFO:  {semconv.MessagingSystemAWSSQS, semconv.FaaSTriggerPubSub},
	sevents.SourceKafka:    {semconv.MessagingSystemKafka, semconv.FaaSTriggerPubSub},
	sevents.SourceKinesis:  {semconv.MessagingSystemKey.String("aws_kinesis"), semconv.FaaSTriggerPubSub},
	sevents.SourceDynamoDB: {semconv.MessagingSystemKey.String("aws_dynamodb_streams"), semconv.FaaSTriggerDatasource},
}

// StartBatch implements handlers.Tracer: the invocation's span (the one
// in ctx, as otellambda puts it there, else one started from Lambda's
// trace header), and the batch span under it.
func (t *Tracer) StartBatch(ctx context.Context, b handlers.TraceBatch) (context.Context, handlers.BatchTrace) {
	cold := !t.warm.Swap(true)
	src := sources[b.Source]
	bt := &batchTrace{t: t, src: src, source: b.Source, spans: make([]trace.Span, b.Records), stops: make([]time.Time, b.Records)}
	if b.Records > 0 && b.Record != nil {
		bt.dest, bt.partition = destination(b.Record(0))
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx, bt.invocation = t.startInvocation(ctx, src, cold)
	}
	name := "process"
	if bt.dest != "" {
		name += " " + bt.dest
	}
	attrs := []attribute.KeyValue{
		src.system, semconv.MessagingOperationName("process"), semconv.MessagingOperationTypeProcess,
		semconv.MessagingBatchMessageCount(b.Records), src.trigger, AttrSource.String(string(b.Source)),
	}
	if bt.dest != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(bt.dest))
	}
	if bt.partition != "" {
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(bt.partition))
	}
	if bt.invocation == nil {
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID))
		}
	}
	bt.name = name
	ctx, bt.batch = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	bt.ctx = ctx
	return ctx, bt
}

// batchTrace is one invocation's spans.
type batchTrace struct {
	t          *Tracer
	src        source
	source     sevents.Source
	name       string
	dest       string // the queue, stream, table or topic
	partition  string // the shard, when the batch has one
	ctx        context.Context
	invocation trace.Span // nil when the invocation's span is another's
	batch      trace.Span
	spans      []trace.Span // per record; nil until it starts
	stops      []time.Time  // when each record's run returned
}

func (bt *batchTrace) StartRecord(ctx context.Context, i int, r handlers.TraceRecord) context.Context {
	links := bt.t.links(r)
	for _, l := range links {
		bt.batch.AddLink(l)
	}
	ctx, s := bt.t.startRecord(ctx, bt.name, links, bt.recordAttrs(r))
	bt.spans[i] = s
	return ctx
}

// consumer is the span kind of the batch and record spans, made once: an
// option made per call costs an allocation per record.
var consumer = trace.WithSpanKind(trace.SpanKindConsumer)

func (t *Tracer) startRecord(ctx context.Context, name string, links []trace.Link, attrs []attribute.KeyValue, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if len(links) == 0 && len(opts) == 0 {
		return t.tracer.Start(ctx, name, consumer, trace.WithAttributes(attrs...))
	}
	return t.tracer.Start(ctx, name, append(opts, consumer, trace.WithLinks(links...), trace.WithAttributes(attrs...))...)
}

func (bt *batchTrace) recordAttrs(r handlers.TraceRecord) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, bt.src.system, semconv.MessagingOperationName("process"), semconv.MessagingOperationTypeProcess,
		bt.src.trigger, semconv.MessagingMessageID(r.ID), AttrKey.String(r.Key))
	if bt.dest != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(bt.dest))
	}
	switch {
	case r.Kinesis != nil:
		shard, _, _ := strings.Cut(r.Kinesis.EventID, ":")
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(shard), semconv.MessagingMessageBodySize(len(r.Kinesis.Kinesis.Data)))
	case r.Kafka != nil:
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(strconv.FormatInt(r.Kafka.Partition, 10)),
			semconv.MessagingKafkaOffset(int(r.Kafka.Offset)))
	case r.SQS != nil:
		attrs = append(attrs, semconv.MessagingMessageBodySize(len(r.SQS.Body)))
	case r.DynamoDB != nil:
		if bt.partition != "" {
			attrs = append(attrs, semconv.MessagingDestinationPartitionID(bt.partition))
		}
	}
	return attrs
}

func (bt *batchTrace) Retry(ctx context.Context, attempt int, err error, wait time.Duration) {
	s := trace.SpanFromContext(ctx)
	s.AddEvent(EventRetry, trace.WithAttributes(
		attribute.Int("sluice.retry.attempt", attempt),
		attribute.String("sluice.retry.error", err.Error()),
		AttrErrorClass.String(batch.Classify(err).String()),
		attribute.Int64("sluice.retry.wait_ms", wait.Milliseconds()),
	))
}

func (bt *batchTrace) StopRecord(i int) { bt.stops[i] = time.Now() }

func (bt *batchTrace) RecordContext(ctx context.Context, i int) context.Context {
	if i < 0 || i >= len(bt.spans) || bt.spans[i] == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, bt.spans[i])
}

// End ends every record's span with what became of it, then the batch's
// and (when Sluice started it) the invocation's, and flushes.
func (bt *batchTrace) End(ctx context.Context, e handlers.TraceEnd) {
	now := time.Now()
	for i := range e.Records {
		s := bt.spans[i]
		stop := bt.stops[i]
		if s == nil {
			var r handlers.TraceRecord
			if e.Record != nil {
				r = e.Record(i)
			} else {
				r.ID, r.Key = e.Records[i].ID, e.Records[i].Key
			}
			links := bt.t.links(r)
			for _, l := range links {
				bt.batch.AddLink(l)
			}
			_, s = bt.t.startRecord(bt.ctx, bt.name, links, bt.recordAttrs(r), trace.WithTimestamp(now))
		}
		if stop.IsZero() {
			stop = now
		}
		var env = envelopeOf(e, i)
		settle(s, e.Records[i], env, e.Destination)
		s.End(trace.WithTimestamp(stop))
	}
	b := bt.batch
	b.SetAttributes(
		attribute.Int("sluice.succeeded", count(e, batch.Succeeded)),
		attribute.Int("sluice.failed", count(e, batch.Failed)),
		attribute.Int("sluice.not_attempted", count(e, batch.NotAttempted)),
		attribute.Int("sluice.duplicates", e.Duplicates),
		attribute.Int("sluice.quarantined", e.Quarantined),
		attribute.Int("sluice.reported", reported(e)),
	)
	if e.Err != nil {
		b.SetAttributes(AttrFunctionError.Bool(true), semconv.ErrorTypeKey.String(errorType(e.Err)))
		b.SetStatus(codes.Error, e.Err.Error())
	}
	b.End()
	if inv := bt.invocation; inv != nil {
		if e.Err != nil {
			inv.SetStatus(codes.Error, e.Err.Error())
		}
		inv.End()
	}
	if !bt.t.noFlush {
		if f, ok := bt.t.tp.(interface{ ForceFlush(context.Context) error }); ok {
			_ = f.ForceFlush(ctx)
		}
	}
}

func envelopeOf(e handlers.TraceEnd, i int) (env *envelopeInfo) {
	if e.Envelopes == nil || e.Envelopes[i] == nil {
		return nil
	}
	en := e.Envelopes[i]
	return &envelopeInfo{reason: en.Reason, class: en.Class, attempts: en.Attempts}
}

type envelopeInfo struct {
	reason, class string
	attempts      int
}

// settle sets on a record's span what became of the record.
func settle(s trace.Span, o handlers.RecordOutcome, env *envelopeInfo, dest string) {
	s.SetAttributes(AttrOutcome.String(o.Outcome.String()), AttrAttempts.Int(o.Attempts), AttrReported.Bool(o.Reported))
	switch {
	case o.Quarantined:
		attrs := []attribute.KeyValue{AttrQuarantined.Bool(true), AttrQuarantineDestination.String(dest)}
		if env != nil {
			attrs = append(attrs, AttrQuarantineReason.String(env.reason), AttrErrorClass.String(env.class), AttrQuarantineAttempts.Int(env.attempts))
		}
		s.SetAttributes(attrs...)
		s.AddEvent(EventQuarantined, trace.WithAttributes(attrs...))
	case o.Duplicate:
		s.SetAttributes(AttrDuplicate.Bool(true), AttrSkipped.String(o.Skipped))
		s.AddEvent(EventDuplicate)
	case o.Skipped != "":
		s.SetAttributes(AttrSkipped.String(o.Skipped))
		s.AddEvent(EventSkipped, trace.WithAttributes(AttrSkipped.String(o.Skipped)))
	case o.Outcome == batch.Failed:
		class := batch.Classify(o.Err)
		s.SetAttributes(AttrErrorClass.String(class.String()), semconv.ErrorTypeKey.String(errorType(o.Err)))
		s.RecordError(o.Err)
		s.SetStatus(codes.Error, o.Err.Error())
	case o.Outcome == batch.NotAttempted:
		reason := "earlier-failure"
		if errors.Is(o.Err, batch.ErrDeadline) {
			reason = "deadline"
		}
		s.SetAttributes(AttrNotAttempted.String(reason))
	}
}

// errorType is error.type: the error's class, or "panic".
func errorType(err error) string {
	var pe *batch.PanicError
	if errors.As(err, &pe) {
		return "panic"
	}
	var np *batch.NoProgressError
	if errors.As(err, &np) {
		return "no_progress"
	}
	return batch.Classify(err).String()
}

func count(e handlers.TraceEnd, o batch.Outcome) int {
	n := 0
	for _, r := range e.Records {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

func reported(e handlers.TraceEnd) int {
	n := 0
	for _, r := range e.Records {
		if r.Reported {
			n++
		}
	}
	return n
}
