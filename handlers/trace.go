package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
)

// A Tracer turns a handler's invocations into spans. Package
// github.com/sluicehq/sluice/tracing implements it with OpenTelemetry;
// handlers itself imports no tracing library, so a function that does not
// trace links none. WithTracer sets it.
//
// Per invocation the handler calls StartBatch once, then, for each record
// it runs, BatchTrace.StartRecord on the worker running it (the user's
// function runs under the context it returns), BatchTrace.Retry for each
// in-process retry, BatchTrace.StopRecord when the record's run returned,
// and finally BatchTrace.End with what became of every record (after
// dead-letter sends and idempotency completes settled it), before the
// handler answers Lambda.
type Tracer interface {
	// StartBatch starts one invocation's batch and returns the context
	// its records run under.
	StartBatch(ctx context.Context, b TraceBatch) (context.Context, BatchTrace)
	// LogIDs returns the trace and span ids of the span current in ctx,
	// hex-encoded, or "" when there is none: the handler's log lines carry
	// them as trace_id and span_id.
	LogIDs(ctx context.Context) (traceID, spanID string)
}

// BatchTrace is one invocation's batch, as a Tracer follows it. StartRecord,
// Retry, StopRecord and RecordContext may be called from several
// goroutines at once, each for a record of its own.
type BatchTrace interface {
	// StartRecord starts record i; the user's function runs under the
	// returned context.
	StartRecord(ctx context.Context, i int, r TraceRecord) context.Context
	// Retry notes that the record running under ctx failed attempt
	// attempt transiently and will be tried again after wait.
	Retry(ctx context.Context, attempt int, err error, wait time.Duration)
	// StopRecord notes that record i's run returned (or panicked). What
	// became of it is told in End, since dead letters and idempotency may
	// still change it.
	StopRecord(i int)
	// RecordContext returns ctx with record i's span, for the log lines
	// written about it after its run.
	RecordContext(ctx context.Context, i int) context.Context
	// End ends the batch. It runs before the handler answers, so a Tracer
	// flushes its spans here (Lambda may freeze the process after the
	// answer).
	End(ctx context.Context, e TraceEnd)
}

// TraceBatch describes a batch to Tracer.StartBatch.
type TraceBatch struct {
	Source sevents.Source
	// Resource is the shard (Kinesis, DynamoDB Streams), queue (SQS) or
	// topic (Kafka) of the batch, as the handler's metrics name it.
	Resource string
	// Records is how many records the handler runs: a Kinesis event's KPL
	// aggregates count as their user records.
	Records int
	// Record returns record i (0 <= i < Records), for what the batch's
	// records share: the queue, stream, table or topic they came from.
	Record func(i int) TraceRecord
}

// TraceRecord is one record as a Tracer sees it: its identity, and the
// record as Lambda delivered it, in which a producer's span context may
// travel. Exactly one of SQS, Kinesis, DynamoDB and Kafka is set.
type TraceRecord struct {
	// ID names the record as dead letters and the runner do: a sequence
	// number, "<sequenceNumber>:<subSequenceNumber>" for a KPL user record,
	// a message id, or "<topic>-<partition>@<offset>".
	ID string
	// Key is the record's ordering key (RecordOutcome.Key).
	Key string

	SQS *events.SQSMessage
	// Kinesis is a Kinesis record; for a KPL user record, Kinesis.Data and
	// Kinesis.PartitionKey are the user record's own.
	Kinesis *events.KinesisEventRecord
	// DynamoDB is a DynamoDB Streams record. Its Change.NewImage and
	// OldImage are nil unless the handler has WithRawImages: use Image.
	DynamoDB *events.DynamoDBEventRecord
	Kafka    *events.KafkaRecord

	image func(old bool) map[string]events.DynamoDBAttributeValue
}

// Image returns a DynamoDB Streams record's new image (old false) or old
// image (old true), or nil when the record has none or is not a DynamoDB
// Streams record.
func (r TraceRecord) Image(old bool) map[string]events.DynamoDBAttributeValue {
	if r.image == nil {
		return nil
	}
	return r.image(old)
}

// TraceEnd is what became of a batch, told to BatchTrace.End.
type TraceEnd struct {
	// BatchReport is what WithOnBatch would be given: every record's
	// outcome, error, attempts, and whether it was a duplicate, quarantined
	// or reported.
	BatchReport
	// Envelopes holds, per record, the dead-letter envelope of a
	// quarantined record (its Reason, Class and Attempts say why), else
	// nil; Envelopes is nil when no record was quarantined.
	Envelopes []*dlq.Envelope
	// Destination names the dead-letter destination (WithDeadLetters): its
	// queue URL or file path where it tells one, else its type.
	Destination string
	// Record returns record i, for the records that never started
	// (NotAttempted), whose spans End starts.
	Record func(i int) TraceRecord
}

// WithTracer makes the handler trace its invocations with t (see Tracer;
// tracing.On is the OpenTelemetry one). Without it the handler does no
// tracing work at all.
func WithTracer(t Tracer) Option {
	return func(c *config) {
		if t == nil {
			c.errs = append(c.errs, errors.New("WithTracer: tracer is nil"))
			return
		}
		c.tracer = t
	}
}

