package dlq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/events"
)

// Version is the envelope format this package writes. Readers accept every
// version up to it and refuse later ones with a clear error.
const Version = 1

// Envelope is one quarantined record with everything needed to repair and
// replay it: the record exactly as Lambda delivered it, where it came from,
// how often and how it failed, and who failed it. It is written as one JSON
// object (one SQS message body, or one line of a file). docs/dead-letters.md
// documents every field.
type Envelope struct {
	// Version is the envelope format (Version when written).
	Version int `json:"version"`
	// Source is events.SourceKinesis, events.SourceDynamoDB, events.SourceSQS or
	// events.SourceKafka ("kinesis", "dynamodb", "sqs" or "kafka"; an SQS FIFO
	// queue's records say "sqs").
	Source events.Source `json:"source"`
	// SourceARN is the stream, table stream, queue or cluster the record
	// came from (eventSourceARN, or eventSourceArn for Kafka).
	SourceARN string `json:"sourceArn"`
	// Shard is the Kinesis shard id ("shardId-000000000000"), from the
	// record's eventID. Empty for other sources.
	Shard string `json:"shard,omitempty"`
	// Topic and Partition locate a Kafka record.
	Topic     string `json:"topic,omitempty"`
	Partition *int64 `json:"partition,omitempty"`
	// MessageGroup is an SQS FIFO message group id.
	MessageGroup string `json:"messageGroup,omitempty"`
	// RecordID is the record's batch item identifier: the sequence number
	// (Kinesis, DynamoDB Streams), the message id (SQS), or
	// "<topic>-<partition>@<offset>" (Kafka).
	RecordID string `json:"recordId"`
	// EventID is the source's stable event id where it has one (Kinesis and
	// DynamoDB eventID; the SQS message id; Kafka "<topic>-<partition>-<offset>"):
	// the default idempotency key, so a redrive with idempotency on never
	// repeats an effect.
	EventID string `json:"eventId,omitempty"`
	// SequenceNumber (Kinesis, DynamoDB Streams, SQS FIFO) and Offset
	// (Kafka) place the record in its shard, queue or partition.
	SequenceNumber string `json:"sequenceNumber,omitempty"`
	Offset         *int64 `json:"offset,omitempty"`
	// SubSequenceNumber, for a user record of a Kinesis Producer Library
	// aggregate, is its index in the aggregate: Record holds the whole
	// Kinesis record, and a redrive delivers only this user record of it.
	SubSequenceNumber *int64 `json:"subSequenceNumber,omitempty"`
	// PartitionKey is the Kinesis partition key, or the DynamoDB item's
	// key attributes as JSON.
	PartitionKey string `json:"partitionKey,omitempty"`
	// ArrivalTime is when the source received the record (zero if unknown).
	ArrivalTime time.Time `json:"arrivalTime,omitzero"`
	// Attempts is how many times the record was tried, across invocations,
	// Lambda's retries and bisection, as far as Sluice could count them.
	Attempts int `json:"attempts"`
	// FirstFailure and LastFailure are when the record first and last
	// failed (FirstFailure is LastFailure when only one failure is known).
	FirstFailure time.Time `json:"firstFailure"`
	LastFailure  time.Time `json:"lastFailure"`
	// Error is the last error's text, Class its class ("permanent",
	// "transient", "plain", or "crash" for a record blamed for a
	// whole-function crash), and Reason why it was quarantined
	// ("permanent", "attempts", "crash").
	Error  string `json:"error"`
	Class  string `json:"class"`
	Reason string `json:"reason"`
	// FunctionName and RequestID name the invocation that quarantined it.
	FunctionName string `json:"functionName,omitempty"`
	RequestID    string `json:"requestId,omitempty"`
	// Truncated, when set, says Record was too large for the destination and
	// holds only a prefix; fetch the record back from its source with the
	// coordinates above (sluice fetch-failed, or the source's API).
	Truncated *Truncation `json:"truncated,omitempty"`
	// Record is the record exactly as it appeared in the Lambda event (one
	// element of "Records", or of a Kafka partition's list). When Truncated
	// is set it is a JSON string holding a prefix of those bytes instead.
	Record json.RawMessage `json:"record"`
}

// SubSequenceField is the key that a Kinesis record of an event rebuilt
// from the envelope of a KPL user record (sluice redrive) carries beside
// Lambda's fields, holding SubSequenceNumber: a Sluice Kinesis handler then
// delivers only that user record of the aggregate, with its own
// sub-sequence number (and so its own idempotency key), and skips the
// others, which ran when the record was first delivered.
const SubSequenceField = "sluiceSubSequenceNumber"

// RecordKey names the envelope's record apart from every other: RecordID,
// and for a user record of a KPL aggregate ":" and its sub-sequence number
// (the user records of one Kinesis record share its RecordID). It is the
// record's key in the attempts store (AttemptsKeyOf).
func (e *Envelope) RecordKey() string {
	if e.SubSequenceNumber == nil {
		return e.RecordID
	}
	return e.RecordID + ":" + strconv.FormatInt(*e.SubSequenceNumber, 10)
}

// Truncation describes a record cut to fit the destination.
type Truncation struct {
	// OriginalBytes is the length of the whole record.
	OriginalBytes int `json:"originalBytes"`
	// Marker says so in words, for a reader of the raw message.
	Marker string `json:"marker"`
}

// Marshal encodes e as one line of JSON (no trailing newline).
func (e *Envelope) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("dlq: encoding the envelope of record %s: %w", e.RecordID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ErrNotEnvelope reports bytes that are not a Sluice dead-letter envelope.
var ErrNotEnvelope = errors.New("dlq: not a dead-letter envelope")

// Unmarshal decodes one envelope and checks what a replay relies on: a
// known version and source, a record id, and a record.
func Unmarshal(b []byte) (*Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEnvelope, err)
	}
	switch {
	case e.Version == 0:
		return nil, fmt.Errorf("%w: no version field", ErrNotEnvelope)
	case e.Version > Version:
		return nil, fmt.Errorf("dlq: envelope of record %s has version %d; this Sluice reads up to version %d: upgrade it", e.RecordID, e.Version, Version)
	case e.Source != events.SourceKinesis && e.Source != events.SourceDynamoDB && e.Source != events.SourceSQS && e.Source != events.SourceKafka:
		return nil, fmt.Errorf("%w: unknown source %q", ErrNotEnvelope, e.Source)
	case e.RecordID == "":
		return nil, fmt.Errorf("%w: no recordId", ErrNotEnvelope)
	case len(e.Record) == 0 || string(e.Record) == "null":
		return nil, fmt.Errorf("%w: record %s has no record", ErrNotEnvelope, e.RecordID)
	}
	return &e, nil
}
