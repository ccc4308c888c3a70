// Package eventfile turns the records of a Lambda event (package
// invocation's Event) into records lines, the JSON objects of a localtest
// records file: what localtest.ReadRecordsFile does with an event file.
// Every payload byte is kept: Kinesis data and Kafka keys, values and
// header values become text fields when they are UTF-8 text and base64
// fields (dataBase64, keyBase64, valueBase64, headersBase64) when they are
// not; Kafka headers keep their order and repeated names; a KPL aggregate
// becomes "aggregate" only when aggregating its user records again gives
// its exact bytes (else, a bad checksum or tags, its bytes as they are);
// DynamoDB keys and images stay AttributeValue JSON ("dynamodb"), so
// binary, sets, lists, maps, booleans and nulls keep their types. SQS
// attributes are kept except the ones the runner assigns, and
// MessageGroupId and MessageDeduplicationId go to their own fields.
package eventfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	DataBase64   []byte          `json:"dataBase64,omitempty"`
	Aggregate    []userRecord    `json:"aggregate,omitempty"`

	DynamoDB  *images `json:"dynamodb,omitempty"`
	EventName string  `json:"eventName,omitempty"`

	Body                   json.RawMessage             `json:"body,omitempty"`
	MessageGroupID         string                      `json:"messageGroupId,omitempty"`
	MessageDeduplicationID string                      `json:"messageDeduplicationId,omitempty"`
	Attributes             map[string]string           `json:"attributes,omitempty"`
	MessageAttributes      map[string]messageAttribute `json:"messageAttributes,omitempty"`

	Partition     *int                `json:"partition,omitempty"`
	Key           json.RawMessage     `json:"key,omitempty"`
	KeyBase64     []byte              `json:"keyBase64,omitempty"`
	Value         json.RawMessage     `json:"value,omitempty"`
	ValueBase64   []byte              `json:"valueBase64,omitempty"`
	Headers       []map[string]string `json:"headers,omitempty"`
	HeadersBase64 []map[string][]byte `json:"headersBase64,omitempty"`
}

// images is localtest.DynamoDBImages: a change's keys and images in
// AttributeValue JSON, as the stream record carries them.
type images struct {
	Keys     map[string]events.DynamoDBAttributeValue `json:"Keys"`
	NewImage map[string]events.DynamoDBAttributeValue `json:"NewImage,omitempty"`
	OldImage map[string]events.DynamoDBAttributeValue `json:"OldImage,omitempty"`
}

// userRecord is localtest.UserRecord: one user record of an aggregate.
type userRecord struct {
	PartitionKey    string          `json:"partitionKey"`
	ExplicitHashKey string          `json:"explicitHashKey,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	DataBase64      []byte          `json:"dataBase64,omitempty"`
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
	switch src {
	case sevents.SourceKinesis:
		var r events.KinesisEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		rec.PartitionKey = r.Kinesis.PartitionKey
		data := r.Kinesis.Data
		if data == nil {
			data = []byte{} // the event's "data" is "": an empty record
		}
		if users, ok := exactAggregate(data); ok {
			// A KPL aggregate that the runner aggregates again to the same
			// bytes: its user records, readable.
			for _, u := range users {
				ur := userRecord{PartitionKey: u.PartitionKey, ExplicitHashKey: u.ExplicitHashKey}
				ur.Data, ur.DataBase64 = payload(u.Data)
				rec.Aggregate = append(rec.Aggregate, ur)
			}
		} else {
			rec.Data, rec.DataBase64 = payload(data)
		}
	case sevents.SourceDynamoDB:
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		rec.EventName = r.EventName
		rec.DynamoDB = &images{Keys: r.Change.Keys, NewImage: r.Change.NewImage, OldImage: r.Change.OldImage}
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

// payload is bytes as a records line's payload field: a JSON string when
// they are text, else their base64 form. Either way the runner sends
// these exact bytes; the choice is for the reader of the line.
func payload(b []byte) (text json.RawMessage, b64 []byte) {
	if b == nil {
		return nil, nil
	}
	if !isText(b) {
		return nil, b
	}
	out, _ := json.Marshal(string(b))
	return out, nil
}

// isText reports whether b is UTF-8 text without control characters other
// than tab, newline and carriage return: a Confluent-framed Avro value is
// valid UTF-8 but reads better as base64.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}

// exactAggregate returns the user records of data when it is a KPL
// aggregate that kpl.Encode gives again byte for byte (no tags, the KPL's
// own layout and a good checksum); ok is false for anything else, which a
// records line then carries as its bytes.
func exactAggregate(data []byte) ([]kpl.Record, bool) {
	users, ok, err := kpl.Deaggregate(data)
	if !ok || err != nil || len(users) == 0 {
		return nil, false
	}
	for _, u := range users {
		if u.Tags != nil {
			return nil, false
		}
	}
	return users, bytes.Equal(kpl.Encode(users), data)
}

// addKafka converts one record of a Kafka event: its partition is the
// number of its records-map key "<topic>-<n>" (else its own field).
func (e *converter) addKafka(er invocation.Record) error {
	var r events.KafkaRecord
	if err := json.Unmarshal(er.JSON, &r); err != nil {
		return fmt.Errorf("records[%q]: %w", er.Partition, err)
	}
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
		text *json.RawMessage
		bin  *[]byte
	}{{"key", r.Key, &rec.Key, &rec.KeyBase64}, {"value", r.Value, &rec.Value, &rec.ValueBase64}} {
		if f.b64 == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f.b64)
		if err != nil {
			return fmt.Errorf("%s.%s is not base64: %w", where, f.name, err)
		}
		*f.text, *f.bin = payload(b)
	}
	// The headers in the event's order, repeated names kept: all as text
	// when every value is UTF-8, else all in base64.
	text := true
	for _, h := range r.Headers {
		for _, v := range h {
			text = text && isText(v)
		}
	}
	for _, h := range r.Headers {
		for _, name := range slices.Sorted(maps.Keys(h)) {
			if text {
				rec.Headers = append(rec.Headers, map[string]string{name: string(h[name])})
			} else {
				rec.HeadersBase64 = append(rec.HeadersBase64, map[string][]byte{name: h[name]})
			}
		}
	}
	e.records = append(e.records, rec)
	return nil
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
