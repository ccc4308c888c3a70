package handlers

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/slicepool"
)

// SQSRecord is one SQS message: the decoded body and the message exactly as
// Lambda delivered it.
type SQSRecord[T any] struct {
	Value T
	Raw   events.SQSMessage
}

// MessageID is the message's id, its batch item identifier.
func (r SQSRecord[T]) MessageID() string { return r.Raw.MessageId }

// RecordID is the record's id, as dead-letter envelopes, RecordOutcome
// and the local runner name it: the message id.
func (r SQSRecord[T]) RecordID() string { return r.Raw.MessageId }

// ItemID names item i of the message (an S3Notification's records, the
// objects of one message): the message id, "#" and i (events.ItemID).
// Name the effect of each object by it.
func (r SQSRecord[T]) ItemID(i int) string { return sevents.ItemID(r.Raw.MessageId, i) }

// Body is the message body as delivered.
func (r SQSRecord[T]) Body() string { return r.Raw.Body }

// ReceiveCount is ApproximateReceiveCount: 1 on the first delivery, and one
// more on each redelivery. 0 if the attribute is missing.
func (r SQSRecord[T]) ReceiveCount() int {
	n, _ := strconv.Atoi(r.Raw.Attributes["ApproximateReceiveCount"])
	return n
}

// decodeSQSEvent decodes an SQS event (eventscan.DecodeSQSBodies): the
// messages, and each one's body as bytes of its own for the codec. The
// result shares no memory with payload, which the Lambda runtime reuses.
func decodeSQSEvent(payload []byte) ([]events.SQSMessage, [][]byte, []error, error) {
	return eventscan.DecodeSQSBodies(payload, sqsMessages.Get(), sqsBodyBytes.Get())
}

// sqsMessages and sqsBodyBytes keep the slices of one SQS invocation's
// messages and bodies for the next (SQSHandler.Invoke puts them back; the
// bodies' bytes themselves are never reused).
var (
	sqsMessages  slicepool.Pool[events.SQSMessage]
	sqsBodyBytes slicepool.Pool[[]byte]
)

// GroupID is the FIFO message group id ("" on a standard queue).
func (r SQSRecord[T]) GroupID() string { return r.Raw.Attributes["MessageGroupId"] }

// SentTime is when SQS received the message (SentTimestamp).
func (r SQSRecord[T]) SentTime() time.Time {
	return eventscan.UnixMilli(r.Raw.Attributes["SentTimestamp"])
}

// SQSHandler is the Lambda handler for an SQS event source mapping. It
// implements lambda.Handler.
type SQSHandler[T any] struct {
	handler[SQSRecord[T]]
	fifo bool
}

// NewSQS returns an SQS handler that calls fn for each message. A batch from a
// FIFO queue (its ARN ends in ".fifo") is processed in order, as SQSFIFO does;
// any other batch with bounded concurrency, reporting every failure.
func NewSQS[T any](fn func(context.Context, SQSRecord[T]) error, opts ...Option) (*SQSHandler[T], error) {
	return newSQS(fn, false, opts)
}

// NewSQSFIFO returns an SQS handler that always applies the FIFO policy: in
// order, and after a failure the failed message and every later message (or,
// with WithSkipGroupOnFailure, every later message of its group) are
// reported without being processed.
func NewSQSFIFO[T any](fn func(context.Context, SQSRecord[T]) error, opts ...Option) (*SQSHandler[T], error) {
	return newSQS(fn, true, opts)
}

func newSQS[T any](fn func(context.Context, SQSRecord[T]) error, fifo bool, opts []Option) (*SQSHandler[T], error) {
	name, ctor := sevents.SourceSQS, "handlers.NewSQS"
	if fifo {
		name, ctor = sevents.SourceSQSFIFO, "handlers.NewSQSFIFO"
	}
	h, err := newHandler(source[SQSRecord[T]]{kindSQS, name, ctor, "Records", []string{sourceSQS}, SQSRecord[T].idempotencyKey}, fn, opts)
	if err != nil {
		return nil, err
	}
	return &SQSHandler[T]{h, fifo}, nil
}

// MustSQS is NewSQS that panics on an error, for use in main.
func MustSQS[T any](fn func(context.Context, SQSRecord[T]) error, opts ...Option) *SQSHandler[T] {
	h := must(NewSQS(fn, opts...))
	h.x.handler = "handlers.MustSQS"
	return h
}

// MustSQSFIFO is NewSQSFIFO that panics on an error, for use in main.
func MustSQSFIFO[T any](fn func(context.Context, SQSRecord[T]) error, opts ...Option) *SQSHandler[T] {
	h := must(NewSQSFIFO(fn, opts...))
	h.x.handler = "handlers.MustSQSFIFO"
	return h
}

