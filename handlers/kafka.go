package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
)

// KafkaRecord is one Kafka record from Amazon MSK or a self-managed cluster:
// the decoded value, the decoded key, and the record exactly as Lambda
// delivered it (Raw.Key and Raw.Value are still base64).
type KafkaRecord[T any] struct {
	Value T
	Key   []byte
	// Tombstone is true for a record without a value (a deletion marker on a
	// compacted topic); Value is then T's zero value.
	Tombstone bool
	Raw       events.KafkaRecord
	// DecodedKey is the key decoded by WithKafkaKey's codec (see KafkaKey);
	// nil without one, or for a record without a key.
	DecodedKey any
	// KeySchema and ValueSchema are the schema metadata Lambda adds when
	// the event source mapping validated the key or value against a schema
	// registry; nil otherwise.
	KeySchema, ValueSchema *sevents.KafkaSchemaMetadata
}

// Topic is the record's topic.
func (r KafkaRecord[T]) Topic() string { return r.Raw.Topic }

// Partition is the record's partition number.
func (r KafkaRecord[T]) Partition() int64 { return r.Raw.Partition }

// Offset is the record's offset in its partition.
func (r KafkaRecord[T]) Offset() int64 { return r.Raw.Offset }

// RecordID is the record's id, as dead-letter envelopes, RecordOutcome
// and the local runner name it: "<topic>-<partition>@<offset>".
func (r KafkaRecord[T]) RecordID() string {
	return r.TopicPartition() + "@" + strconv.FormatInt(r.Raw.Offset, 10)
}

// TopicPartition is "<topic>-<partition>", the key Lambda groups records by
// and the partition of its batch item identifier.
func (r KafkaRecord[T]) TopicPartition() string {
	return sevents.KafkaPartitionKey(r.Raw.Topic, r.Raw.Partition)
}

// Timestamp is the record's timestamp (see Raw.TimestampType).
func (r KafkaRecord[T]) Timestamp() time.Time { return r.Raw.Timestamp.Time }

