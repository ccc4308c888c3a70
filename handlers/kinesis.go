package handlers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/slicepool"
)

// KinesisRecord is one Kinesis Data Streams record: the decoded payload and
// the record exactly as Lambda delivered it. Raw.Kinesis.Data holds the
// base64-decoded payload; do not modify it.
//
// A record aggregated by the Kinesis Producer Library (KPL) reaches the
// function as its user records, one KinesisRecord each (see
// docs/handlers.md): Raw is then the Kinesis record with the user record's
// data and partition key in Raw.Kinesis, and SubSequenceNumber says which
// user record of the aggregate it is.
type KinesisRecord[T any] struct {
	Value T
	Raw   events.KinesisEventRecord

	agg bool
	sub int32
	ehk string
	// outerKey is, for a KPL user record, its aggregate's partition key:
	// the key Lambda distributes the shard's records by.
	outerKey string
}

// SequenceNumber is the record's sequence number, its batch item identifier.
// The user records of a KPL aggregate share their Kinesis record's.
func (r KinesisRecord[T]) SequenceNumber() string { return r.Raw.Kinesis.SequenceNumber }

// RecordID is the record's own id, as dead-letter envelopes
// (dlq.Envelope.RecordKey), RecordOutcome.Record and the local runner
// name it: the sequence number, or for a user record of a KPL aggregate
// "<sequenceNumber>:<subSequenceNumber>" (kpl.SubSequenceKey). Name the
// record's effects by it.
func (r KinesisRecord[T]) RecordID() string {
	if r.agg {
		return kpl.SubSequenceKey(r.Raw.Kinesis.SequenceNumber, int(r.sub))
	}
	return r.Raw.Kinesis.SequenceNumber
}

// ItemID names item i of the record's payload (an S3 notification's
// records): RecordID, "#" and i (events.ItemID).
func (r KinesisRecord[T]) ItemID(i int) string { return sevents.ItemID(r.RecordID(), i) }

// SubSequenceNumber is the index of a KPL user record in its aggregate
// (0 for the first), and 0 for a record that is not aggregated. Sequence
// number and sub-sequence number together name a user record, as the
// Kinesis Client Library's extended sequence number does.
func (r KinesisRecord[T]) SubSequenceNumber() int { return int(r.sub) }

// Aggregated reports whether the record is a user record of a KPL
// aggregated record.
func (r KinesisRecord[T]) Aggregated() bool { return r.agg }

// PartitionKey is the record's partition key (a KPL user record's own).
func (r KinesisRecord[T]) PartitionKey() string { return r.Raw.Kinesis.PartitionKey }

// ExplicitHashKey is a KPL user record's explicit hash key, or "" when it
// has none or the record is not aggregated (Lambda's events do not carry
// the explicit hash key of a plain record).
func (r KinesisRecord[T]) ExplicitHashKey() string { return r.ehk }

// ShardID is the shard the record came from, taken from its event id.
func (r KinesisRecord[T]) ShardID() string {
	id, _, _ := strings.Cut(r.Raw.EventID, ":")
	return id
}

// Data is the record's payload, base64-decoded (a KPL user record's data).
func (r KinesisRecord[T]) Data() []byte { return r.Raw.Kinesis.Data }

// ArrivalTime is when Kinesis received the record.
func (r KinesisRecord[T]) ArrivalTime() time.Time {
	return r.Raw.Kinesis.ApproximateArrivalTimestamp.Time
}

// KinesisHandler is the Lambda handler for a Kinesis event source mapping. It
// implements lambda.Handler.
type KinesisHandler[T any] struct {
	handler[KinesisRecord[T]]
}

// NewKinesis returns a Kinesis handler that calls fn for each record, or an
// error for a bad option or a mapping contract it cannot honour.
func NewKinesis[T any](fn func(context.Context, KinesisRecord[T]) error, opts ...Option) (*KinesisHandler[T], error) {
	h, err := newHandler(source[KinesisRecord[T]]{kindStream, sevents.SourceKinesis, "handlers.NewKinesis", "Records",
		[]string{sourceKinesis}, KinesisRecord[T].idempotencyKey}, fn, opts)
	if err != nil {
		return nil, err
	}
	return &KinesisHandler[T]{h}, nil
}

// MustKinesis is NewKinesis for use in main: it panics on an error, so a
// misconfigured function fails at init, before it takes a batch.
func MustKinesis[T any](fn func(context.Context, KinesisRecord[T]) error, opts ...Option) *KinesisHandler[T] {
	h := must(NewKinesis(fn, opts...))
	h.x.handler = "handlers.MustKinesis"
	return h
}

// kinesisEvent is a decoded Kinesis event (eventscan.KinesisEvent, whose
// comment says what records, dataErrs and only hold).
type kinesisEvent struct {
	records  []events.KinesisEventRecord
	dataErrs []error
	only     []int64
	// After deaggregate, when the event held aggregates: records are the
	// user records, users says where each came from, parents are the
	// records as Lambda sent them.
	users   []eventscan.KinesisUser
	parents []events.KinesisEventRecord
}

// kinesisRecords keeps the slice of one Kinesis invocation's records for
// the next (KinesisHandler.Invoke puts it back).
var kinesisRecords slicepool.Pool[events.KinesisEventRecord]

// decodeKinesisEvent decodes a Kinesis event (eventscan.DecodeKinesis).
func decodeKinesisEvent(payload []byte) (kinesisEvent, error) {
	ev, err := eventscan.DecodeKinesis(payload, kinesisRecords.Get())
	return kinesisEvent{records: ev.Records, dataErrs: ev.DataErrs, only: ev.Only}, err
}

