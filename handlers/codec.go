package handlers

import (
	"encoding/json"
	"unsafe"

	gojson "github.com/goccy/go-json"
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

// JSON is the default codec: github.com/goccy/go-json, which agrees with
// encoding/json on the inputs we test (FuzzJSONCodecAgrees) and decodes an
// order-sized document several times faster with a few allocations. Decoded
// strings share memory with the record's payload instead of being copied;
// Sluice gives every record its own payload bytes and never reuses them, so
// this is safe, but a value kept after the invocation keeps its payload
// alive too.
func JSON() Codec { return jsonCodec{} }

type jsonCodec struct{}

var noCopy = gojson.DecodeNoCopyString()

func (jsonCodec) Unmarshal(data []byte, v any) error {
	return gojson.UnmarshalWithOption(data, v, noCopy)
}

// decodeStringValue decodes a payload held in a string (an SQS body). The
// default codec reads it in place, without copying: it never writes to its
// input, and the strings it returns may then share the body's memory, which
// is immutable. Raw targets and other codecs get a copy.
func decodeStringValue[T any](c Codec, s string, v *T) error {
	if _, ok := c.(jsonCodec); ok && s != "" {
		switch any(v).(type) {
		case *[]byte, *json.RawMessage:
		default:
			return decodeValue(c, unsafe.Slice(unsafe.StringData(s), len(s)), v)
		}
	}
	return decodeValue(c, []byte(s), v)
}

// decodeValue decodes data into v. A *[]byte receives data itself and a
// *json.RawMessage the same bytes; anything else goes through the codec.
func decodeValue[T any](c Codec, data []byte, v *T) error {
	switch p := any(v).(type) {
	case *[]byte:
		*p = data
		return nil
	case *json.RawMessage:
		*p = data
		return nil
	}
	if _, ok := c.(jsonCodec); ok {
		return gojson.UnmarshalOf(data, v, noCopy)
	}
	return c.Unmarshal(data, v)
}
