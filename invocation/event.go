package invocation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// EventShapes describes the Lambda events ParseEvent and ParseEvents read;
// their errors for data that is no event end with it.
const EventShapes = `Lambda events as sam local generate-event writes them (pretty-printed or
on one line; one event, several one after another, or a JSON array of events):
  Kinesis             {"Records":[{"eventSource":"aws:kinesis","kinesis":{"partitionKey":..,"data":"<base64>"}}]}
  DynamoDB Streams    {"Records":[{"eventSource":"aws:dynamodb","eventName":..,"dynamodb":{"Keys":..,"NewImage":..}}]}
  SQS (standard/FIFO) {"Records":[{"eventSource":"aws:sqs","body":"..","attributes":{"MessageGroupId":..}}]}
  Amazon MSK          {"eventSource":"aws:kafka","records":{"topic-0":[{"partition":0,"value":"<base64>"}]}}
  self-managed Kafka  {"eventSource":"SelfManagedKafka","records":{"topic-0":[...]}}`

// ErrNotEvent is wrapped by the error for data that is not a Lambda event
// of a stream or queue source.
var ErrNotEvent = errors.New("not a Lambda event of a Kinesis, DynamoDB Streams, SQS or Kafka source")

// A NotEventError is data that is not a Lambda event: Why says what it is
// instead. errors.Is(err, ErrNotEvent) holds for it.
type NotEventError struct{ Why string }

func (e *NotEventError) Error() string {
	return ErrNotEvent.Error() + ": " + e.Why + "\n" + EventShapes
}

// Is makes errors.Is(err, ErrNotEvent) hold.
func (e *NotEventError) Is(target error) bool { return target == ErrNotEvent }

func notEvent(why string) error { return &NotEventError{Why: why} }

// Event is one Lambda event of a stream or queue source, or a Firehose
// transformation event.
type Event struct {
	// Source is the source kind: sevents.SourceKinesis,
	// sevents.SourceDynamoDB, sevents.SourceSQS, sevents.SourceSQSFIFO,
	// sevents.SourceKafka or sevents.SourceFirehose.
	Source sevents.Source
	// Payload is the event exactly as it was read.
	Payload json.RawMessage
	// Records are its records, in the event's order (a Kafka event's
	// partitions sorted by topic and partition).
	Records []Record
}

// Record is one record of an Event.
type Record struct {
	// ID is the identifier a partial batch response names the record by
	// (see Event.Items).
	ID string
	// JSON is the record exactly as the event holds it: an element of its
	// Records list, of a Kafka partition's list, or of a Firehose event's
	// records.
	JSON json.RawMessage
	// Partition and Offset are, for Kafka, the key of the records map the
	// record is listed under ("<topic>-<n>") and its offset.
	Partition string
	Offset    int64
}

// ParseEvent reads exactly one Lambda event of a Kinesis, DynamoDB Streams,
// SQS or Kafka source (see EventShapes), or a Firehose transformation
// event. Surrounding whitespace is dropped from Payload; nothing else is
// changed. A record the event source could not have sent (a DynamoDB N
// that is not a number, Kafka bytes that are not base64) is an error that
// names it.
func ParseEvent(data []byte) (*Event, error) {
	data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if ev, ok, err := parseFirehoseEvent(data); ok {
		return ev, err // a Firehose transformation event (firehose.go)
	}
	evs, isEvents, err := splitEvents(data)
	switch {
	case err != nil:
		return nil, err
	case !isEvents:
		return nil, notEvent("want a JSON object with a Records list or a Kafka records map")
	case data[0] == '[':
		return nil, fmt.Errorf("a JSON array of %d events: one invocation sends one event, an object (replay several with sluice run --records)", len(evs))
	case len(evs) != 1:
		return nil, fmt.Errorf("%d events one after another: one invocation sends one event (replay several with sluice run --records)", len(evs))
	}
	return parseEvent(evs[0])
}

// ParseEvents reads the events of an event file of a stream or queue
// source: one event, several one after another, or a JSON array of
// events, all of one source (see EventShapes); Firehose events are not
// read. ok is false, with no error, when data does not start with an
// event (it may be a file of another kind). An error names the event it
// is about when there are several.
func ParseEvents(data []byte) (evs []*Event, ok bool, err error) {
	raws, isEvents, err := splitEvents(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if err != nil || !isEvents {
		return nil, false, err
	}
	for i, raw := range raws {
		ev, err := parseEvent(raw)
		if err != nil {
			if len(raws) > 1 {
				return nil, true, fmt.Errorf("event %d: %w", i+1, err)
			}
			return nil, true, err
		}
		if i > 0 && ev.Source != evs[0].Source {
			return nil, true, fmt.Errorf("event %d is %s but event 1 is %s: one file holds events of one source", i+1, SourceName(ev.Source), SourceName(evs[0].Source))
		}
		evs = append(evs, ev)
	}
	return evs, true, nil
}

// Items returns the identifiers a partial batch response names the event's
// records by, in the event's order: Kinesis and DynamoDB sequence numbers,
// SQS message ids, Kafka "<topic>-<partition>@<offset>", Firehose record
// ids.
func (e *Event) Items() []string {
	ids := make([]string, len(e.Records))
	for i, r := range e.Records {
		ids[i] = r.ID
	}
	return ids
}

// SourceName is a source kind's name for messages: "Kinesis", "SQS FIFO".
func SourceName(source sevents.Source) string {
	switch source {
	case sevents.SourceKinesis:
		return "Kinesis"
	case sevents.SourceDynamoDB:
		return "DynamoDB Streams"
	case sevents.SourceSQS:
		return "SQS"
	case sevents.SourceSQSFIFO:
		return "SQS FIFO"
	case sevents.SourceKafka:
		return "Kafka"
	case sevents.SourceFirehose:
		return "Firehose"
	}
	return strconv.Quote(string(source))
}

// kafkaItem is the item identifier of a Kafka record: "<topic>-<n>@<offset>".
func kafkaItem(partition string, offset int64) string {
	return partition + "@" + strconv.FormatInt(offset, 10)
}

// splitEvents returns the events of data, or isEvents false when data does
// not start with an event. A JSON array must hold only events; a stream of
// JSON values is events when its first value is one.
func splitEvents(data []byte) (evs []json.RawMessage, isEvents bool, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if trimmed[0] == '[' {
		var arr []json.RawMessage
		if err := dec.Decode(&arr); err != nil {
			return nil, false, notEvent(fmt.Sprintf("a JSON array, but not valid JSON: %v", err))
		}
		if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
			return nil, false, notEvent("text follows the JSON array")
		}
		if len(arr) == 0 {
			return nil, false, notEvent("an empty JSON array")
		}
		for i, raw := range arr {
			if !isEventObject(raw) {
				return nil, false, notEvent(fmt.Sprintf("element %d of the JSON array is not an object with a Records list or a Kafka records map", i+1))
			}
		}
		return arr, true, nil
	}
	for n := 0; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return evs, true, nil
		} else if err != nil {
			if n == 0 {
				return nil, false, nil // not JSON values
			}
			return nil, false, fmt.Errorf("event %d: %v (after %d events)", n+1, err, n)
		}
		if !isEventObject(raw) {
			if n == 0 {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("event %d is not an object with a Records list or a Kafka records map (the file's first value is an event)", n+1)
		}
		evs = append(evs, raw)
	}
}

