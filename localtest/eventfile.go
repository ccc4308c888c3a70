package localtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
)

// Event files: what `sam local generate-event` writes, what a Lambda
// function logs as its input, what LocalStack or a test fixture holds. The
// runner reads one as a records file (its records are re-batched as the
// mapping says), and `sluice invoke` sends one unchanged.

// RecordShapes describes what a records file may hold; errors for a file
// that is neither shape end with it.
const RecordShapes = `A records file holds either JSON lines, one record per line:
  kinesis   {"partitionKey":"k","data":{...}}
  dynamodb  {"keys":{...},"newImage":{...},"oldImage":{...},"eventName":"INSERT|MODIFY|REMOVE"}
  sqs       {"body":{...},"messageGroupId":"g","messageDeduplicationId":"d","attributes":{"K":"V"}}
  kafka     {"partition":0,"key":"k","value":{...},"headers":{"name":"value"}}
or Lambda events as sam local generate-event writes them (pretty-printed or
on one line; one event, several one after another, or a JSON array of events):
  Kinesis             {"Records":[{"eventSource":"aws:kinesis","kinesis":{"partitionKey":..,"data":"<base64>"}}]}
  DynamoDB Streams    {"Records":[{"eventSource":"aws:dynamodb","eventName":..,"dynamodb":{"Keys":..,"NewImage":..}}]}
  SQS (standard/FIFO) {"Records":[{"eventSource":"aws:sqs","body":"..","attributes":{"MessageGroupId":..}}]}
  Amazon MSK          {"eventSource":"aws:kafka","records":{"topic-0":[{"partition":0,"value":"<base64>"}]}}
  self-managed Kafka  {"eventSource":"SelfManagedKafka","records":{"topic-0":[...]}}`

// ErrNotRecords is wrapped by the error for a file that is neither records
// (JSON lines) nor Lambda events.
var ErrNotRecords = errors.New("neither records (JSON lines) nor a Lambda event")

// ErrNotEvent is wrapped by ParseEvent's error for data that is not one
// Lambda event of a stream or queue source.
var ErrNotEvent = errors.New("not a Lambda event of a Kinesis, DynamoDB Streams, SQS or Kafka source")

// RecordsFile is what ReadRecordsFile found.
type RecordsFile struct {
	// Source is the source kind the events are of (sevents.SourceKinesis,
	// sevents.SourceDynamoDB, sevents.SourceSQS, sevents.SourceSQSFIFO, sevents.SourceKafka), or "" for
	// JSON lines, which do not say.
	Source sevents.Source
	// Events is the number of events read; 0 for JSON lines.
	Events int
	// Records are the records, in the file's order (a Kafka event's
	// partitions sorted by topic and partition).
	Records []InputRecord
	// Notes say what of an event a record could not keep (binary bytes
	// that are not UTF-8 text, DynamoDB sets and binary attributes, SQS
	// message attributes, a TTL deletion's identity), one per record and
	// field.
	Notes []string
}

// ReadRecordsFile reads a records file: JSON lines of InputRecord (see
// ReadRecords) or Lambda events (see RecordShapes). Event records become
// InputRecords: Kinesis data and Kafka keys, values and header values are
// decoded from base64 (bytes that are not UTF-8 text cannot be carried by an
// InputRecord and are replaced, with a note); DynamoDB images become plain
// JSON (N stays a number with all its digits, sets become lists, binary
// becomes its base64 text, with a note); SQS attributes are kept except the
// ones the runner assigns (ApproximateReceiveCount, SentTimestamp,
// ApproximateFirstReceiveTimestamp, SequenceNumber), and MessageGroupId and
// MessageDeduplicationId go to their own fields. Ids, sequence numbers,
// offsets and arrival times are not kept: the runner assigns its own.
func ReadRecordsFile(r io.Reader) (*RecordsFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	evs, isEvents, err := splitEvents(data)
	if err != nil {
		return nil, err
	}
	if !isEvents {
		recs, err := ReadRecords(bytes.NewReader(data))
		if le := (*LineError)(nil); errors.As(err, &le) && le.First {
			return nil, notRecordsFile(data, le)
		}
		if err != nil {
			return nil, err
		}
		return &RecordsFile{Records: recs}, nil
	}
	out := &RecordsFile{Events: len(evs)}
	for i, raw := range evs {
		ev, err := parseEvent(raw)
		if err != nil {
			if len(evs) > 1 {
				return nil, fmt.Errorf("event %d: %w", i+1, err)
			}
			return nil, err
		}
		if out.Source != "" && ev.Source != out.Source {
			return nil, fmt.Errorf("event %d is %s but event 1 is %s: one file holds events of one source", i+1, SourceName(ev.Source), SourceName(out.Source))
		}
		out.Source = ev.Source
		base := len(out.Records)
		out.Records = append(out.Records, ev.Records...)
		for _, n := range ev.notes {
			out.Notes = append(out.Notes, fmt.Sprintf("record %d: %s", base+n.record+1, n.text))
		}
	}
	return out, nil
}