// kinesisRecordOf is record i of a deaggregated event, without its value.
func kinesisRecordOf[T any](ev *kinesisEvent, i int) KinesisRecord[T] {
	r := KinesisRecord[T]{Raw: ev.records[i]}
	if ev.users != nil {
		u := &ev.users[i]
		r.agg, r.sub, r.ehk = u.Agg, u.Sub, u.EHK
		if u.Agg {
			r.outerKey = ev.parents[u.Parent].Kinesis.PartitionKey
		}
	}
	return r
}

func must[H any](h H, err error) H {
	if err != nil {
		panic(err)
	}
	return h
}

// Invoke handles one Kinesis event and returns the partial batch response.
func (h *KinesisHandler[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := decodeKinesisEvent(payload)
	if err != nil || ev.records == nil {
		if err := h.x.check(payload, err); err != nil {
			return nil, err
		}
	}
	for i := range ev.records {
		if src := ev.records[i].EventSource; src != sourceKinesis && src != "" {
			return nil, h.x.mismatch(src)
		}
	}
	ev.deaggregate()
	recs := ev.records
	items := engineItems.Make(len(recs))
	if len(recs) > 0 && recs[0].EventSource == "" {
		if err := h.x.foreign(payload); err != nil {
			return nil, err // a Firehose event decodes as records without ids
		}
	}
	for i := range recs {
		items[i] = engine.Item{
			ID:      recs[i].Kinesis.SequenceNumber,
			Key:     recs[i].Kinesis.PartitionKey,
			Arrival: recs[i].Kinesis.ApproximateArrivalTimestamp.Time,
		}
	}
	policy, workers := engine.Stream, 1
	if h.cfg.keyConcurrency > 0 {
		policy, workers = engine.StreamPerKey, h.cfg.keyConcurrency
	}
	// As in SQSHandler.Invoke: a value per worker, the record put together
	// on the way to the function.
	b := &kinesisBatch[T]{ev: ev, items: items, codec: h.cfg.codec, scratch: make([]T, workers), skip: skippable[T]()}
	r := batchRun{source: sevents.SourceKinesis, policy: policy, workers: workers, resource: eventscan.KinesisShard(recs)}
	if ev.users != nil {
		r.records = len(ev.parents)
	}
	report, err := runBatch(ctx, &h.handler, b, payload, items, r)
	if err != nil {
		return nil, err
	}
	out := batchresponse.AppendStringFailures(make([]byte, 0, 32+len(report)*80), report, func(i int) string { return items[i].ID })
	b.ev.release()
	engineItems.Put(items)
	return out, nil
}

// kinesisBatch is a Kinesis invocation's batch (batchOf).
type kinesisBatch[T any] struct {
	ev      kinesisEvent
	items   []engine.Item
	codec   Codec
	scratch []T  // a value per worker
	skip    bool // T can be a CloudWatch Logs CONTROL_MESSAGE (skippable)
}

// decode decodes record i's data into *v, which must be zero.
func (b *kinesisBatch[T]) decode(i int, v *T) error {
	ev := &b.ev
	if ev.dataErrs != nil && ev.dataErrs[i] != nil {
		return &batch.DecodeError{ID: b.items[i].ID, Err: ev.dataErrs[i]}
	}
	if err := decodeValue(b.codec, ev.records[i].Kinesis.Data, v); err != nil {
		if u := ev.user(i); u.Agg {
			err = fmt.Errorf("KPL user record %d: %w", u.Sub, err)
		}
		return &batch.DecodeError{ID: b.items[i].ID, Err: err}
	}
	return nil
}

func (b *kinesisBatch[T]) shell(i int) KinesisRecord[T] { return kinesisRecordOf[T](&b.ev, i) }

func (b *kinesisBatch[T]) record(i int) (r KinesisRecord[T], err error) {
	r = b.shell(i)
	return r, b.decode(i, &r.Value)
}

func (b *kinesisBatch[T]) handle(ctx context.Context, w, i int, next batch.Handler[KinesisRecord[T]]) error {
	v := &b.scratch[w]
	var zero T
	*v = zero
	if err := b.decode(i, v); err != nil {
		return err
	}
	if b.skip {
		if why := skipValue(v); why != "" {
			answeredWithout(ctx, why, "") // the CloudWatch Logs CONTROL_MESSAGE: acknowledged, not run
			return nil
		}
	}
	r := b.shell(i)
	r.Value = *v
	return next.Handle(ctx, r)
}

func (b *kinesisBatch[T]) describe(i int, e *dlq.Envelope) {
	u := b.ev.user(i)
	r := &b.ev.parentRecords()[u.Parent]
	e.Source, e.SourceARN, e.EventID = sevents.SourceKinesis, r.EventSourceArn, r.EventID
	e.Shard, _, _ = strings.Cut(r.EventID, ":")
	e.SequenceNumber, e.PartitionKey = r.Kinesis.SequenceNumber, b.ev.records[i].Kinesis.PartitionKey
	e.ArrivalTime = r.Kinesis.ApproximateArrivalTimestamp.UTC()
	if u.Agg {
		sub := int64(u.Sub)
		e.EventID, e.SubSequenceNumber = kpl.SubSequenceKey(r.EventID, int(u.Sub)), &sub
	}
}

// recordID is item i's own id: a KPL user record's names its
// sub-sequence number (kpl.SubSequenceKey).
func (b *kinesisBatch[T]) recordID(i int) string {
	if u := b.ev.user(i); u.Agg {
		return kpl.SubSequenceKey(b.items[i].ID, int(u.Sub))
	}
	return b.items[i].ID
}

func (b *kinesisBatch[T]) span(i int) int {
	if b.ev.users == nil {
		return i
	}
	return int(b.ev.users[i].Parent)
}