// Header returns the value of the first header named name.
func (r KafkaRecord[T]) Header(name string) ([]byte, bool) {
	for _, h := range r.Raw.Headers {
		if v, ok := h[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// KafkaHandler is the Lambda handler for an Amazon MSK or self-managed Kafka
// event source mapping. It implements lambda.Handler.
type KafkaHandler[T any] struct {
	handler[KafkaRecord[T]]
}

// NewKafka returns a Kafka handler that calls fn for each record. Partial
// batch responses need the mapping in provisioned mode with
// ReportBatchItemFailures; in on-demand mode use WithWholeBatchFailures.
func NewKafka[T any](fn func(context.Context, KafkaRecord[T]) error, opts ...Option) (*KafkaHandler[T], error) {
	h, err := newHandler(source[KafkaRecord[T]]{kindKafka, sevents.SourceKafka, "handlers.NewKafka", "records",
		[]string{sourceMSK, sourceSelfManagedKafka}, KafkaRecord[T].idempotencyKey}, fn, opts)
	if err != nil {
		return nil, err
	}
	return &KafkaHandler[T]{h}, nil
}

// MustKafka is NewKafka that panics on an error, for use in main.
func MustKafka[T any](fn func(context.Context, KafkaRecord[T]) error, opts ...Option) *KafkaHandler[T] {
	h := must(NewKafka(fn, opts...))
	h.x.handler = "handlers.MustKafka"
	return h
}

// Invoke handles one Kafka event and returns the partial batch response.
func (h *KafkaHandler[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := eventscan.DecodeKafka(payload)
	if err != nil || !ev.Records {
		if err := h.x.check(payload, err); err != nil {
			return nil, err
		}
	}
	if !h.x.accepts(ev.Source) {
		return nil, h.x.mismatch(ev.Source)
	}
	recs, parts := ev.Entries, ev.Parts
	items := engineItems.Make(len(recs))
	for i := range recs {
		items[i] = engine.Item{
			ID:      recs[i].ID,
			Key:     parts[i],
			Arrival: recs[i].Record.Timestamp.Time,
		}
	}
	// One record per worker, as the Kinesis handler does: a record costs
	// no allocation of its own.
	workers := max(h.cfg.concurrency, 1)
	kb := &kafkaBatch[T]{ctx: ctx, cfg: h.cfg, recs: recs, parts: parts, arn: ev.ARN, items: items,
		scratch: make([]KafkaRecord[T], workers)}
	report, err := runBatch(ctx, &h.handler, kb, payload, items,
		batchRun{source: sevents.SourceKafka, policy: engine.PerPartition, workers: h.cfg.concurrency, resource: eventscan.KafkaTopic(parts), kafka: true})
	if err != nil {
		return nil, err
	}
	resp := sevents.KafkaEventResponse{BatchItemFailures: make([]sevents.KafkaBatchItemFailure, len(report))}
	for n, i := range report {
		resp.BatchItemFailures[n].ItemIdentifier = sevents.KafkaItemIdentifier{Partition: parts[i], Offset: recs[i].Record.Offset}
	}
	engineItems.Put(items)
	return json.Marshal(resp)
}

// kafkaBatch is a Kafka invocation's batch (batchOf).
type kafkaBatch[T any] struct {
	ctx     context.Context // the invocation's, for the key codec of record
	cfg     *config
	recs    []eventscan.KafkaEntry
	parts   []string // each record's "<topic>-<partition>"
	arn     string
	items   []engine.Item
	scratch []KafkaRecord[T] // a record per worker
}

// decode decodes record i into r.
func (b *kafkaBatch[T]) decode(ctx context.Context, i int, r *KafkaRecord[T]) error {
	e := &b.recs[i]
	if e.Err != nil {
		*r = KafkaRecord[T]{}
		return &batch.DecodeError{ID: b.items[i].ID, Err: e.Err}
	}
	if err := decodeKafkaRecordWith(ctx, b.cfg, e, r); err != nil {
		return kafkaDecodeFailure(b.items[i].ID, err)
	}
	return nil
}

func (b *kafkaBatch[T]) shell(i int) KafkaRecord[T] { return KafkaRecord[T]{Raw: b.recs[i].Record} }

func (b *kafkaBatch[T]) record(i int) (KafkaRecord[T], error) {
	var r KafkaRecord[T]
	err := b.decode(b.ctx, i, &r)
	return r, err
}

func (b *kafkaBatch[T]) handle(ctx context.Context, w, i int, next batch.Handler[KafkaRecord[T]]) error {
	r := &b.scratch[w]
	if err := b.decode(ctx, i, r); err != nil {
		return err
	}
	return next.Handle(ctx, *r)
}

func (b *kafkaBatch[T]) describe(i int, e *dlq.Envelope) {
	r := &b.recs[i].Record
	e.Source, e.SourceARN = sevents.SourceKafka, b.arn
	part, off := r.Partition, r.Offset
	e.Topic, e.Partition = r.Topic, &part
	if b.recs[i].Err != nil { // only the offset is known: the rest from the partition key
		if k := strings.LastIndexByte(b.parts[i], '-'); k >= 0 {
			n, _ := strconv.ParseInt(b.parts[i][k+1:], 10, 64)
			e.Topic, part = b.parts[i][:k], n
		}
	}
	e.Offset = &off
	e.EventID = e.Topic + "-" + strconv.FormatInt(part, 10) + "-" + strconv.FormatInt(off, 10)
	if t := r.Timestamp.Time; !t.IsZero() {
		e.ArrivalTime = t.UTC()
	}
}

// decodeKafkaRecord decodes e into r with the handler's Codec (its key
// and value bytes were base64-decoded with the event).
func decodeKafkaRecord[T any](c Codec, e *eventscan.KafkaEntry, r *KafkaRecord[T]) error {
	*r = KafkaRecord[T]{Raw: e.Record}
	if e.Record.Key != "" {
		if e.KeyErr != nil {
			return fmt.Errorf("kafka key is not valid base64: %w", e.KeyErr)
		}
		r.Key = e.Key
	}
	if e.Record.Value == "" {
		r.Tombstone = true
		return nil
	}
	if e.ValueErr != nil {
		return fmt.Errorf("kafka value is not valid base64: %w", e.ValueErr)
	}
	return decodeValue(c, e.Value, &r.Value)
}
