package localtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/invocation"
	"io"
	"maps"
	"slices"
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
or ` + invocation.EventShapes

// ErrNotRecords is wrapped by the error for a file that is neither records
// (JSON lines) nor Lambda events.
var ErrNotRecords = errors.New("neither records (JSON lines) nor a Lambda event")

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
	evs, isEvents, err := invocation.ParseEvents(data)
	if ne := (*invocation.NotEventError)(nil); errors.As(err, &ne) {
		return nil, notRecords(ne.Why)
	}
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
	for i, ev := range evs {
		recs, notes, err := eventRecords(ev)
		if err != nil {
			if len(evs) > 1 {
				return nil, fmt.Errorf("event %d: %w", i+1, err)
			}
			return nil, err
		}
		out.Source = ev.Source
		base := len(out.Records)
		out.Records = append(out.Records, recs...)
		for _, n := range notes {
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
			invocation.SourceName(f.Source), source, f.Source)
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

// notRecords is the error for a file that is neither shape.
func notRecords(why string) error {
	return fmt.Errorf("%w: %s\n%s", ErrNotRecords, why, RecordShapes)
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

// eventRecords turns the records of a stream or queue event into
// InputRecords (see ReadRecordsFile), with notes on what they could not
// keep.
func eventRecords(ev *invocation.Event) ([]InputRecord, []recordNote, error) {
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
	return c.records, c.notes, nil
}

// converter collects the InputRecords of an event and the notes on them.
type converter struct {
	records []InputRecord
	notes   []recordNote
}

type recordNote struct {
	record int
	text   string
}

func (e *converter) note(record int, format string, args ...any) {
	e.notes = append(e.notes, recordNote{record, fmt.Sprintf(format, args...)})
}

// addRecord converts one element of a Records list of an event of source
// src.
func (e *converter) addRecord(src sevents.Source, raw json.RawMessage) error {
	n := len(e.records)
	var rec InputRecord
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
				rec.Aggregate = append(rec.Aggregate, UserRecord{PartitionKey: u.PartitionKey, ExplicitHashKey: u.ExplicitHashKey,
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
		rec.MessageAttributes = inputMessageAttributes(r.MessageAttributes)
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
	e.records = append(e.records, rec)
	return nil
}

// isJSONNumber reports whether s is a JSON number, as DynamoDB writes N.
func isJSONNumber(s string) bool {
	return s != "" && strings.TrimSpace(s) == s && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}