// traceLogger makes the handler's log lines carry the trace and span ids
// of the span current in their context.
func (c *config) traceLogger() {
	if c.tracer != nil && c.logger != nil {
		c.logger = slog.New(traceLogHandler{c.logger.Handler(), c.tracer})
	}
}

// traceLogHandler adds trace_id and span_id to each record logged under a
// context with a span.
type traceLogHandler struct {
	slog.Handler
	t Tracer
}

func (h traceLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if tid, sid := h.t.LogIDs(ctx); tid != "" {
		r.AddAttrs(slog.String("trace_id", tid), slog.String("span_id", sid))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceLogHandler{h.Handler.WithAttrs(as), h.t}
}

func (h traceLogHandler) WithGroup(name string) slog.Handler {
	return traceLogHandler{h.Handler.WithGroup(name), h.t}
}

// batchTracer is a batch as runBatch traces it.
type batchTracer[R any] struct {
	bt   BatchTrace
	hb   *hookBatch[R]
	recs func(i int) TraceRecord
}

// traceRecorder is a batchOf that can describe its records to a Tracer.
type traceRecorder interface {
	traceRecord(i int) TraceRecord
}

// startTrace starts tracing a batch, or returns nil when the handler does
// not trace.
func startTrace[R any](ctx context.Context, c *config, hb *hookBatch[R], resource string, ecfg *engine.Config) (context.Context, *batchTracer[R]) {
	if c.tracer == nil {
		return ctx, nil
	}
	tr, ok := hb.src.(traceRecorder)
	if !ok {
		return ctx, nil
	}
	items := hb.items
	recs := func(i int) TraceRecord {
		r := tr.traceRecord(i)
		if r.ID == "" {
			r.ID = items[i].ID
		}
		r.Key = items[i].Key
		return r
	}
	ctx, bt := c.tracer.StartBatch(ctx, TraceBatch{Source: ecfg.Source, Resource: resource, Records: len(items), Record: recs})
	if bt == nil {
		return ctx, nil
	}
	ecfg.OnRetry = func(ctx context.Context, _ int, attempt int, err error, wait time.Duration) {
		bt.Retry(ctx, attempt, err, wait)
	}
	ecfg.RecordContext = bt.RecordContext
	return ctx, &batchTracer[R]{bt: bt, hb: hb, recs: recs}
}

// step wraps the pipeline's step in record i's span.
func (t *batchTracer[R]) step(next step[R]) step[R] {
	return func(ctx context.Context, w, i int, b *hookBatch[R]) error {
		ctx = t.bt.StartRecord(ctx, i, t.recs(i))
		defer t.bt.StopRecord(i)
		return next(ctx, w, i, b)
	}
}

// end tells the tracer what became of the batch.
func (t *batchTracer[R]) end(ctx context.Context, c *config, res *engine.Result, report []int, err error, ids recordIDs) {
	e := TraceEnd{BatchReport: batchReport(t.hb.source, t.hb.items, res, report, err, ids), Record: t.recs}
	if res.Parked != nil {
		e.Envelopes = make([]*dlq.Envelope, len(res.Outcomes))
		for i := range res.Outcomes {
			switch p := res.Park(i).(type) {
			case *dlq.Envelope:
				e.Envelopes[i] = p
			case sent:
				e.Envelopes[i] = p.env
			}
		}
		e.Destination = destinationName(c.dlDest)
	}
	t.bt.End(ctx, e)
}

// destinationName names a dead-letter destination for a span: its queue
// URL or path when it tells one, else its type.
func destinationName(d dlq.Destination) string {
	switch d := d.(type) {
	case nil:
		return ""
	case interface{ QueueURL() string }:
		return d.QueueURL()
	case interface{ Path() string }:
		return d.Path()
	}
	return fmt.Sprintf("%T", d)
}

// The batches of each source describe their records (traceRecorder).

func (b *sqsBatch[T]) traceRecord(i int) TraceRecord { return TraceRecord{SQS: &b.recs[i]} }

func (b *kinesisBatch[T]) traceRecord(i int) TraceRecord {
	r := TraceRecord{Kinesis: &b.ev.records[i]}
	if u := b.ev.user(i); u.Agg {
		r.ID = kpl.SubSequenceKey(b.items[i].ID, int(u.Sub))
	}
	return r
}

func (b *ddbBatch[T]) traceRecord(i int) TraceRecord {
	rec := &b.ev.recs[i]
	r := TraceRecord{DynamoDB: rec}
	var once sync.Once
	var img [2]map[string]events.DynamoDBAttributeValue
	r.image = func(old bool) map[string]events.DynamoDBAttributeValue {
		once.Do(func() {
			img[0], img[1] = rec.Change.NewImage, rec.Change.OldImage
			if b.ev.imgs != nil {
				im := &b.ev.imgs[i]
				if img[0] == nil && im.New != nil {
					img[0], _ = eventscan.ImageMap(im.New)
				}
				if img[1] == nil && im.Old != nil {
					img[1], _ = eventscan.ImageMap(im.Old)
				}
			}
		})
		if old {
			return img[1]
		}
		return img[0]
	}
	return r
}

func (b *kafkaBatch[T]) traceRecord(i int) TraceRecord { return TraceRecord{Kafka: &b.recs[i].Record} }
