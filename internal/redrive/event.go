package redrive

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/invocation"
)

// MaxPayload is the largest event Event builds when it plans batches: the
// 6 MB of a synchronous Lambda invocation.
const MaxPayload = 6 << 20

// ErrTruncated is wrapped by the error for an envelope whose record was
// cut to fit its destination: its record is not whole, and replaying a
// prefix would be wrong.
var ErrTruncated = errors.New("the record was truncated to fit the dead-letter destination")

// Event rebuilds the Lambda event that carries the records of envs, as
// Lambda sent them: {"Records":[...]} for Kinesis, DynamoDB Streams and SQS,
// and for Kafka {"eventSource":...,"eventSourceArn":...,"records":{...}}
// with the records under "<topic>-<partition>", partitions in order of topic
// and number. Each record is its envelope's Record, byte for byte, in the
// order of envs (within a Kafka partition). Lambda sends compact JSON, so
// for a record quarantined from a Lambda event the result is the event's
// bytes (the Kafka event lacks bootstrapServers, which the envelope does
// not carry).
//
// All envelopes must share a source and source ARN (and for Kinesis a
// shard, as a Kinesis event holds one shard); none may be truncated; and
// each record must be one of its source, with the identifier the envelope
// names (RecordID): Event parses what it built as Lambda's event source
// mapping would, and refuses an envelope whose record does not match it.
func Event(envs []*dlq.Envelope) ([]byte, error) {
	if len(envs) == 0 {
		return nil, errors.New("redrive: no envelopes to build an event from")
	}
	first := envs[0]
	k := keyOf(first)
	for _, e := range envs {
		if e.Truncated != nil {
			return nil, fmt.Errorf("redrive: record %s of %s: %w (it holds %d of %d bytes): fetch the whole record back from the source with sluice fetch-failed or the source's API",
				e.RecordID, e.SourceARN, ErrTruncated, len(e.Record), e.Truncated.OriginalBytes)
		}
		if keyOf(e) != k {
			return nil, fmt.Errorf("redrive: record %s (%s %s %s) cannot share an event with record %s (%s %s %s)",
				e.RecordID, e.Source, e.SourceARN, keyOf(e).shard, first.RecordID, first.Source, first.SourceARN, k.shard)
		}
		if r := bytes.TrimSpace(e.Record); len(r) == 0 || r[0] != '{' || !json.Valid(r) {
			return nil, fmt.Errorf("redrive: record %s of %s: the envelope's record is not a JSON object", e.RecordID, e.SourceARN)
		}
	}
	var buf bytes.Buffer
	if first.Source == sevents.SourceKafka {
		if err := kafkaEvent(&buf, envs); err != nil {
			return nil, err
		}
	} else {
		buf.WriteString(`{"Records":[`)
		for i, e := range envs {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeRecord(&buf, e)
		}
		buf.WriteString(`]}`)
	}
	if err := check(buf.Bytes(), envs); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeRecord writes e's record. The record of a KPL user record's
// envelope is its whole Kinesis record: it gets the key that tells a Sluice
// handler to deliver only that user record of the aggregate
// (dlq.SubSequenceField), first, the rest byte for byte.
func writeRecord(buf *bytes.Buffer, e *dlq.Envelope) {
	r := bytes.TrimSpace(e.Record)
	if e.Source != sevents.SourceKinesis || e.SubSequenceNumber == nil {
		buf.Write(r)
		return
	}
	buf.WriteString(`{"` + dlq.SubSequenceField + `":`)
	buf.WriteString(strconv.FormatInt(*e.SubSequenceNumber, 10))
	if rest := bytes.TrimSpace(r[1:]); len(rest) > 0 && rest[0] != '}' {
		buf.WriteByte(',')
	}
	buf.Write(r[1:])
}

// check parses the event as the runner's mapping does and compares its
// items with the envelopes.
func check(payload []byte, envs []*dlq.Envelope) error {
	ev, err := invocation.ParseEvent(payload)
	if err != nil {
		return fmt.Errorf("redrive: record %s of %s: the event rebuilt from the envelope is not one Lambda would send: %w", envs[0].RecordID, envs[0].SourceARN, err)
	}
	src := ev.Source
	if src == sevents.SourceSQSFIFO {
		src = sevents.SourceSQS
	}
	if src != envs[0].Source {
		return fmt.Errorf("redrive: record %s of %s: the envelope says source %s but the record is of %s", envs[0].RecordID, envs[0].SourceARN, envs[0].Source, invocation.SourceName(ev.Source))
	}
	items := ev.Items()
	if len(items) != len(envs) {
		return fmt.Errorf("redrive: %d envelopes gave an event of %d records", len(envs), len(items))
	}
	want := make([]string, len(envs))
	for i, e := range envs {
		want[i] = e.RecordID
	}
	if envs[0].Source == sevents.SourceKafka {
		// The event lists partitions in order; compare as sets.
		slices.Sort(want)
		items = slices.Sorted(slices.Values(items))
	}
	for i := range items {
		if items[i] != want[i] {
			return fmt.Errorf("redrive: record %s of %s: the record's own identifier is %q: the envelope does not describe its record", want[i], envs[0].SourceARN, items[i])
		}
	}
	return nil
}

// groupKey is what records must share to ride in one event.
type groupKey struct {
	source     sevents.Source
	arn, shard string
}

func keyOf(e *dlq.Envelope) groupKey {
	k := groupKey{source: e.Source, arn: e.SourceARN}
	if e.Source == sevents.SourceKinesis {
		k.shard = e.Shard
		if k.shard == "" {
			k.shard = recordShard(e.Record)
		}
	}
	return k
}

// recordShard is the shard of a Kinesis record, from its eventID
// "shardId-000000000000:<sequence number>".
func recordShard(rec json.RawMessage) string {
	var r struct {
		EventID string `json:"eventID"`
	}
	if json.Unmarshal(rec, &r) != nil {
		return ""
	}
	shard, _, _ := strings.Cut(r.EventID, ":")
	return shard
}

// kafkaPlace is a Kafka record's partition key "<topic>-<n>" and offset,
// from the envelope or, where it lacks them, the record.
func kafkaPlace(e *dlq.Envelope) (topic string, partition, offset int64, err error) {
	var r struct {
		Topic     string `json:"topic"`
		Partition *int64 `json:"partition"`
		Offset    *int64 `json:"offset"`
	}
	if err := json.Unmarshal(e.Record, &r); err != nil {
		return "", 0, 0, fmt.Errorf("redrive: Kafka record %s: %w", e.RecordID, err)
	}
	topic = cmp.Or(e.Topic, r.Topic)
	switch {
	case e.Partition != nil:
		partition = *e.Partition
	case r.Partition != nil:
		partition = *r.Partition
	default:
		return "", 0, 0, fmt.Errorf("redrive: Kafka record %s: no partition in the envelope or the record", e.RecordID)
	}
	switch {
	case e.Offset != nil:
		offset = *e.Offset
	case r.Offset != nil:
		offset = *r.Offset
	}
	if topic == "" {
		return "", 0, 0, fmt.Errorf("redrive: Kafka record %s: no topic in the envelope or the record", e.RecordID)
	}
	if partition < 0 || partition > 1<<31-1 {
		return "", 0, 0, fmt.Errorf("redrive: Kafka record %s: partition %d is out of range", e.RecordID, partition)
	}
	return topic, partition, offset, nil
}

func kafkaEvent(buf *bytes.Buffer, envs []*dlq.Envelope) error {
	type part struct {
		topic string
		n     int64
		recs  []json.RawMessage
	}
	var parts []*part
	for _, e := range envs {
		topic, n, _, err := kafkaPlace(e)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(parts, func(p *part) bool { return p.topic == topic && p.n == n })
		if i < 0 {
			parts = append(parts, &part{topic: topic, n: n})
			i = len(parts) - 1
		}
		parts[i].recs = append(parts[i].recs, bytes.TrimSpace(e.Record))
	}
	slices.SortStableFunc(parts, func(a, b *part) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.n, b.n))
	})
	arn := envs[0].SourceARN
	if arn != "" {
		buf.WriteString(`{"eventSource":"aws:kafka","eventSourceArn":`)
		b, _ := json.Marshal(arn)
		buf.Write(b)
	} else {
		buf.WriteString(`{"eventSource":"SelfManagedKafka"`)
	}
	buf.WriteString(`,"records":{`)
	for i, p := range parts {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, _ := json.Marshal(sevents.KafkaPartitionKey(p.topic, p.n))
		buf.Write(b)
		buf.WriteString(`:[`)
		for j, r := range p.recs {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.Write(r)
		}
		buf.WriteByte(']')
	}
	buf.WriteString(`}}`)
	return nil
}

// compareSequence orders sequence numbers (decimal strings of any length)
// by value; strings that are not numbers sort after numbers, as strings.
func compareSequence(a, b string) int {
	na, nb := isDigits(a), isDigits(b)
	switch {
	case na && nb:
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	case na:
		return -1
	case nb:
		return 1
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sortForEvent puts the envelopes of one group in the order their source
// delivers them: by sequence number (streams, and SQS FIFO messages that
// carry one), by partition and offset (Kafka); otherwise as read.
func sortForEvent(envs []*dlq.Envelope) {
	switch envs[0].Source {
	case sevents.SourceKafka:
		slices.SortStableFunc(envs, func(a, b *dlq.Envelope) int {
			ta, pa, oa, _ := kafkaPlace(a)
			tb, pb, ob, _ := kafkaPlace(b)
			return cmp.Or(strings.Compare(ta, tb), cmp.Compare(pa, pb), cmp.Compare(oa, ob))
		})
	default:
		slices.SortStableFunc(envs, func(a, b *dlq.Envelope) int {
			if a.SequenceNumber == "" || b.SequenceNumber == "" {
				return 0
			}
			return compareSequence(a.SequenceNumber, b.SequenceNumber)
		})
	}
}
