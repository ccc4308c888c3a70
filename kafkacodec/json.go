package kafkacodec

import (
	"context"
	"encoding/json"
	"fmt"

	sevents "github.com/sluicehq/sluice/events"
)

// JSONCodec decodes JSON keys or values, plain or framed by a Confluent or
// Glue JSON Schema serializer (the header is taken off; the document is not
// validated against the schema).
// Values are decoded by encoding/json (as handlers.JSON decodes them).
type JSONCodec struct{}

// JSON returns the JSON codec.
func JSON() JSONCodec { return JSONCodec{} }

// DecodeKafka decodes data into v.
func (JSONCodec) DecodeKafka(_ context.Context, data []byte, meta *sevents.KafkaSchemaMetadata, v any) error {
	f, err := Unframe(data, meta, WireAuto)
	if err != nil {
		return &DecodeError{Format: "json", Err: err}
	}
	if err := json.Unmarshal(f.Payload, v); err != nil {
		return &DecodeError{Format: "json", Wire: f.Wire, SchemaID: f.SchemaID, Err: err}
	}
	return nil
}

// StringCodec decodes a key or value as UTF-8 text (Kafka's
// StringSerializer) into a *string or a *[]byte.
type StringCodec struct{}

// String returns the string codec.
func String() StringCodec { return StringCodec{} }

// DecodeKafka stores data in v.
func (StringCodec) DecodeKafka(_ context.Context, data []byte, _ *sevents.KafkaSchemaMetadata, v any) error {
	switch p := v.(type) {
	case *string:
		*p = string(data)
	case *[]byte:
		*p = data
	default:
		return &DecodeError{Format: "string", Wire: WirePlain, Err: fmt.Errorf("cannot decode into %T: want *string or *[]byte", v)}
	}
	return nil
}
