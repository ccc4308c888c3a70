package handlers

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
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
//
// The handlers decode a payload, always into a zero value, in one pass:
// with go-json-experiment's v1 options but ReportErrorsWithLegacySemantics,
// which differs from them only in how errors are reported and in reading
// the whole payload once before decoding it, to check it is JSON (which
// keeps a value untouched by a payload that is not JSON: a handler never
// keeps such a value, the record fails). When that pass fails, the value
// is zeroed and decoded again with all of the v1 options, so a record that
// does not decode fails with encoding/json's own error, and the rare type
// or payload that only the v1 rules take (fields whose names clash, a key
// matching two fields case-insensitively, a string tag where it means
// nothing) decodes as encoding/json decodes it; from then on that codec
// decodes every payload with the full v1 options, in the two passes of
// encoding/json (the handler's logger says so once, at WARN, naming the
// type: a slower path is never silent). A type's UnmarshalJSON can run twice for a record that
// fails to decode. FuzzJSONCodecAgrees and FuzzCodecProbesAgree keep the
// result, and the error, equal to encoding/json's. Unmarshal itself,
// whose value need not be zero, is jsonv1.Unmarshal.
func JSON() Codec { return new(jsonCodec) }

type jsonCodec struct {
	// full: a payload failed the one pass and decoded with the v1 options
	// (the type needs them): every later one goes straight there.
	full atomic.Bool
	// logger, when a handler built with this codec set one, hears of the
	// switch to the v1 options once (noteFull): a slower path is never
	// taken silently.
	logger atomic.Pointer[slog.Logger]
}

// noteFull makes the codec log its switch to the full v1 options with l,
// unless a logger was set before (a codec shared by several handlers logs
// with the first one's).
func (c *jsonCodec) noteFull(l *slog.Logger) { c.logger.CompareAndSwap(nil, l) }

func (*jsonCodec) Unmarshal(data []byte, v any) error { return jsonv1.Unmarshal(data, v) }

// onePass is the v1 options but for the error reporting (and the check
// that goes with it).
var onePass = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// unmarshalZero decodes data into *v, which must be zero: in one pass,
// else with the v1 options (JSON).
func unmarshalZero[T any](c *jsonCodec, data []byte, v *T) error {
	if !c.full.Load() {
		if jsonv2.Unmarshal(data, v, onePass) == nil {
			return nil
		}
		var zero T
		*v = zero
		if err := jsonv1.Unmarshal(data, v); err != nil {
			return err
		}
		if !c.full.Swap(true) {
			if l := c.logger.Load(); l != nil {
				l.Warn("sluice: the payload type decodes only under encoding/json's full rules (a field name clash, "+
					"a key that matches two fields case-insensitively, or a string tag where it means nothing): "+
					"this codec now decodes every payload in encoding/json's two passes, about twice the time; "+
					"fix the type's tags to keep the one-pass decoding", slog.String("type", fmt.Sprintf("%T", *v)))
			}
		}
		return nil
	}
	return jsonv1.Unmarshal(data, v)
}

// decodeStringValue decodes a payload held in a string (an SNS message):
// decodeBodyValue with no bytes of its own.
func decodeStringValue[T any](c Codec, s string, v *T) error { return decodeBodyValue(c, s, nil, v) }

// decodeBodyValue decodes a payload held in a string (an SQS body). A
// *string receives s itself; anything else decodes from data, s's text in
// bytes of its own that nothing else uses, or when data is nil from a copy
// of s (a []byte target keeps them).
func decodeBodyValue[T any](c Codec, s string, data []byte, v *T) error {
	if p, ok := any(v).(*string); ok {
		*p = s
		return nil
	}
	if data == nil {
		data = []byte(s)
	}
	return decodeValue(c, data, v)
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
	if jc, ok := c.(*jsonCodec); ok {
		return unmarshalZero(jc, data, v)
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