// ReadRecordsFor reads a records file (see ReadRecordsFile) for a mapping
// of source kind source: events of another source are an error that names
// both. Notes on what the records could not keep are written to notes, if
// not nil, at most ten of them.
func ReadRecordsFor(r io.Reader, source sevents.Source, notes io.Writer) ([]InputRecord, error) {
	f, err := ReadRecordsFile(r)
	if err != nil {
		return nil, err
	}
	if f.Source != "" && f.Source != source {
		return nil, fmt.Errorf("the file holds %s events but the mapping's EventSource is %q: replay them with a mapping whose EventSource is %q, or convert them",
			SourceName(f.Source), source, f.Source)
	}
	if notes != nil {
		for i, n := range f.Notes {
			if i == 10 {
				fmt.Fprintf(notes, "note: ... and %d more notes like these\n", len(f.Notes)-10)
				break
			}
			fmt.Fprintf(notes, "note: %s\n", n)
		}
	}
	return f.Records, nil
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

// notRecords is the error for a file that is neither shape.
func notRecords(why string) error {
	return fmt.Errorf("%w: %s\n%s", ErrNotRecords, why, RecordShapes)
}

// splitEvents returns the events of data, or isEvents false when data does
// not start with an event (it may be JSON lines). A JSON array must hold
// only events; a stream of JSON values is events when its first value is
// one.
func splitEvents(data []byte) (evs []json.RawMessage, isEvents bool, err error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if trimmed[0] == '[' {
		var arr []json.RawMessage
		if err := dec.Decode(&arr); err != nil {
			return nil, false, notRecords(fmt.Sprintf("a JSON array, but not valid JSON: %v", err))
		}
		if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
			return nil, false, notRecords("text follows the JSON array")
		}
		if len(arr) == 0 {
			return nil, false, notRecords("an empty JSON array")
		}
		for i, raw := range arr {
			if !isEventObject(raw) {
				return nil, false, notRecords(fmt.Sprintf("element %d of the JSON array is not an object with a Records list or a Kafka records map", i+1))
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
				return nil, false, nil // not JSON values: JSON lines' reader says why
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

// notRecordsFile explains a file whose first line is not a record: most
// likely not JSON lines at all, so it gets the list of shapes (a bad line
// further on gets only its own error).
func notRecordsFile(data []byte, le *LineError) error {
	var first map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(data)).Decode(&first) == nil && first != nil {
		keys := slices.Sorted(maps.Keys(first))
		if len(keys) > 8 {
			keys = append(keys[:8], "...")
		}
		return notRecords(fmt.Sprintf("the first JSON value is an object with keys %s: not an event (no Records list or Kafka records map), "+
			"and not records, which are one JSON object per line (line %d: %v)", strings.Join(keys, ", "), le.Line, le.Err))
	}
	return notRecords(fmt.Sprintf("line %d: %v", le.Line, le.Err))
}

// Event is one Lambda event of a stream or queue source.
type Event struct {
	// Source is the source kind: sevents.SourceKinesis, sevents.SourceDynamoDB, sevents.SourceSQS,
	// sevents.SourceSQSFIFO or sevents.SourceKafka.
	Source sevents.Source
	// Payload is the event exactly as it was read.
	Payload json.RawMessage
	// Records are its records as InputRecords (see ReadRecordsFile).
	Records []InputRecord

	ids   []string   // item identifiers, in the event's order
	kafka []kafkaRef // Kafka: the items' partition and offset
	notes []recordNote
}

type recordNote struct {
	record int
	text   string
}

// ParseEvent reads exactly one Lambda event of a Kinesis, DynamoDB Streams,
// SQS or Kafka source (see RecordShapes). Surrounding whitespace is dropped
// from Payload; nothing else is changed.
func ParseEvent(data []byte) (*Event, error) {
	data = bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if ev, ok, err := parseFirehoseEvent(data); ok {
		return ev, err // a Firehose transformation event (firehose.go)
	}
	evs, isEvents, err := splitEvents(data)
	switch {
	case err != nil && errors.Is(err, ErrNotRecords):
		return nil, fmt.Errorf("%w: %s", ErrNotEvent, strings.TrimPrefix(err.Error(), ErrNotRecords.Error()+": "))
	case err != nil:
		return nil, err
	case !isEvents:
		return nil, fmt.Errorf("%w: want a JSON object with a Records list or a Kafka records map\n%s", ErrNotEvent, RecordShapes)
	case data[0] == '[':
		return nil, fmt.Errorf("a JSON array of %d events: one invocation sends one event, an object (replay several with sluice run --records)", len(evs))
	case len(evs) != 1:
		return nil, fmt.Errorf("%d events one after another: one invocation sends one event (replay several with sluice run --records)", len(evs))
	}
	return parseEvent(evs[0])
}

// Items returns the identifiers a partial batch response names the event's
// records by, in the event's order: Kinesis and DynamoDB sequence numbers,
// SQS message ids, Kafka "<topic>-<partition>@<offset>".
func (e *Event) Items() []string { return slices.Clone(e.ids) }

// Notes returns what the Records could not keep of the event.
func (e *Event) Notes() []string {
	out := make([]string, len(e.notes))
	for i, n := range e.notes {
		out[i] = fmt.Sprintf("record %d: %s", n.record+1, n.text)
	}
	return out
}

func parseEvent(raw json.RawMessage) (*Event, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, notRecords(err.Error())
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
	return nil, notRecords("a JSON object without a Records list or a Kafka records map")
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

func (e *Event) note(record int, format string, args ...any) {
	e.notes = append(e.notes, recordNote{record, fmt.Sprintf(format, args...)})
}

func (e *Event) addRecord(raw json.RawMessage) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return errors.New("not a JSON object")
	}
	src, err := recordSource(fields)
	if err != nil {
		return err
	}
	n := len(e.Records)
	var rec InputRecord
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
				rec.Aggregate = append(rec.Aggregate, UserRecord{PartitionKey: u.PartitionKey, ExplicitHashKey: u.ExplicitHashKey,
					Data: e.text(n, fmt.Sprintf("kinesis.data user record %d", k), u.Data)})
			}
		} else {
			rec.Data = e.text(n, "kinesis.data", r.Kinesis.Data)
		}
		e.ids = append(e.ids, r.Kinesis.SequenceNumber)
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
		e.ids = append(e.ids, r.Change.SequenceNumber)
	case sevents.SourceSQS:
		var r events.SQSMessage
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if isFIFO(r) {
			src = sevents.SourceSQSFIFO
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
		rec.MessageAttributes = inputMessageAttributes(r.MessageAttributes)
		e.ids = append(e.ids, r.MessageId)
	}
	if err := e.setSource(src); err != nil {
		return err
	}
	e.Records = append(e.Records, rec)
	return nil
}

