package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/eventscan"
)

// A KafkaCodec decodes a Kafka record's key or value into v. data is the
// key or value as Lambda delivered it, base64-decoded: with its wire header
// (Confluent, Glue) unless the event source mapping validated it against a
// schema registry, in which case schema is the metadata Lambda added and
// the header is gone; schema is nil otherwise. ctx is the invocation's, for
// a registry lookup.
//
// Implementations are in package kafkacodec (JSON, String) and its
// subpackages avro and protobuf; they must be safe for concurrent use.
type KafkaCodec interface {
	DecodeKafka(ctx context.Context, data []byte, schema *sevents.KafkaSchemaMetadata, v any) error
}

// KafkaCodecFunc adapts a function to a KafkaCodec.
type KafkaCodecFunc func(ctx context.Context, data []byte, schema *sevents.KafkaSchemaMetadata, v any) error

// DecodeKafka calls f.
func (f KafkaCodecFunc) DecodeKafka(ctx context.Context, data []byte, schema *sevents.KafkaSchemaMetadata, v any) error {
	return f(ctx, data, schema, v)
}

// Event record formats of an event source mapping's SchemaRegistryConfig.
const (
	KafkaRecordFormatJSON   = "JSON"
	KafkaRecordFormatSource = "SOURCE"
)

// kafkaCodecs is the Kafka decoding configuration.
type kafkaCodecs struct {
	value     KafkaCodec
	key       func(ctx context.Context, data []byte, schema *sevents.KafkaSchemaMetadata, asJSON bool) (any, error)
	keySet    bool
	format    string
	formatSet bool
}

func (c *config) kafkaCodecs() *kafkaCodecs {
	if c.kafka == nil {
		c.kafka = &kafkaCodecs{}
	}
	return c.kafka
}

// validate reports Kafka options given to a handler of another source.
func (k *kafkaCodecs) validate(kind sourceKind) error {
	if k != nil && kind != kindKafka {
		return errors.New("WithKafkaValue, WithKafkaKey and WithKafkaEventRecordFormat apply to Kafka handlers only")
	}
	return nil
}

// WithKafkaValue decodes each Kafka record's value into T with codec, in
// place of WithCodec: kafkacodec.JSON, avro.New, protobuf.New. Without it
// the value is decoded with the handler's Codec (JSON by default).
//
// A value that does not decode fails its record only, permanently: the
// record's error is a *batch.DecodeError wrapping a *KafkaDecodeError
// (topic, partition, offset), which wraps the codec's error (for the
// kafkacodec codecs a *kafkacodec.DecodeError naming the format, framing
// and schema id). Without this option (and WithKafkaKey), a value the
// handler's Codec rejects fails as a *batch.DecodeError wrapping that
// codec's error directly, with no *KafkaDecodeError.
//
// A schema registry that cannot answer (unreachable, an error status)
// fails the record as transient instead, not as a *batch.DecodeError, so
// Lambda delivers it again. Decoding runs once per delivery: in-process
// retries (WithRetry) wrap the function, not decoding, so the registry is
// not asked again within the invocation.
func WithKafkaValue(codec KafkaCodec) Option {
	return func(c *config) {
		if codec == nil {
			c.errs = append(c.errs, errors.New("WithKafkaValue: codec is nil"))
		}
		c.kafkaCodecs().value = codec
	}
}

// WithKafkaKey decodes each Kafka record's key into a K with codec;
// KafkaKey[K](record) returns it. Without it only the raw key bytes
// (KafkaRecord.Key) are there. A record without a key gets no decoded key.
func WithKafkaKey[K any](codec KafkaCodec) Option {
	return func(c *config) {
		if codec == nil {
			c.errs = append(c.errs, errors.New("WithKafkaKey: codec is nil"))
		}
		k := c.kafkaCodecs()
		k.keySet = true
		k.key = func(ctx context.Context, data []byte, schema *sevents.KafkaSchemaMetadata, asJSON bool) (any, error) {
			var key K
			var err error
			if asJSON {
				err = json.Unmarshal(data, &key)
			} else {
				err = codec.DecodeKafka(ctx, data, schema, &key)
			}
			return key, err
		}
	}
}

