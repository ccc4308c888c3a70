package localtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// The payload of a records line has two forms. The JSON form ("data",
// "body", "key", "value", "headers") is any JSON value, sent as its text,
// or a JSON string, sent as the string: readable, and what most records
// are. The base64 form ("dataBase64", "bodyBase64", "keyBase64",
// "valueBase64", "headersBase64") is the payload's exact bytes, in base64
// as the AWS events carry Kinesis data and Kafka keys and values: an Avro
// or Protobuf value, gzip'd data, a KPL aggregate with a bad checksum. The
// two are separate fields, never one field read two ways, so a JSON payload
// that happens to look like base64, or like {"base64": ...}, is sent as
// written. A line gives one form of each payload, not both.

// payloadBytes is the bytes of a payload given in its JSON form raw or its
// base64 form b64 (nil when absent), or nil when neither is set.
func payloadBytes(name string, raw json.RawMessage, b64 []byte) ([]byte, error) {
	if b64 != nil && len(raw) > 0 {
		return nil, fmt.Errorf(`%q and "%sBase64" are two forms of one payload: give one`, name, name)
	}
	if b64 != nil {
		return b64, nil
	}
	return payloadText(raw), nil
}

// KafkaHeaders are the headers of a Kafka records line, in order, as the
// function receives them. In JSON, "headers" is an object
// {"name": "value", ...}, sent in the order written, or a list
// [{"name": "value"}, ...] as the Kafka event lists them, where a name may
// repeat; the values are text. KafkaHeadersBase64 ("headersBase64") takes
// the same shapes with base64 values, for bytes that are not text.
type KafkaHeaders []sevents.KafkaHeader

// KafkaHeadersBase64 are KafkaHeaders whose values are base64 in JSON.
type KafkaHeadersBase64 []sevents.KafkaHeader

// UnmarshalJSON reads an object or a list of text values.
func (h *KafkaHeaders) UnmarshalJSON(b []byte) error {
	hs, err := decodeHeaders(b, false)
	*h = hs
	return err
}

// MarshalJSON writes the list form, which keeps order and repeated names.
func (h KafkaHeaders) MarshalJSON() ([]byte, error) { return encodeHeaders(h, false) }

// UnmarshalJSON reads an object or a list of base64 values.
func (h *KafkaHeadersBase64) UnmarshalJSON(b []byte) error {
	hs, err := decodeHeaders(b, true)
	*h = hs
	return err
}

// MarshalJSON writes the list form with base64 values.
func (h KafkaHeadersBase64) MarshalJSON() ([]byte, error) { return encodeHeaders(h, true) }

func encodeHeaders(hs []sevents.KafkaHeader, b64 bool) ([]byte, error) {
	out := make([]map[string]string, len(hs))
	for i, h := range hs {
		v := string(h.Value)
		if b64 {
			v = base64.StdEncoding.EncodeToString(h.Value)
		}
		out[i] = map[string]string{h.Key: v}
	}
	return json.Marshal(out)
}

// decodeHeaders reads headers in the object or the list form, keeping the
// order written.
func decodeHeaders(b []byte, b64 bool) ([]sevents.KafkaHeader, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	shape := `want an object {"name": "value", ...} or a list [{"name": "value"}, ...]`
	if b64 {
		shape = `want an object {"name": "<base64>", ...} or a list [{"name": "<base64>"}, ...]`
	}
	var out []sevents.KafkaHeader
	object := func() error {
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			name := k.(string)
			var v *string
			if err := dec.Decode(&v); err != nil || v == nil {
				return fmt.Errorf("header %q: the value is not a string (%s)", name, shape)
			}
			val := []byte(*v)
			if b64 {
				if val, err = base64.StdEncoding.DecodeString(*v); err != nil {
					return fmt.Errorf("header %q: the value is not base64: %v", name, err)
				}
			}
			out = append(out, sevents.KafkaHeader{Key: name, Value: val})
		}
		_, err := dec.Token() // '}'
		return err
	}
	switch tok {
	case nil:
		return nil, nil
	case json.Delim('{'):
		if err := object(); err != nil {
			return nil, err
		}
	case json.Delim('['):
		for dec.More() {
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return nil, fmt.Errorf("an element of the headers list is not an object (%s)", shape)
			}
			if err := object(); err != nil {
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("headers: %s", shape)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("headers: text after the value")
	}
	return out, nil
}