// isFIFO tells a FIFO queue's message by its group id or its queue's name.
func isFIFO(m events.SQSMessage) bool {
	_, group := m.Attributes["MessageGroupId"]
	return group || strings.HasSuffix(m.EventSourceARN, ".fifo")
}

// text is bytes as a records line's data/value: a JSON string. Bytes that
// are not UTF-8 cannot be one; they are replaced, with a note.
func (e *Event) text(record int, field string, b []byte) json.RawMessage {
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
func (e *Event) image(record int, field string, img map[string]events.DynamoDBAttributeValue) (json.RawMessage, error) {
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

func (e *Event) plainValue(record int, path string, v events.DynamoDBAttributeValue) (any, error) {
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

// addKafka reads an MSK or self-managed Kafka event. Partitions are taken
// in the order of their topic and number; records in each keep the event's
// order.
func (e *Event) addKafka(env map[string]json.RawMessage, recordsMap json.RawMessage) error {
	var src string
	if v, ok := env["eventSource"]; ok {
		if err := json.Unmarshal(v, &src); err != nil {
			return fmt.Errorf("eventSource: %w", err)
		}
	}
	if src != "" && src != "aws:kafka" && src != "SelfManagedKafka" {
		return fmt.Errorf("eventSource %q with a records map: a Kafka event's eventSource is aws:kafka (Amazon MSK) or SelfManagedKafka", src)
	}
	e.Source = sevents.SourceKafka
	var parts map[string][]events.KafkaRecord
	if err := json.Unmarshal(recordsMap, &parts); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	type part struct {
		key   string
		topic string
		n     int64
	}
	ps := make([]part, 0, len(parts))
	for k := range parts {
		p := part{key: k, n: -1}
		if t, n, err := sevents.ParseKafkaPartitionKey(k); err == nil {
			p.topic, p.n = t, n
		}
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b part) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		if a.n != b.n {
			if a.n < b.n {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	for _, p := range ps {
		for j, r := range parts[p.key] {
			n := len(e.Records)
			where := fmt.Sprintf("records[%q][%d]", p.key, j)
			partition := r.Partition
			if p.n >= 0 {
				partition = p.n
			}
			if partition < 0 || partition > 1<<31-1 {
				return fmt.Errorf("%s: partition %d is out of range", where, partition)
			}
			pi := int(partition)
			rec := InputRecord{Partition: &pi}
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
			e.Records = append(e.Records, rec)
			e.ids = append(e.ids, kafkaID(p.key, r.Offset))
			e.kafka = append(e.kafka, kafkaRef{partition: p.key, offset: r.Offset})
		}
	}
	return nil
}

// Outcomes of a Verdict.
const (
	OutcomeSuccess       = "success"
	OutcomePartial       = "partial"
	OutcomeBatchFailure  = "batch failure"
	OutcomeFunctionError = "function error"
)

// Verdict is how an event source mapping with ReportBatchItemFailures reads
// a function's answer to an event.
type Verdict struct {
	// Outcome is OutcomeSuccess, OutcomePartial (some items reported
	// failed), OutcomeBatchFailure (the response is not a valid partial
	// batch response: the whole batch fails) or OutcomeFunctionError.
	Outcome string
	// Reported are the identifiers of the items reported failed, in the
	// event's order (see Items).
	Reported []string
	// Reason says why the batch failed: the error type and message of a
	// function error, or what is wrong with the response.
	Reason string
}

// Failed reports whether Lambda would retry the whole batch.
func (v Verdict) Failed() bool {
	return v.Outcome == OutcomeBatchFailure || v.Outcome == OutcomeFunctionError
}

func (v Verdict) String() string {
	switch v.Outcome {
	case OutcomePartial:
		noun := "items"
		if len(v.Reported) == 1 {
			noun = "item"
		}
		return fmt.Sprintf("partial: %d %s reported: %s", len(v.Reported), noun, strings.Join(v.Reported, ", "))
	case OutcomeSuccess:
		return OutcomeSuccess
	}
	return v.Outcome + ": " + v.Reason
}

// Verdict reads resp as Lambda reads the answer to this event with
// ReportBatchItemFailures on. (Without it a batchItemFailures list is
// ignored and every answer without a function error is a success.)
func (e *Event) Verdict(resp Response) Verdict {
	if resp.Failed() {
		return Verdict{Outcome: OutcomeFunctionError, Reason: functionErrorText(resp)}
	}
	var v verdict
	switch e.Source {
	case sevents.SourceFirehose:
		return readFirehoseResponse(resp.Payload, e.ids)
	case sevents.SourceKafka:
		v = readKafkaResponse(resp.Payload, e.kafka)
	case sevents.SourceKinesis, sevents.SourceDynamoDB:
		v = readStreamResponse(resp.Payload, e.ids)
	default:
		v = readStringResponse(resp.Payload, e.ids)
	}
	switch v.kind {
	case verdictPartial:
		out := Verdict{Outcome: OutcomePartial}
		for _, i := range v.reported {
			out.Reported = append(out.Reported, e.ids[i])
		}
		return out
	case verdictWhole:
		return Verdict{Outcome: OutcomeBatchFailure, Reason: v.reason}
	}
	return Verdict{Outcome: OutcomeSuccess}
}

// functionErrorText is "errorType: errorMessage" of a function error.
func functionErrorText(resp Response) string {
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	_ = json.Unmarshal(resp.Payload, &doc)
	typ := or(doc.Type, resp.ErrorType)
	msg := doc.Message
	if msg == "" {
		msg = strings.TrimSpace(string(resp.Payload))
	}
	switch {
	case typ == "":
		return or(msg, resp.FunctionError)
	case msg == "":
		return typ
	}
	return typ + ": " + msg
}

// isJSONNumber reports whether s is a JSON number, as DynamoDB writes N.
func isJSONNumber(s string) bool {
	return s != "" && strings.TrimSpace(s) == s && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}