// WithKafkaEventRecordFormat states the EventRecordFormat of the event
// source mapping's schema registry configuration: KafkaRecordFormatJSON
// (Lambda delivers validated keys and values as JSON) or
// KafkaRecordFormatSource (in their own encoding, without the wire header).
//
// A key or value Lambda validated carries schema metadata. In JSON format
// it is decoded as JSON into its type whatever codec is set, since the
// encoding is gone: give the type json tags (or field names) that match the
// schema's fields. In SOURCE format it goes to the codec. Without this
// option a validated key or value that is a JSON object is taken as JSON
// (an Avro or Protobuf payload that happens to be valid JSON would be
// misread: set the format to be exact).
func WithKafkaEventRecordFormat(format string) Option {
	return func(c *config) {
		if format != KafkaRecordFormatJSON && format != KafkaRecordFormatSource {
			c.errs = append(c.errs, fmt.Errorf("WithKafkaEventRecordFormat(%q): want %q or %q", format, KafkaRecordFormatJSON, KafkaRecordFormatSource))
		}
		k := c.kafkaCodecs()
		k.format, k.formatSet = format, true
	}
}

// KafkaKey returns the key WithKafkaKey decoded, and whether there is one of
// type K.
func KafkaKey[K, T any](r KafkaRecord[T]) (K, bool) {
	k, ok := r.DecodedKey.(K)
	return k, ok
}

// KafkaDecodeError is a Kafka key or value that did not decode with
// WithKafkaValue or WithKafkaKey set, or of a record Lambda validated
// against a schema registry. It wraps the codec's error. When that error is permanent (anything but a
// transient registry failure) a *batch.DecodeError wraps the
// KafkaDecodeError in turn, as it wraps the handler's Codec's error for a
// value decoded without WithKafkaValue.
type KafkaDecodeError struct {
	Part      string // "key" or "value"
	Topic     string
	Partition int64
	Offset    int64
	// SchemaID is the id in Lambda's schema metadata, if the mapping
	// validated the record; the codec's error names the id in a wire header.
	SchemaID string
	Err      error
}

func (e *KafkaDecodeError) Error() string {
	id := ""
	if e.SchemaID != "" {
		id = " (validated against schema " + e.SchemaID + ")"
	}
	return fmt.Sprintf("kafka %s of %s-%d at offset %d%s did not decode: %v", e.Part, e.Topic, e.Partition, e.Offset, id, e.Err)
}

func (e *KafkaDecodeError) Unwrap() error { return e.Err }

// kafkaDecodeFailure is the error a record fails with when its key or value
// did not decode: permanent (a batch.DecodeError), unless the codec says the
// failure is transient (a schema registry out of reach), when the record
// fails plainly and Lambda delivers it again.
func kafkaDecodeFailure(id string, err error) error {
	if batch.Classify(err) == batch.ClassTransient {
		return err
	}
	return &batch.DecodeError{ID: id, Err: err}
}

// decodeKafkaRecordWith decodes a record with the handler's Kafka codecs
// and the record's schema metadata into r.
func decodeKafkaRecordWith[T any](ctx context.Context, c *config, e *eventscan.KafkaEntry, r *KafkaRecord[T]) error {
	raw, m := e.Record, e.Meta
	k := c.kafka
	if k == nil && m.Key == nil && m.Value == nil {
		return decodeKafkaRecord(c.codec, e, r)
	}
	if k == nil {
		k = &kafkaCodecs{}
	}
	*r = KafkaRecord[T]{Raw: raw, KeySchema: m.Key, ValueSchema: m.Value}
	fail := func(part string, s *sevents.KafkaSchemaMetadata, err error) error {
		e := &KafkaDecodeError{Part: part, Topic: raw.Topic, Partition: raw.Partition, Offset: raw.Offset, Err: err}
		if s != nil {
			e.SchemaID = s.SchemaID
		}
		return e
	}
	var err error
	if raw.Key != "" {
		if e.KeyErr != nil {
			return fail("key", m.Key, fmt.Errorf("not valid base64: %w", e.KeyErr))
		}
		key := e.Key
		r.Key = key
		if k.key != nil {
			if r.DecodedKey, err = k.key(ctx, key, m.Key, eventscan.KafkaAsJSON(m.Key, k.format, key)); err != nil {
				return fail("key", m.Key, err)
			}
		}
	}
	if raw.Value == "" {
		r.Tombstone = true
		return nil
	}
	if e.ValueErr != nil {
		return fail("value", m.Value, fmt.Errorf("not valid base64: %w", e.ValueErr))
	}
	v := e.Value
	switch {
	case k.value == nil || eventscan.KafkaAsJSON(m.Value, k.format, v):
		err = decodeValue(c.codec, v, &r.Value)
	default:
		err = k.value.DecodeKafka(ctx, v, m.Value, &r.Value)
	}
	if err != nil {
		return fail("value", m.Value, err)
	}
	return nil
}
