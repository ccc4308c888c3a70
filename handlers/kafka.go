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
	var meta []kafkaMeta
	if !ev.Scanned {
		meta = kafkaSchemaMetadata(payload, len(recs))
	}
	items := engineItems.make(len(recs))
	for i := range recs {
		id := recs[i].ID
		if id == "" {
			id = parts[i] + "@" + strconv.FormatInt(recs[i].Record.Offset, 10)
		}
		items[i] = engine.Item{
			ID:      id,
			Key:     parts[i],
			Arrival: recs[i].Record.Timestamp.Time,
		}
	}
	// decode decodes record i into r, its key and value bytes into a (a
	// worker's own; nil for a fresh allocation each).
	decode := func(i int, a *eventscan.Arena, r *KafkaRecord[T]) error {
		e := &recs[i]
		if e.Err != nil {
			*r = KafkaRecord[T]{}
			return &batch.DecodeError{ID: items[i].ID, Err: e.Err}
		}
		if err := decodeKafkaRecordWith(ctx, h.cfg, e.Record, meta, i, a, r); err != nil {
			return kafkaDecodeFailure(items[i].ID, err)
		}
		return nil
	}
	ctx, ecfg := h.chain.begin(ctx, h.cfg.engine(sevents.SourceKafka, engine.PerPartition, h.cfg.concurrency), &hookBatch[KafkaRecord[T]]{
		items: items, payload: payload, kafka: true,
		shell: func(i int) KafkaRecord[T] { return KafkaRecord[T]{Raw: recs[i].Record} },
		record: func(i int) (KafkaRecord[T], error) {
			var r KafkaRecord[T]
			err := decode(i, nil, &r)
			return r, err
		},
		describe: func(i int, e *dlq.Envelope) {
			r := &recs[i].Record
			e.Source, e.SourceARN = sevents.SourceKafka, ev.ARN
			part, off := r.Partition, r.Offset
			e.Topic, e.Partition = r.Topic, &part
			if recs[i].Err != nil { // only the offset is known: the rest from the partition key
				if k := strings.LastIndexByte(parts[i], '-'); k >= 0 {
					n, _ := strconv.ParseInt(parts[i][k+1:], 10, 64)
					e.Topic, part = parts[i][:k], n
				}
			}
			e.Offset = &off
			e.EventID = e.Topic + "-" + strconv.FormatInt(part, 10) + "-" + strconv.FormatInt(off, 10)
			if t := r.Timestamp.Time; !t.IsZero() {
				e.ArrivalTime = t.UTC()
			}
		},
	})
	// One record and one arena per worker, as the Kinesis handler does:
	// a record costs no allocation of its own.
	workers := max(h.cfg.concurrency, 1)
	scratch := make([]KafkaRecord[T], workers)
	arenas := make([]eventscan.Arena, workers)
	res := engine.Run(ctx, items, ecfg, func(ctx context.Context, w, i int) error {
		return h.chain.run(ctx, i, func(ctx context.Context) error {
			r := &scratch[w]
			if err := decode(i, &arenas[w], r); err != nil {
				return err
			}
			return h.chain.Handle(ctx, *r)
		})
	})
	report, err := h.cfg.outcome(ctx, sevents.SourceKafka, kafkaTopicOf(parts), items, res)
	if err != nil {
		return nil, err
	}
	resp := sevents.KafkaEventResponse{BatchItemFailures: make([]sevents.KafkaBatchItemFailure, len(report))}
	for n, i := range report {
		resp.BatchItemFailures[n].ItemIdentifier = sevents.KafkaItemIdentifier{Partition: parts[i], Offset: recs[i].Record.Offset}
	}
	engineItems.put(items)
	return json.Marshal(resp)
}

// decodeKafkaRecord decodes raw into r with the handler's Codec, the key
// and value bytes into a (see eventscan.Base64).
func decodeKafkaRecord[T any](c Codec, raw events.KafkaRecord, a *eventscan.Arena, r *KafkaRecord[T]) error {
	*r = KafkaRecord[T]{Raw: raw}
	if raw.Key != "" {
		k, err := eventscan.Base64(a, raw.Key)
		if err != nil {
			return fmt.Errorf("kafka key is not valid base64: %w", err)
		}
		r.Key = k
	}
	if raw.Value == "" {
		r.Tombstone = true
		return nil
	}
	v, err := eventscan.Base64(a, raw.Value)
	if err != nil {
		return fmt.Errorf("kafka value is not valid base64: %w", err)
	}
	return decodeValue(c, v, &r.Value)
}

// kafkaTopicOf returns the topic of the first "<topic>-<partition>".
func kafkaTopicOf(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	p := parts[0]
	if i := strings.LastIndexByte(p, '-'); i > 0 {
		return p[:i]
	}
	return p
}
