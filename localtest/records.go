package localtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
)

// InputRecord is one line of records.jsonl. Which fields count depends on the
// source (every source takes "expect", see Expect):
//
//	kinesis   {"partitionKey", "data"}, or {"partitionKey"?, "aggregate": [{"partitionKey", "data", "explicitHashKey"?, "expect"?}, ...]}
//	dynamodb  {"keys", "newImage", "oldImage", "eventName"}  (plain JSON objects; eventName defaults from the images)
//	sqs       {"body", "messageGroupId"?, "messageDeduplicationId"?, "attributes"?, "messageAttributes"?}
//	kafka     {"partition", "key", "value", "headers"?}
//
// data, body, key and value may be any JSON value, sent as its JSON text, or
// a JSON string, sent as the string. The runner assigns ids, sequence
// numbers, offsets and arrival times.
//
// "aggregate" makes the line one Kinesis record aggregated as the Kinesis
// Producer Library writes it (package events/kpl), holding those user
// records; its partitionKey defaults to the first user record's, as the
// KPL puts it. Each user record is a record of the run (UserRecord): the
// line's "expect" applies to each that has none of its own.
//
// messageAttributes are SQS message attributes in the shape an SQS event
// carries them, {"name": {"dataType": "String", "stringValue": "..."}}, with
// "binaryValue" (base64) for Binary; the SQS API's capitalised names
// (DataType, StringValue, BinaryValue) are read as well. The emulated queue
// puts them in the event with md5OfMessageAttributes, computed as SQS does.
type InputRecord struct {
	PartitionKey string          `json:"partitionKey,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	Aggregate    []UserRecord    `json:"aggregate,omitempty"`

	Keys      json.RawMessage `json:"keys,omitempty"`
	NewImage  json.RawMessage `json:"newImage,omitempty"`
	OldImage  json.RawMessage `json:"oldImage,omitempty"`
	EventName string          `json:"eventName,omitempty"`

	Body                   json.RawMessage             `json:"body,omitempty"`
	MessageGroupID         string                      `json:"messageGroupId,omitempty"`
	MessageDeduplicationID string                      `json:"messageDeduplicationId,omitempty"`
	Attributes             map[string]string           `json:"attributes,omitempty"`
	MessageAttributes      map[string]MessageAttribute `json:"messageAttributes,omitempty"`

	Partition *int              `json:"partition,omitempty"`
	Key       json.RawMessage   `json:"key,omitempty"`
	Value     json.RawMessage   `json:"value,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`

	// Expect is the fate the record must end with for the run to pass
	// (one of Fates; default processed, or filtered when the mapping's
	// FilterCriteria drop it): "quarantined" for a record the function
	// should park in its dead letters, "on-failure" for a poison record on
	// a stream, "dead-lettered" for a message the queue's redrive policy
	// should move. It is not sent to the function.
	Expect string `json:"expect,omitempty"`

	// Line is the records-file line the record came from (ReadRecords sets
	// it); the report and error messages name the record by it. Zero for
	// records made in Go: they are named by their position in
	// Options.Records instead.
	Line int `json:"-"`
}

// UserRecord is one user record of a Kinesis records line's "aggregate":
// a record of the run in its own right, named
// "<sequenceNumber>:<subSequenceNumber>" (its index in the aggregate,
// from 0), as the handlers and dead letters name it.
type UserRecord struct {
	PartitionKey    string          `json:"partitionKey"`
	ExplicitHashKey string          `json:"explicitHashKey,omitempty"`
	Data            json.RawMessage `json:"data"`
	// Expect is the fate this user record must end with, as
	// InputRecord.Expect (which it overrides for this user record; the
	// line's applies to the others).
	Expect string `json:"expect,omitempty"`
}

// kinesisData is the partition key and data of a Kinesis input record:
// for an aggregate, the KPL's bytes, the first user record's key and the
// user records.
func kinesisData(r InputRecord) (partitionKey string, data []byte, users []kpl.Record, err error) {
	if len(r.Aggregate) == 0 {
		return r.PartitionKey, payloadText(r.Data), nil, nil
	}
	if len(r.Data) > 0 {
		return "", nil, nil, errors.New(`a Kinesis record has "data" or "aggregate", not both`)
	}
	users = make([]kpl.Record, len(r.Aggregate))
	for i, u := range r.Aggregate {
		if u.PartitionKey == "" {
			return "", nil, nil, fmt.Errorf("user record %d of the aggregate needs a partitionKey", i)
		}
		users[i] = kpl.Record{PartitionKey: u.PartitionKey, ExplicitHashKey: u.ExplicitHashKey, Data: payloadText(u.Data)}
	}
	return or(r.PartitionKey, users[0].PartitionKey), kpl.Encode(users), users, nil
}

// LineError is a records.jsonl line that is not a record.
type LineError struct {
	Line  int  // 1-based
	First bool // no record came before it
	Err   error
}