// isEventObject reports whether raw is an object with a Records array or a
// records object: the envelope of every stream and queue event.
func isEventObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	if v, ok := m["Records"]; ok && firstByte(v) == '[' {
		return true
	}
	v, ok := m["records"]
	return ok && firstByte(v) == '{'
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func parseEvent(raw json.RawMessage) (*Event, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, notEvent(err.Error())
	}
	e := &Event{Payload: bytes.TrimSpace(raw)}
	if list, ok := env["Records"]; ok && firstByte(list) == '[' {
		var recs []json.RawMessage
		if err := json.Unmarshal(list, &recs); err != nil {
			return nil, fmt.Errorf("the Records list: %w", err)
		}
		for i, r := range recs {
			if err := e.addRecord(r); err != nil {
				return nil, fmt.Errorf("in Records[%d]: %w", i, err)
			}
		}
		return e, nil
	}
	if m, ok := env["records"]; ok && firstByte(m) == '{' {
		if err := e.addKafka(env, m); err != nil {
			return nil, err
		}
		return e, nil
	}
	return nil, notEvent("a JSON object without a Records list or a Kafka records map")
}

// recordSource is the source kind of one Records element, by its
// eventSource or, when that is missing, by its fields.
func recordSource(fields map[string]json.RawMessage) (sevents.Source, error) {
	var src string
	if v, ok := fields["eventSource"]; ok {
		if err := json.Unmarshal(v, &src); err != nil {
			return "", fmt.Errorf("eventSource: %w", err)
		}
	}
	switch src {
	case "aws:kinesis":
		return sevents.SourceKinesis, nil
	case "aws:dynamodb":
		return sevents.SourceDynamoDB, nil
	case "aws:sqs":
		return sevents.SourceSQS, nil
	case "":
		switch {
		case fields["kinesis"] != nil:
			return sevents.SourceKinesis, nil
		case fields["dynamodb"] != nil:
			return sevents.SourceDynamoDB, nil
		case fields["messageId"] != nil || fields["body"] != nil:
			return sevents.SourceSQS, nil
		}
		return "", errors.New("no eventSource, and neither kinesis, dynamodb nor an SQS messageId or body")
	}
	return "", fmt.Errorf("eventSource %q is not aws:kinesis, aws:dynamodb or aws:sqs (Kafka events are {\"eventSource\":\"aws:kafka\",\"records\":{...}})", src)
}

func (e *Event) setSource(s sevents.Source) error {
	if e.Source != "" && e.Source != s {
		return fmt.Errorf("a %s record in a %s event: an event holds records of one source", SourceName(s), SourceName(e.Source))
	}
	e.Source = s
	return nil
}

// addRecord adds one element of a Records list, refusing one its source
// could not have sent.
func (e *Event) addRecord(raw json.RawMessage) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return errors.New("not a JSON object")
	}
	src, err := recordSource(fields)
	if err != nil {
		return err
	}
	var id string
	switch src {
	case sevents.SourceKinesis:
		var r events.KinesisEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		id = r.Kinesis.SequenceNumber
	case sevents.SourceDynamoDB:
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		for _, img := range []struct {
			name string
			img  map[string]events.DynamoDBAttributeValue
		}{{"Keys", r.Change.Keys}, {"NewImage", r.Change.NewImage}, {"OldImage", r.Change.OldImage}} {
			if err := checkImage(img.name, img.img); err != nil {
				return err
			}
		}
		id = r.Change.SequenceNumber
	case sevents.SourceSQS:
		var r events.SQSMessage
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if isFIFO(r) {
			src = sevents.SourceSQSFIFO
		}
		id = r.MessageId
	}
	if err := e.setSource(src); err != nil {
		return err
	}
	e.Records = append(e.Records, Record{ID: id, JSON: raw})
	return nil
}

// isFIFO tells a FIFO queue's message by its group id or its queue's name.
func isFIFO(m events.SQSMessage) bool {
	_, group := m.Attributes["MessageGroupId"]
	return group || strings.HasSuffix(m.EventSourceARN, ".fifo")
}
