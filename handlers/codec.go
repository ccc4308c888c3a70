package handlers

import (
	"encoding/json"
	"sync"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// A Codec decodes a record's payload into a Go value.
type Codec interface {
	Unmarshal(data []byte, v any) error
}

// CodecFunc adapts a function to a Codec.
type CodecFunc func(data []byte, v any) error

// Unmarshal calls f(data, v).
func (f CodecFunc) Unmarshal(data []byte, v any) error { return f(data, v) }

// StdJSON is encoding/json.
func StdJSON() Codec { return CodecFunc(json.Unmarshal) }

// JSON is the default codec: encoding/json's rules, by a decoder of
// Sluice's own that makes a plan once per payload type and decodes straight
// from the bytes with it (internal/jsonplan), handing values of types it
// does not handle (interfaces, types with UnmarshalJSON, embedded structs)
// and any input it does not expect to encoding/json; FuzzJSONCodecAgrees
// and jsonplan's own fuzz test keep the two equal. When a handler decodes a
// record's payload, decoded strings share memory with the payload instead
// of being copied; Sluice gives every record its own payload bytes and
// never reuses them, so this is safe, but a value kept after the
// invocation keeps its payload alive too. Called through the Codec
// interface, it copies.
func JSON() Codec { return jsonCodec{plans: &jsonplan.Cache{}, images: &sync.Map{}} }

type jsonCodec struct {
	plans  *jsonplan.Cache
	images *sync.Map // reflect.Type -> *eventscan.ImagePlan, for DynamoDBChange
}

func (c jsonCodec) Unmarshal(data []byte, v any) error { return c.plans.Unmarshal(data, v) }

// decodeStringValue decodes a payload held in a string (an SQS body). The
// default codec reads it in place, without copying: it never writes to its
// input, and the strings it returns may then share the body's memory, which
// is immutable. A *string receives s itself; raw targets and other codecs
// get a copy.
func decodeStringValue[T any](c Codec, s string, v *T) error {
	if p, ok := any(v).(*string); ok {
		*p = s
		return nil
	}
	if _, ok := c.(jsonCodec); ok && s != "" {
		switch any(v).(type) {
		case *[]byte, *json.RawMessage:
		default:
			return decodeValue(c, jsonplan.Bytes(s), v)
		}
	}
	return decodeValue(c, []byte(s), v)
}

// decodeValue decodes data into v, which must be zero. A *[]byte receives
// data itself, a *json.RawMessage the same bytes and a *string their text
// as is (a copy: data is also the record's raw payload); an envelope
// (SNSMessage, EventBridgeEvent, S3Notification, DynamoDBChange) decodes
// itself and its payload with the codec; anything else goes through the
// codec.
func decodeValue[T any](c Codec, data []byte, v *T) error {
	switch p := any(v).(type) {
	case *[]byte:
		*p = data
		return nil
	case *json.RawMessage:
		*p = data
		return nil
	case *string:
		*p = string(data)
		return nil
	case payloadEnvelope:
		return p.decodeEnvelope(c, data)
	}
	if jc, ok := c.(jsonCodec); ok {
		return jsonplan.DecoderOf[T](jc.plans).Unmarshal(data, v, true)
	}
	return c.Unmarshal(data, v)
}

// DecodeValue decodes a payload into *v, which must be zero, by the rules
// the handlers decode record payloads with: a []byte or json.RawMessage
// receives data itself, a string its text, an envelope (SNSMessage,
// EventBridgeEvent, S3Notification, DynamoDBChange) unwraps itself, and
// anything else goes through c. It is for code that fetches a record's
// payload itself (package largemessage); strings in *v may share data's
// memory, which must not change afterwards.
func DecodeValue[T any](c Codec, data []byte, v *T) error {
	if c == nil {
		c = JSON()
	}
	return decodeValue(c, data, v)
}