// DynamoDBImages are a DynamoDB change's keys and images exactly as the
// stream record's "dynamodb" object carries them: AttributeValue JSON
// ({"S": ...}, {"N": "..."}, {"B": "<base64>"}, {"SS": [...]}, {"NS": [...]},
// {"BS": [...]}, {"L": [...]}, {"M": {...}}, {"BOOL": ...}, {"NULL": true}).
// A records line gives them as "dynamodb" where the plain "keys",
// "newImage", "oldImage" cannot say what a value is: binary (B), sets
// (SS, NS, BS) beside lists.
type DynamoDBImages struct {
	Keys     map[string]events.DynamoDBAttributeValue `json:"Keys"`
	NewImage map[string]events.DynamoDBAttributeValue `json:"NewImage,omitempty"`
	OldImage map[string]events.DynamoDBAttributeValue `json:"OldImage,omitempty"`
}

// check refuses attribute values DynamoDB would not write: an N that
// is not a number, an empty set, a set of such numbers.
func (d *DynamoDBImages) check() error {
	if len(d.Keys) == 0 {
		return errors.New(`"dynamodb" needs Keys, an object of attribute values`)
	}
	for _, img := range []struct {
		name string
		m    map[string]events.DynamoDBAttributeValue
	}{{"Keys", d.Keys}, {"NewImage", d.NewImage}, {"OldImage", d.OldImage}} {
		for k, v := range img.m {
			if err := checkAttribute(v); err != nil {
				return fmt.Errorf("dynamodb.%s.%s: %w", img.name, k, err)
			}
		}
	}
	return nil
}

func checkAttribute(v events.DynamoDBAttributeValue) error {
	switch v.DataType() {
	case events.DataTypeNumber:
		if !isJSONNumber(v.Number()) {
			return fmt.Errorf("the N %q is not a number", v.Number())
		}
	case events.DataTypeNumberSet:
		for _, n := range v.NumberSet() {
			if !isJSONNumber(n) {
				return fmt.Errorf("NS holds %q, which is not a number", n)
			}
		}
		if len(v.NumberSet()) == 0 {
			return errors.New("an empty NS: DynamoDB has no empty sets")
		}
	case events.DataTypeStringSet:
		if len(v.StringSet()) == 0 {
			return errors.New("an empty SS: DynamoDB has no empty sets")
		}
	case events.DataTypeBinarySet:
		if len(v.BinarySet()) == 0 {
			return errors.New("an empty BS: DynamoDB has no empty sets")
		}
	case events.DataTypeList:
		for i, el := range v.List() {
			if err := checkAttribute(el); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case events.DataTypeMap:
		for k, el := range v.Map() {
			if err := checkAttribute(el); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
	}
	return nil
}

// isJSONNumber reports whether s is a JSON number, as DynamoDB writes N.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

// plainImage is an AttributeValue image as plain JSON, for what effects and
// reports read of a record (its "payload" attribute, its id): B becomes
// its base64 text, sets lists.
func plainImage(img map[string]events.DynamoDBAttributeValue) map[string]any {
	if img == nil {
		return nil
	}
	out := make(map[string]any, len(img))
	for k, v := range img {
		out[k] = plainAttribute(v)
	}
	return out
}

func plainAttribute(v events.DynamoDBAttributeValue) any {
	switch v.DataType() {
	case events.DataTypeString:
		return v.String()
	case events.DataTypeNumber:
		return json.Number(v.Number())
	case events.DataTypeBoolean:
		return v.Boolean()
	case events.DataTypeBinary:
		return v.Binary()
	case events.DataTypeStringSet:
		return v.StringSet()
	case events.DataTypeNumberSet:
		out := make([]any, len(v.NumberSet()))
		for i, n := range v.NumberSet() {
			out[i] = json.Number(n)
		}
		return out
	case events.DataTypeBinarySet:
		return v.BinarySet()
	case events.DataTypeList:
		out := make([]any, len(v.List()))
		for i, el := range v.List() {
			out[i] = plainAttribute(el)
		}
		return out
	case events.DataTypeMap:
		return plainImage(v.Map())
	}
	return nil
}

// sqsBodyError says why SQS would not deliver body as it is: SendMessage
// takes a body of at least one character, and only the characters of XML
// (#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to
// #x10FFFF, the SendMessage API reference): SQS refuses others or replaces
// them with U+FFFD, so the function would not get these bytes.
func sqsBodyError(body []byte) error {
	if len(body) == 0 {
		return errors.New("an SQS message needs a body of at least one character (SQS refuses an empty one)")
	}
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("the body is not UTF-8 text (byte %d is 0x%02x): an SQS body is text, and SQS would refuse it or replace bytes with U+FFFD; "+
				"a producer sends binary as text, such as base64, or in a Binary message attribute", i, body[i])
		}
		if !sqsChar(r) {
			return fmt.Errorf("the body holds %U at byte %d, which SQS does not accept in a message (only #x9, #xA, #xD, #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF): "+
				"SQS would refuse it or replace it with U+FFFD; a producer sends binary as text, such as base64, or in a Binary message attribute", r, i)
		}
		i += n
	}
	return nil
}

func sqsChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// checkPayload refuses a records line of source family (an SQS FIFO line
// is an SQS one) whose payload is missing, given in both forms, or one the
// source would not deliver as written.
func checkPayload(family sevents.Source, rec InputRecord) error {
	switch family {
	case sevents.SourceKinesis:
		if len(rec.Aggregate) > 0 {
			return nil // kinesisData checks the aggregate
		}
		data, err := payloadBytes("data", rec.Data, rec.DataBase64)
		if err != nil {
			return err
		}
		if data == nil {
			return errors.New(`a Kinesis record needs "data" or "dataBase64" (an empty record: "dataBase64": "")`)
		}
	case sevents.SourceDynamoDB:
		if rec.DynamoDB != nil {
			if len(rec.Keys) > 0 || len(rec.NewImage) > 0 || len(rec.OldImage) > 0 {
				return errors.New(`the keys and images are plain JSON ("keys", "newImage", "oldImage") or AttributeValue JSON ("dynamodb"), not both`)
			}
			return rec.DynamoDB.check()
		}
		if len(rec.Keys) == 0 || string(rec.Keys) == "null" {
			return errors.New(`a DynamoDB record needs "keys" (or "dynamodb" with Keys)`)
		}
	case sevents.SourceSQS:
		body, err := payloadBytes("body", rec.Body, rec.BodyBase64)
		if err != nil {
			return err
		}
		if body == nil {
			if len(rec.Body) > 0 {
				return errors.New(`"body" is null: an SQS message needs a body of at least one character`)
			}
			return errors.New(`an SQS message needs a "body" of at least one character`)
		}
		return sqsBodyError(body)
	case sevents.SourceKafka:
		key, err := payloadBytes("key", rec.Key, rec.KeyBase64)
		if err != nil {
			return err
		}
		value, err := payloadBytes("value", rec.Value, rec.ValueBase64)
		if err != nil {
			return err
		}
		if rec.Headers != nil && rec.HeadersBase64 != nil {
			return errors.New(`"headers" and "headersBase64" are two forms of the headers: give all of them in one`)
		}
		if key == nil && value == nil && len(rec.Value) == 0 {
			return errors.New(`a Kafka record needs a "value" (or "valueBase64"), or a key ("value": null for a tombstone)`)
		}
	}
	return nil
}
