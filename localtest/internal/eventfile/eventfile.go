// Package eventfile turns the records of a Lambda event (package
// invocation's Event) into records lines, the JSON objects of a localtest
// records file: what localtest.ReadRecordsFile does with an event file.
// Kinesis data and Kafka keys, values and header values are decoded from
// base64 (bytes that are not UTF-8 text are replaced, with a note);
// DynamoDB images become plain JSON (N stays a number with all its
// digits, sets become lists, binary becomes its base64 text, with a note);
// SQS attributes are kept except the ones the runner assigns, and
// MessageGroupId and MessageDeduplicationId go to their own fields.
package eventfile

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/invocation"
)

// line is a records line: localtest.InputRecord's fields an event record
// fills, by their JSON names.
type line struct {
	PartitionKey string          `json:"partitionKey,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	Aggregate    []userRecord    `json:"aggregate,omitempty"`

	Keys      json.RawMessage `json:"keys,omitempty"`
	NewImage  json.RawMessage `json:"newImage,omitempty"`
	OldImage  json.RawMessage `json:"oldImage,omitempty"`
	EventName string          `json:"eventName,omitempty"`

	Body                   json.RawMessage             `json:"body,omitempty"`
	MessageGroupID         string                      `json:"messageGroupId,omitempty"`
	MessageDeduplicationID string                      `json:"messageDeduplicationId,omitempty"`
	Attributes             map[string]string           `json:"attributes,omitempty"`
	MessageAttributes      map[string]messageAttribute `json:"messageAttributes,omitempty"`

	Partition *int              `json:"partition,omitempty"`
	Key       json.RawMessage   `json:"key,omitempty"`
	Value     json.RawMessage   `json:"value,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// userRecord is localtest.UserRecord: one user record of an aggregate.
type userRecord struct {
	PartitionKey    string          `json:"partitionKey"`
	ExplicitHashKey string          `json:"explicitHashKey,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// messageAttribute is localtest.MessageAttribute.
type messageAttribute struct {
	DataType    string  `json:"dataType"`
	StringValue *string `json:"stringValue,omitempty"`
	BinaryValue []byte  `json:"binaryValue,omitempty"`
}

// Records turns the records of a stream or queue event into records lines,
// with notes on what a line cannot keep (see localtest.ReadRecordsFile).
func Records(ev *invocation.Event) ([]json.RawMessage, []Note, error) {
	c := &converter{}
	for i, r := range ev.Records {
		var err error
		switch ev.Source {
		case sevents.SourceKafka:
			err = c.addKafka(r)
		case sevents.SourceKinesis, sevents.SourceDynamoDB, sevents.SourceSQS, sevents.SourceSQSFIFO:
			if err = c.addRecord(ev.Source, r.JSON); err != nil {
				err = fmt.Errorf("in Records[%d]: %w", i, err)
			}
		default:
			err = fmt.Errorf("%s events do not hold records lines", invocation.SourceName(ev.Source))
		}
		if err != nil {
			return nil, nil, err
		}
	}
	lines := make([]json.RawMessage, len(c.records))
	for i, rec := range c.records {
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("record %d: %w", i+1, err)
		}
		lines[i] = b
	}
	return lines, c.notes, nil
}

// converter collects the records lines of an event and the notes on them.
type converter struct {
	records []line
	notes   []Note
}

// A Note says what a records line cannot keep of its event record.
type Note struct {
	Record int // the record's index in the event
	Text   string
}

func (e *converter) note(record int, format string, args ...any) {
	e.notes = append(e.notes, Note{record, fmt.Sprintf(format, args...)})
}

// addRecord converts one element of a Records list of an event of source
// src.
func (e *converter) addRecord(src sevents.Source, raw json.RawMessage) error {
	n := len(e.records)
	var rec line
	var err error
	switch src {
	case sevents.SourceKinesis:
		var r events.KinesisEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		rec.PartitionKey = r.Kinesis.PartitionKey
		if users, ok, err := kpl.Deaggregate(r.Kinesis.Data); ok && err == nil && len(users) > 0 {
			// A KPL aggregate: its user records, aggregated again when sent.
			for k, u := range users {
				if u.Tags != nil {
					e.note(n, "user record %d of the KPL aggregate has tags, which a records line does not carry: they are dropped", k)
				}
				rec.Aggregate = append(rec.Aggregate, userRecord{PartitionKey: u.PartitionKey, ExplicitHashKey: u.ExplicitHashKey,
					Data: e.text(n, fmt.Sprintf("kinesis.data user record %d", k), u.Data)})
			}
		} else {
			rec.Data = e.text(n, "kinesis.data", r.Kinesis.Data)
		}
	case sevents.SourceDynamoDB:
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		rec.EventName = r.EventName
		if rec.Keys, err = e.image(n, "Keys", r.Change.Keys); err != nil {
			return err
		}
		if rec.NewImage, err = e.image(n, "NewImage", r.Change.NewImage); err != nil {
			return err
		}
		if rec.OldImage, err = e.image(n, "OldImage", r.Change.OldImage); err != nil {
			return err
		}
		if r.UserIdentity != nil {
			e.note(n, "userIdentity %s/%s (a TTL deletion) is not kept: the record becomes a plain %s", r.UserIdentity.Type, r.UserIdentity.PrincipalID, or(r.EventName, "REMOVE"))
		}
	case sevents.SourceSQS, sevents.SourceSQSFIFO:
		var r events.SQSMessage
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		rec.Body, _ = json.Marshal(r.Body)
		for k, v := range r.Attributes {
			switch k {
			case "MessageGroupId":
				rec.MessageGroupID = v
			case "MessageDeduplicationId":
				rec.MessageDeduplicationID = v
			case "ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp", "SequenceNumber":
				// the runner's to assign
			default:
				if rec.Attributes == nil {
					rec.Attributes = map[string]string{}
				}
				rec.Attributes[k] = v
			}
		}
		rec.MessageAttributes = messageAttributes(r.MessageAttributes)
	}
	e.records = append(e.records, rec)
	return nil
}

// text is bytes as a records line's data/value: a JSON string. Bytes that
// are not UTF-8 cannot be one; they are replaced, with a note.
func (e *converter) text(record int, field string, b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	if !utf8.Valid(b) {
		e.note(record, "%s is %d bytes of binary (not UTF-8 text), which a records line cannot carry: invalid bytes became U+FFFD; send the event unchanged with sluice invoke", field, len(b))
	}
	out, _ := json.Marshal(validText(b))
	return out
}

// validText is b with each byte that is not part of UTF-8 text replaced by
// U+FFFD, as a JSON string would have it.
func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string([]rune(string(b)))
}

// image turns a DynamoDB image in AttributeValue JSON into a plain JSON
// object, as a records line holds it.
func (e *converter) image(record int, field string, img map[string]events.DynamoDBAttributeValue) (json.RawMessage, error) {
	if img == nil {
		return nil, nil
	}
	plain := make(map[string]any, len(img))
	for _, k := range slices.Sorted(maps.Keys(img)) {
		v, err := e.plainValue(record, field+"."+k, img[k])
		if err != nil {
			return nil, err
		}
		plain[k] = v
	}
	out, err := json.Marshal(plain)
	if err != nil {
		return nil, fmt.Errorf("dynamodb.%s: %w", field, err)
	}
	return out, nil
}

func (e *converter) plainValue(record int, path string, v events.DynamoDBAttributeValue) (any, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return v.String(), nil
	case events.DataTypeNumber:
		if !isJSONNumber(v.Number()) {
			return nil, fmt.Errorf("dynamodb.%s: N %q is not a number", path, v.Number())
		}
		return json.Number(v.Number()), nil
	case events.DataTypeBoolean:
		return v.Boolean(), nil
	case events.DataTypeNull:
		return nil, nil
	case events.DataTypeBinary:
		e.note(record, "dynamodb.%s is binary (B): it becomes its base64 text, a string (S)", path)
		return base64.StdEncoding.EncodeToString(v.Binary()), nil
	case events.DataTypeStringSet:
		e.note(record, "dynamodb.%s is a string set (SS): it becomes a list (L)", path)
		return v.StringSet(), nil
	case events.DataTypeNumberSet:
		e.note(record, "dynamodb.%s is a number set (NS): it becomes a list (L)", path)
		out := make([]any, len(v.NumberSet()))
		for i, n := range v.NumberSet() {
			nv, err := e.plainValue(record, path, events.NewNumberAttribute(n))
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	case events.DataTypeBinarySet:
		e.note(record, "dynamodb.%s is a binary set (BS): it becomes a list of base64 strings", path)
		out := make([]string, len(v.BinarySet()))
		for i, b := range v.BinarySet() {
			out[i] = base64.StdEncoding.EncodeToString(b)
		}
		return out, nil
	case events.DataTypeList:
		out := make([]any, len(v.List()))
		for i, el := range v.List() {
			pv, err := e.plainValue(record, fmt.Sprintf("%s[%d]", path, i), el)
			if err != nil {
				return nil, err
			}
			out[i] = pv
		}
		return out, nil
	case events.DataTypeMap:
		m := v.Map()
		out := make(map[string]any, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			pv, err := e.plainValue(record, path+"."+k, m[k])
			if err != nil {
				return nil, err
			}
			out[k] = pv
		}
		return out, nil
	}
	return nil, fmt.Errorf("dynamodb.%s: unknown attribute value type %d", path, v.DataType())
}

// addKafka converts one record of a Kafka event: its partition is the
// number of its records-map key "<topic>-<n>" (else its own field).
func (e *converter) addKafka(er invocation.Record) error {
	var r events.KafkaRecord
	if err := json.Unmarshal(er.JSON, &r); err != nil {
		return fmt.Errorf("records[%q]: %w", er.Partition, err)
	}
	n := len(e.records)
	where := fmt.Sprintf("records[%q] offset %d", er.Partition, r.Offset)
	partition := r.Partition
	if _, pn, err := sevents.ParseKafkaPartitionKey(er.Partition); err == nil {
		partition = pn
	}
	if partition < 0 || partition > 1<<31-1 {
		return fmt.Errorf("%s: partition %d is out of range", where, partition)
	}
	pi := int(partition)
	rec := line{Partition: &pi}
	for _, f := range []struct {
		name string
		b64  string
		dst  *json.RawMessage
	}{{"key", r.Key, &rec.Key}, {"value", r.Value, &rec.Value}} {
		if f.b64 == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f.b64)
		if err != nil {
			return fmt.Errorf("%s.%s is not base64: %w", where, f.name, err)
		}
		*f.dst = e.text(n, f.name, b)
	}
	for _, h := range r.Headers {
		for _, name := range slices.Sorted(maps.Keys(h)) {
			if rec.Headers == nil {
				rec.Headers = map[string]string{}
			}
			if _, dup := rec.Headers[name]; dup {
				e.note(n, "header %q appears more than once: a records line keeps the last", name)
			}
			if !utf8.Valid(h[name]) {
				e.note(n, "header %q is binary (not UTF-8 text): invalid bytes became U+FFFD", name)
			}
			rec.Headers[name] = validText(h[name])
		}
	}
	e.records = append(e.records, rec)
	return nil
}

// isJSONNumber reports whether s is a JSON number, as DynamoDB writes N.
func isJSONNumber(s string) bool {
	return s != "" && strings.TrimSpace(s) == s && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

// messageAttributes is the attributes of an SQS event record as a
// records line carries them.
func messageAttributes(attrs map[string]events.SQSMessageAttribute) map[string]messageAttribute {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]messageAttribute, len(attrs))
	for k, a := range attrs {
		out[k] = messageAttribute{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
