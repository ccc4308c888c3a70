package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/jsonplan"
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
	cfg   *config
	chain pipeline[KafkaRecord[T]]
	x     expect
}

// NewKafka returns a Kafka handler that calls fn for each record. Partial
// batch responses need the mapping in provisioned mode with
// ReportBatchItemFailures; in on-demand mode use WithWholeBatchFailures.
func NewKafka[T any](fn func(context.Context, KafkaRecord[T]) error, opts ...Option) (*KafkaHandler[T], error) {
	c, err := newConfig(kindKafka, sevents.SourceKafka, opts)
	if err != nil {
		return nil, err
	}
	h, err := chain(c, fn, KafkaRecord[T].idempotencyKey)
	if err != nil {
		return nil, fmt.Errorf("sluice: %s handler: %w", sevents.SourceKafka, err)
	}
	return &KafkaHandler[T]{cfg: c, chain: h, x: expect{"handlers.NewKafka", "records", []string{sourceMSK, sourceSelfManagedKafka}}}, nil
}

// MustKafka is NewKafka that panics on an error, for use in main.
func MustKafka[T any](fn func(context.Context, KafkaRecord[T]) error, opts ...Option) *KafkaHandler[T] {
	h := must(NewKafka(fn, opts...))
	h.x.handler = "handlers.MustKafka"
	return h
}

type kafkaEntry struct {
	rec events.KafkaRecord
	err error
	id  string // the batch item identifier, when the decoder made it
}

// kafkaEvent is a decoded Kafka event.
type kafkaEvent struct {
	entries []kafkaEntry
	parts   []string // the topic-partition of each entry
	source  string   // the event's eventSource
	arn     string   // the event's eventSourceArn (MSK)
	records bool     // the event has a records object
	// scanned says the fast scanner read the event: it takes no record
	// with schema metadata, so there is none to look for.
	scanned bool
}