func (e *LineError) Error() string { return fmt.Sprintf("records line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ReadRecords reads records.jsonl: one JSON object per line; blank lines
// are skipped. An error names the line (*LineError).
func ReadRecords(r io.Reader) ([]InputRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []InputRecord
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var rec InputRecord
		if err := dec.Decode(&rec); err != nil {
			return nil, &LineError{Line: n, First: len(out) == 0, Err: err}
		}
		if rec.Expect != "" {
			if err := checkFateName(rec.Expect); err != nil {
				return nil, &LineError{Line: n, Err: fmt.Errorf("expect: %w", err)}
			}
		}
		for j, u := range rec.Aggregate {
			if u.Expect != "" {
				if err := checkFateName(u.Expect); err != nil {
					return nil, &LineError{Line: n, Err: fmt.Errorf("user record %d of the aggregate: expect: %w", j, err)}
				}
			}
		}
		rec.Line = n
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	return out, nil
}

// recordShapes is the shape of a records.jsonl line for each source.
var recordShapes = map[events.Source]string{
	events.SourceKinesis:  `{"partitionKey", "data"} or {"partitionKey"?, "aggregate": [{"partitionKey", "data", "explicitHashKey"?, "expect"?}, ...]}`,
	events.SourceDynamoDB: `{"keys", "newImage"?, "oldImage"?, "eventName"?}`,
	events.SourceSQS:      `{"body", "attributes"?, "messageAttributes"?}`,
	events.SourceSQSFIFO:  `{"body", "messageGroupId", "messageDeduplicationId"?, "attributes"?, "messageAttributes"?}`,
	events.SourceKafka:    `{"partition"?, "key"?, "value", "headers"?}`,
}

// sourceFields lists, per field of InputRecord, whether rec sets it and the
// source it belongs to.
func sourceFields(rec InputRecord) []struct {
	name   string
	source events.Source
	set    bool
} {
	return []struct {
		name   string
		source events.Source
		set    bool
	}{
		{"partitionKey", events.SourceKinesis, rec.PartitionKey != ""},
		{"data", events.SourceKinesis, len(rec.Data) > 0},
		{"aggregate", events.SourceKinesis, len(rec.Aggregate) > 0},
		{"keys", events.SourceDynamoDB, len(rec.Keys) > 0},
		{"newImage", events.SourceDynamoDB, len(rec.NewImage) > 0},
		{"oldImage", events.SourceDynamoDB, len(rec.OldImage) > 0},
		{"eventName", events.SourceDynamoDB, rec.EventName != ""},
		{"body", events.SourceSQS, len(rec.Body) > 0},
		{"messageGroupId", events.SourceSQS, rec.MessageGroupID != ""},
		{"messageDeduplicationId", events.SourceSQS, rec.MessageDeduplicationID != ""},
		{"attributes", events.SourceSQS, rec.Attributes != nil},
		{"messageAttributes", events.SourceSQS, rec.MessageAttributes != nil},
		{"partition", events.SourceKafka, rec.Partition != nil},
		{"key", events.SourceKafka, len(rec.Key) > 0},
		{"value", events.SourceKafka, len(rec.Value) > 0},
		{"headers", events.SourceKafka, rec.Headers != nil},
	}
}

var sourceNames = map[events.Source]string{
	events.SourceKinesis: "a Kinesis", events.SourceDynamoDB: "a DynamoDB Streams", events.SourceSQS: "an SQS",
	events.SourceSQSFIFO: "an SQS FIFO", events.SourceKafka: "a Kafka",
}

// checkShape rejects an input record whose fields belong to another
// source than the mapping's: such a record would otherwise be sent with an
// empty payload.
func checkShape(source events.Source, rec InputRecord) error {
	family := source
	if family == events.SourceSQSFIFO {
		family = events.SourceSQS
	}
	var foreign []string
	var owner events.Source
	for _, f := range sourceFields(rec) {
		if f.set && f.source != family {
			foreign = append(foreign, strconv.Quote(f.name))
			if owner == "" {
				owner = f.source
			}
		}
	}
	if len(foreign) == 0 {
		if source == events.SourceSQS && rec.MessageGroupID != "" {
			return fmt.Errorf(`"messageGroupId" belongs to an SQS FIFO record; an SQS standard record is %s`, recordShapes[source])
		}
		return nil
	}
	verb := "belong"
	if len(foreign) == 1 {
		verb = "belongs"
	}
	return fmt.Errorf("%s %s to %s record, but the mapping's EventSource is %s; %s record is %s",
		strings.Join(foreign, ", "), verb, sourceNames[owner], source, sourceNames[source], recordShapes[source])
}

// payloadText is the bytes a data/body/value field stands for: a JSON
// string's contents, or any other JSON value's text.
func payloadText(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	return []byte(raw)
}

// payloadID is the "id" of a JSON object payload, or "": reports name
// records by it beside their line.
func payloadID(payload []byte) string {
	v, _ := payloadField(payload, "id")
	return v
}

// payloadField returns the top-level field of a JSON object payload: a
// string's contents, or any other JSON value's text. ok is false when the
// payload is not a JSON object or lacks the field (or it is null).
func payloadField(payload []byte, field string) (string, bool) {
	if !bytes.HasPrefix(bytes.TrimSpace(payload), []byte("{")) {
		return "", false
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(payload, &v) != nil {
		return "", false
	}
	t := jsonText(v[field])
	return t, t != ""
}

// jsonText is a JSON string's contents, or any other JSON value's text; ""
// for none or null.
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
