package localtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/eventfile"
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
  (a payload that is not text: "dataBase64", "keyBase64", "valueBase64", "headersBase64")
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
	// Notes say what of an event a record could not keep (a TTL
	// deletion's identity), one per record and field. Payload bytes are
	// always kept.
	Notes []string
}

// ReadRecordsFile reads a records file: JSON lines of InputRecord (see
// ReadRecords) or Lambda events (see RecordShapes). Event records become
// InputRecords that the runner sends with the event's payload bytes, byte
// for byte: Kinesis data and Kafka keys, values and header values are
// decoded from base64 into the text fields when they are UTF-8 text and
// into the base64 fields (DataBase64, KeyBase64, ValueBase64,
// HeadersBase64) when not; Kafka headers keep their order and repeated
// names; a KPL aggregate becomes Aggregate only when aggregating its user
// records again gives its exact bytes (otherwise, as with a bad checksum,
// its bytes are DataBase64); DynamoDB keys and images stay AttributeValue
// JSON (DynamoDB), so B, BS, SS, NS, L, M, BOOL and NULL keep their types;
// SQS attributes are kept except the ones the runner assigns
// (ApproximateReceiveCount, SentTimestamp,
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
			out.Notes = append(out.Notes, fmt.Sprintf("record %d: %s", base+n.Record+1, n.Text))
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
// keep: the records lines package eventfile writes for them, read as
// ReadRecords reads a line.
func eventRecords(ev *invocation.Event) ([]InputRecord, []eventfile.Note, error) {
	lines, notes, err := eventfile.Records(ev)
	if err != nil {
		return nil, nil, err
	}
	recs := make([]InputRecord, len(lines))
	for i, line := range lines {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&recs[i]); err != nil {
			return nil, nil, fmt.Errorf("record %d of the event: %w", i+1, err)
		}
	}
	return recs, notes, nil
}