// decodeKafkaEvent decodes the records of a Kafka event in a stable order:
// topic-partitions sorted by key, records as delivered (offset order). Like
// decodeRecordArray it isolates a malformed record when it can.
func decodeKafkaEvent(payload []byte) (kafkaEvent, error) {
	if ev, ok := scanKafkaEvent(payload); ok {
		return ev, nil
	}
	// The plan decoder first (see decodeRecordArray), kept equal to
	// encoding/json by FuzzEnvelopeAgrees.
	var whole kafkaWhole
	if jsonplan.For(reflect.TypeOf(whole)).Unmarshal(payload, unsafe.Pointer(&whole), false) == nil {
		keys, n := partitionsOf(whole.Records)
		out := make([]kafkaEntry, 0, n)
		parts := make([]string, 0, n)
		for _, k := range keys {
			for _, rec := range whole.Records[k] {
				out = append(out, kafkaEntry{rec: rec})
				parts = append(parts, k)
			}
		}
		return kafkaEvent{out, parts, whole.EventSource, whole.EventSourceArn, whole.Records != nil, false}, nil
	}
	var loose struct {
		EventSource    string                       `json:"eventSource"`
		EventSourceArn string                       `json:"eventSourceArn"`
		Records        map[string][]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(payload, &loose); err != nil {
		return kafkaEvent{}, fmt.Errorf("sluice: kafka: the event is not a Kafka event: %w", err)
	}
	keys, n := partitionsOf(loose.Records)
	out := make([]kafkaEntry, 0, n)
	parts := make([]string, 0, n)
	for _, k := range keys {
		for j, raw := range loose.Records[k] {
			var e kafkaEntry
			if err := json.Unmarshal(raw, &e.rec); err != nil {
				var off struct {
					Offset *int64 `json:"offset"`
				}
				if json.Unmarshal(raw, &off) != nil || off.Offset == nil {
					return kafkaEvent{}, fmt.Errorf("sluice: kafka: record %d of %s is malformed and has no offset to report it by: %w", j, k, err)
				}
				e.rec.Offset = *off.Offset
				e.err = fmt.Errorf("malformed kafka record: %w", err)
			}
			out = append(out, e)
			parts = append(parts, k)
		}
	}
	return kafkaEvent{out, parts, loose.EventSource, loose.EventSourceArn, loose.Records != nil, false}, nil
}

type kafkaWhole struct {
	EventSource    string                          `json:"eventSource"`
	EventSourceArn string                          `json:"eventSourceArn"`
	Records        map[string][]events.KafkaRecord `json:"records"`
}

// partitionsOf returns the topic-partition keys of an event's records map,
// sorted, and how many records it holds.
func partitionsOf[R any](records map[string][]R) ([]string, int) {
	keys := make([]string, 0, len(records))
	n := 0
	for k, rs := range records {
		keys = append(keys, k)
		n += len(rs)
	}
	slices.Sort(keys)
	return keys, n
}

// Invoke handles one Kafka event and returns the partial batch response.
func (h *KafkaHandler[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := decodeKafkaEvent(payload)
	if err != nil || !ev.records {
		if err := h.x.check(payload, err); err != nil {
			return nil, err
		}
	}
	if !h.x.accepts(ev.source) {
		return nil, h.x.mismatch(ev.source)
	}
	recs, parts := ev.entries, ev.parts
	var meta []kafkaMeta
	if !ev.scanned {
		meta = kafkaSchemaMetadata(payload, len(recs))
	}
	items := engineItems.make(len(recs))
	for i := range recs {
		id := recs[i].id
		if id == "" {
			id = parts[i] + "@" + strconv.FormatInt(recs[i].rec.Offset, 10)
		}
		items[i] = engine.Item{
			ID:      id,
			Key:     parts[i],
			Arrival: recs[i].rec.Timestamp.Time,
		}
	}
	// decode decodes record i into r, its key and value bytes into a (a
	// worker's own; nil for a fresh allocation each).
	decode := func(i int, a *arena, r *KafkaRecord[T]) error {
		e := &recs[i]
		if e.err != nil {
			*r = KafkaRecord[T]{}
			return &batch.DecodeError{ID: items[i].ID, Err: e.err}
		}
		if err := decodeKafkaRecordWith(ctx, h.cfg, e.rec, meta, i, a, r); err != nil {
			return kafkaDecodeFailure(items[i].ID, err)
		}
		return nil
	}
	ctx, ecfg := h.chain.begin(ctx, h.cfg.engine(sevents.SourceKafka, engine.PerPartition, h.cfg.concurrency), &hookBatch[KafkaRecord[T]]{
		items: items, payload: payload, kafka: true,
		shell: func(i int) KafkaRecord[T] { return KafkaRecord[T]{Raw: recs[i].rec} },
		record: func(i int) (KafkaRecord[T], error) {
			var r KafkaRecord[T]
			err := decode(i, nil, &r)
			return r, err
		},
		describe: func(i int, e *dlq.Envelope) {
			r := &recs[i].rec
			e.Source, e.SourceARN = sevents.SourceKafka, ev.arn
			part, off := r.Partition, r.Offset
			e.Topic, e.Partition = r.Topic, &part
			if recs[i].err != nil { // only the offset is known: the rest from the partition key
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
	arenas := make([]arena, workers)
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
		resp.BatchItemFailures[n].ItemIdentifier = sevents.KafkaItemIdentifier{Partition: parts[i], Offset: recs[i].rec.Offset}
	}
	engineItems.put(items)
	return json.Marshal(resp)
}

// decodeKafkaRecord decodes raw into r with the handler's Codec, the key
// and value bytes into a (see base64Bytes).
func decodeKafkaRecord[T any](c Codec, raw events.KafkaRecord, a *arena, r *KafkaRecord[T]) error {
	*r = KafkaRecord[T]{Raw: raw}
	if raw.Key != "" {
		k, err := base64Bytes(a, raw.Key)
		if err != nil {
			return fmt.Errorf("kafka key is not valid base64: %w", err)
		}
		r.Key = k
	}
	if raw.Value == "" {
		r.Tombstone = true
		return nil
	}
	v, err := base64Bytes(a, raw.Value)
	if err != nil {
		return fmt.Errorf("kafka value is not valid base64: %w", err)
	}
	return decodeValue(c, v, &r.Value)
}

// base64Bytes decodes a Kafka key or value: into the arena when it is clean
// padded base64 (the arena's memory is never reused, so the bytes stay the
// record's), else, or without an arena, by encoding/base64, which also
// words the error.
func base64Bytes(a *arena, s string) ([]byte, error) {
	if a != nil {
		dst := a.alloc(base64.StdEncoding.DecodedLen(len(s)))
		if n, ok := decodeStdBase64(dst, unsafe.Slice(unsafe.StringData(s), len(s))); ok && n > 0 {
			return dst[:n:n], nil
		}
	}
	return base64.StdEncoding.DecodeString(s)
}