// Invoke handles one SQS event and returns the partial batch response.
func (h *SQSHandler[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	recs, bodies, decErrs, err := decodeSQSEvent(payload)
	if err != nil || recs == nil {
		if err := h.x.check(payload, err); err != nil {
			return nil, err
		}
	}
	fifo := h.fifo || len(recs) > 0 && strings.HasSuffix(recs[0].EventSourceARN, ".fifo")
	items := engineItems.Make(len(recs))
	if len(recs) > 0 && recs[0].EventSource == "" {
		if err := h.x.foreign(payload); err != nil {
			return nil, err // a Firehose event decodes as records without ids
		}
	}
	for i := range recs {
		if src := recs[i].EventSource; src != sourceSQS && src != "" {
			return nil, h.x.mismatch(src)
		}
		items[i] = engine.Item{ID: recs[i].MessageId, Key: recs[i].MessageId, Arrival: eventscan.UnixMilli(recs[i].Attributes["SentTimestamp"])}
		if fifo {
			items[i].Key = recs[i].Attributes["MessageGroupId"]
		}
	}
	policy, workers := engine.Independent, h.cfg.concurrency
	source := sevents.SourceSQS
	if fifo {
		source = sevents.SourceSQSFIFO
		policy, workers = engine.Ordered, 1
		if h.cfg.skipGroup {
			policy = engine.OrderedPerGroup
			if !h.cfg.concurrencySet {
				workers = 1
			}
		}
	}
	// Each worker decodes into a value of its own, and the record is put
	// together on the way to the function: the message is not copied into
	// the heap once more.
	b := &sqsBatch[T]{recs: recs, bodies: bodies, errs: decErrs, items: items, codec: h.cfg.codec,
		scratch: make([]T, max(workers, 1)), skip: skippable[T]()}
	report, err := runBatch(ctx, &h.handler, b, payload, items, batchRun{source: source, policy: policy, workers: workers, resource: eventscan.SQSQueue(recs)})
	if err != nil {
		return nil, err
	}
	out := batchresponse.AppendStringFailures(make([]byte, 0, 32+len(report)*64), report, func(i int) string { return items[i].ID })
	// Invoke is done with both: nothing it started still runs.
	sqsMessages.Put(recs)
	sqsBodyBytes.Put(bodies)
	engineItems.Put(items)
	return out, nil
}

// sqsBatch is an SQS invocation's batch (batchOf).
type sqsBatch[T any] struct {
	recs []events.SQSMessage
	// bodies[i] is message i's body as bytes no string shares, for its
	// first decoding (nil once used, or when it has none): the value is
	// decoded from them without a copy; a later decoding of the same
	// message (a retry, the idempotency keys read ahead) copies the body,
	// so each gets bytes of its own, which a []byte value or a type's
	// UnmarshalJSON may keep or change.
	bodies  [][]byte
	errs    []error // the messages that did not decode, or nil
	items   []engine.Item
	codec   Codec
	scratch []T  // a value per worker
	skip    bool // T can be the s3:TestEvent message (skippable)
}

// decode decodes message i's body into *v, which must be zero.
func (b *sqsBatch[T]) decode(i int, v *T) error {
	if b.errs != nil && b.errs[i] != nil {
		return &batch.DecodeError{ID: b.items[i].ID, Err: b.errs[i]}
	}
	data := b.bodies[i]
	b.bodies[i] = nil
	if err := decodeBodyValue(b.codec, b.recs[i].Body, data, v); err != nil {
		return &batch.DecodeError{ID: b.items[i].ID, Err: err}
	}
	return nil
}

func (b *sqsBatch[T]) shell(i int) SQSRecord[T] { return SQSRecord[T]{Raw: b.recs[i]} }

func (b *sqsBatch[T]) record(i int) (r SQSRecord[T], err error) {
	r.Raw = b.recs[i]
	return r, b.decode(i, &r.Value)
}

func (b *sqsBatch[T]) handle(ctx context.Context, w, i int, next batch.Handler[SQSRecord[T]]) error {
	v := &b.scratch[w]
	var zero T
	*v = zero
	if err := b.decode(i, v); err != nil {
		return err
	}
	if b.skip {
		if why := skipValue(v); why != "" {
			answeredWithout(ctx, why, "") // the s3:TestEvent message: acknowledged, not run
			return nil
		}
	}
	return next.Handle(ctx, SQSRecord[T]{Value: *v, Raw: b.recs[i]})
}

func (b *sqsBatch[T]) describe(i int, e *dlq.Envelope) {
	r := &b.recs[i]
	e.Source, e.SourceARN, e.EventID = sevents.SourceSQS, r.EventSourceARN, r.MessageId
	e.MessageGroup, e.SequenceNumber = r.Attributes["MessageGroupId"], r.Attributes["SequenceNumber"]
	if t := eventscan.UnixMilli(r.Attributes["SentTimestamp"]); !t.IsZero() {
		e.ArrivalTime = t.UTC()
	}
	e.Attempts, _ = strconv.Atoi(r.Attributes["ApproximateReceiveCount"])
}
