package handlers

import (
	"encoding/json"

	jsonv1 "github.com/go-json-experiment/json/v1"
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

// JSON is the default codec: encoding/json's rules (its v1 API and
// semantics), by github.com/go-json-experiment/json/v1, the v1 face of
// encoding/json/v2, which the Go team maintains as the mirror of the
// standard library's (an experiment in Go 1.25 and 1.26, stable in 1.27,
// where the module becomes an alias of it). It decodes a payload in about
// half encoding/json's time with a third of its allocations, and uses no
// unsafe code. Sluice's own code only finds each record's bytes in the
// event (internal/eventscan); FuzzJSONCodecAgrees keeps this codec equal
// to encoding/json. The faster JSON libraries for Go (bytedance/sonic,
// goccy/go-json, segmentio/encoding, json-iterator) get their speed from
// unsafe, and some from machine code generated at run time: choosing one is
// a trade a user can make with WithCodec, not one Sluice makes for every
// payload. StdJSON is encoding/json itself.
func JSON() Codec { return jsonCodec{} }

type jsonCodec struct{}

func (jsonCodec) Unmarshal(data []byte, v any) error { return jsonv1.Unmarshal(data, v) }

// decodeStringValue decodes a payload held in a string (an SQS body). A
// *string receives s itself; anything else decodes from a copy of its
// bytes (a []byte target keeps that copy).
func decodeStringValue[T any](c Codec, s string, v *T) error {
	if p, ok := any(v).(*string); ok {
		*p = s
		return nil
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
