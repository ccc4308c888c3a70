package handlers

import (
	"encoding/json"
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

// JSON is the default codec.
func JSON() Codec { return StdJSON() }

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
	return c.Unmarshal(data, v)
}
