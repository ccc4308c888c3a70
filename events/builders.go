package events

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/events/kpl"
)

// Defaults the builders use for fields left empty.
const (
	DefaultRegion  = "us-east-1"
	DefaultAccount = "123456789012"
)

// Builders produce events in exactly the JSON shape Lambda delivers (the AWS
// documentation's samples), with identifiers, sequence numbers, offsets and
// timestamps assigned the way the source assigns them: increasing, unique,
// and stable for a given sequence of calls. The zero value of each builder is
// ready to use; set a field to override its default. Builders are not safe for
// concurrent use.

// seqNumber renders n as a 56-digit Kinesis-style sequence number. The fixed
// width keeps string order and numeric order the same.
func seqNumber(prefix string, n uint64) string {
	s := strconv.FormatUint(n, 10)
	return prefix + strings.Repeat("0", 56-len(prefix)-len(s)) + s
}

func clockOr(c func() time.Time) time.Time {
	if c != nil {
		return c()
	}
	return time.Now()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// KinesisBuilder builds events.KinesisEvent values for one shard.
type KinesisBuilder struct {
	Region            string           // default DefaultRegion
	StreamARN         string           // default arn:aws:kinesis:<region>:<account>:stream/stream
	ShardID           string           // default shardId-000000000000
	InvokeIdentityARN string           // default a role ARN in DefaultAccount
	Clock             func() time.Time // arrival timestamps; default time.Now
	// FirstSequence is the counter the first sequence number is made from.
	FirstSequence uint64

	n       uint64
	records []events.KinesisEventRecord
}

// Add appends a record with the given partition key and data (raw bytes; the
// event carries them base64-encoded) and returns the builder.
func (b *KinesisBuilder) Add(partitionKey string, data []byte) *KinesisBuilder {
	region := or(b.Region, DefaultRegion)
	shard := or(b.ShardID, "shardId-000000000000")
	seq := seqNumber("4959033827149025660855969", b.FirstSequence+b.n)
	b.n++
	b.records = append(b.records, events.KinesisEventRecord{
		AwsRegion:         region,
		EventID:           shard + ":" + seq,
		EventName:         "aws:kinesis:record",
		EventSource:       "aws:kinesis",
		EventSourceArn:    or(b.StreamARN, "arn:aws:kinesis:"+region+":"+DefaultAccount+":stream/stream"),
		EventVersion:      "1.0",
		InvokeIdentityArn: or(b.InvokeIdentityARN, "arn:aws:iam::"+DefaultAccount+":role/lambda-role"),
		Kinesis: events.KinesisRecord{
			ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: clockOr(b.Clock).Truncate(time.Millisecond)},
			Data:                        append([]byte(nil), data...),
			PartitionKey:                partitionKey,
			SequenceNumber:              seq,
			KinesisSchemaVersion:        "1.0",
		},
	})
	return b
}

// AddAggregated appends one KPL aggregated record holding the user records
// (kpl.Encode: partition keys and explicit hash keys in tables, the MD5
// after them), with the first user record's partition key, as the Kinesis
// Producer Library puts it, and returns the builder. It panics when there
// are no user records: the KPL never writes an empty aggregate.
func (b *KinesisBuilder) AddAggregated(userRecords ...kpl.Record) *KinesisBuilder {
	if len(userRecords) == 0 {
		panic("events: KinesisBuilder.AddAggregated needs at least one user record")
	}
	return b.Add(userRecords[0].PartitionKey, kpl.Encode(userRecords))
}

// Last returns the record added last.
func (b *KinesisBuilder) Last() events.KinesisEventRecord { return b.records[len(b.records)-1] }

// Event returns the records added so far as one event.
func (b *KinesisBuilder) Event() events.KinesisEvent {
	return events.KinesisEvent{Records: append([]events.KinesisEventRecord(nil), b.records...)}
}

// DynamoDBBuilder builds events.DynamoDBEvent values for one stream shard.
// Keys and images are Go values (structs or maps) marshalled with
// MarshalImage, so `dynamodbav` tags apply, or AttributeValue maps
// (map[string]events.DynamoDBAttributeValue), taken as they are: binary
// attributes and sets that plain Go values cannot name.
type DynamoDBBuilder struct {
	Region         string // default DefaultRegion
	StreamARN      string // default a table stream ARN for table "table"
	StreamViewType string // default NEW_AND_OLD_IMAGES
	Clock          func() time.Time
	FirstSequence  uint64

	n       uint64
	records []events.DynamoDBEventRecord
}

// Insert appends an INSERT record.
func (b *DynamoDBBuilder) Insert(keys, newImage any) error {
	return b.add("INSERT", keys, nil, newImage, false)
}

// Modify appends a MODIFY record.
func (b *DynamoDBBuilder) Modify(keys, oldImage, newImage any) error {
	return b.add("MODIFY", keys, oldImage, newImage, false)
}

// Remove appends a REMOVE record.
func (b *DynamoDBBuilder) Remove(keys, oldImage any) error {
	return b.add("REMOVE", keys, oldImage, nil, false)
}

// Expire appends a REMOVE record made by DynamoDB's TTL process, which
// carries userIdentity {type: Service, principalId: dynamodb.amazonaws.com}.
func (b *DynamoDBBuilder) Expire(keys, oldImage any) error {
	return b.add("REMOVE", keys, oldImage, nil, true)
}

func (b *DynamoDBBuilder) add(name string, keys, oldImage, newImage any, ttl bool) error {
	view := or(b.StreamViewType, "NEW_AND_OLD_IMAGES")
	k, err := builderImage(keys)
	if err != nil {
		return fmt.Errorf("events: DynamoDB keys: %w", err)
	}
	rec := events.DynamoDBStreamRecord{
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: clockOr(b.Clock).Truncate(time.Second)},
		Keys:                        k,
		SequenceNumber:              seqNumber("", b.FirstSequence+b.n+1)[30:],
		StreamViewType:              view,
	}
	if oldImage != nil && (view == "OLD_IMAGE" || view == "NEW_AND_OLD_IMAGES") {
		if rec.OldImage, err = builderImage(oldImage); err != nil {
			return fmt.Errorf("events: DynamoDB old image: %w", err)
		}
	}
	if newImage != nil && (view == "NEW_IMAGE" || view == "NEW_AND_OLD_IMAGES") {
		if rec.NewImage, err = builderImage(newImage); err != nil {
			return fmt.Errorf("events: DynamoDB new image: %w", err)
		}
	}
	rec.SizeBytes = int64(approxImageSize(rec.Keys) + approxImageSize(rec.OldImage) + approxImageSize(rec.NewImage))
	b.n++
	region := or(b.Region, DefaultRegion)
	e := events.DynamoDBEventRecord{
		AWSRegion:      region,
		Change:         rec,
		EventID:        fmt.Sprintf("%032x", b.FirstSequence+b.n),
		EventName:      name,
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: or(b.StreamARN, "arn:aws:dynamodb:"+region+":"+DefaultAccount+":table/table/stream/2024-01-01T00:00:00.000"),
	}
	if ttl {
		e.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	}
	b.records = append(b.records, e)
	return nil
}

// builderImage is v as an image: an AttributeValue map as it is, anything
// else through MarshalImage.
func builderImage(v any) (map[string]events.DynamoDBAttributeValue, error) {
	if m, ok := v.(map[string]events.DynamoDBAttributeValue); ok {
		return m, nil
	}
	return MarshalImage(v)
}

func approxImageSize(m map[string]events.DynamoDBAttributeValue) int {
	n := 0
	for k, v := range m {
		n += len(k)
		switch v.DataType() {
		case events.DataTypeString:
			n += len(v.String())
		case events.DataTypeNumber:
			n += len(v.Number())
		case events.DataTypeBinary:
			n += len(v.Binary())
		default:
			n += 8
		}
	}
	return n
}

// Last returns the record added last.
func (b *DynamoDBBuilder) Last() events.DynamoDBEventRecord { return b.records[len(b.records)-1] }

// Event returns the records added so far as one event.
func (b *DynamoDBBuilder) Event() events.DynamoDBEvent {
	return events.DynamoDBEvent{Records: append([]events.DynamoDBEventRecord(nil), b.records...)}
}

// SQSBuilder builds events.SQSEvent values for one queue. A queue whose ARN
// ends in ".fifo" gets FIFO attributes (MessageGroupId, SequenceNumber,
// MessageDeduplicationId).
type SQSBuilder struct {
	Region   string // default DefaultRegion
	QueueARN string // default arn:aws:sqs:<region>:<account>:queue
	SenderID string // default AIDAIENQZJOLO23YVJ4VO
	Clock    func() time.Time

	n       uint64
	records []events.SQSMessage
}

// FIFO reports whether the builder's queue is a FIFO queue.
func (b *SQSBuilder) FIFO() bool { return strings.HasSuffix(b.QueueARN, ".fifo") }

// Add appends a message to a standard queue (or, on a FIFO queue, to group
// "default" with a content-based deduplication id).
func (b *SQSBuilder) Add(body string) *SQSBuilder {
	return b.AddFIFO(body, "default", "")
}

// AddFIFO appends a message with a FIFO message group and deduplication id
// (empty: derived from the body, as content-based deduplication does). On a
// standard queue the group and deduplication id are ignored.
func (b *SQSBuilder) AddFIFO(body, groupID, dedupID string) *SQSBuilder {
	return b.add(body, groupID, dedupID, 1)
}

// AddRedelivered appends a message as it looks on its receiveCount-th
// delivery (ApproximateReceiveCount = receiveCount).
func (b *SQSBuilder) AddRedelivered(body string, receiveCount int) *SQSBuilder {
	return b.add(body, "default", "", receiveCount)
}

func (b *SQSBuilder) add(body, groupID, dedupID string, receiveCount int) *SQSBuilder {
	region := or(b.Region, DefaultRegion)
	b.n++
	now := clockOr(b.Clock)
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	sum := md5.Sum([]byte(body))
	id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", b.n, 0, 0, 0, b.n)
	m := events.SQSMessage{
		MessageId:     id,
		ReceiptHandle: base64.RawURLEncoding.EncodeToString([]byte("rh-" + id)),
		Body:          body,
		Md5OfBody:     hex.EncodeToString(sum[:]),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          strconv.Itoa(receiveCount),
			"SentTimestamp":                    ms,
			"SenderId":                         or(b.SenderID, "AIDAIENQZJOLO23YVJ4VO"),
			"ApproximateFirstReceiveTimestamp": ms,
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSourceARN:    or(b.QueueARN, "arn:aws:sqs:"+region+":"+DefaultAccount+":queue"),
		EventSource:       "aws:sqs",
		AWSRegion:         region,
	}
	if b.FIFO() {
		if dedupID == "" {
			d := sha256Hex(body)
			dedupID = d
		}
		m.Attributes["MessageGroupId"] = groupID
		m.Attributes["MessageDeduplicationId"] = dedupID
		m.Attributes["SequenceNumber"] = seqNumber("1860000000000", b.n)[36:]
	}
	b.records = append(b.records, m)
	return b
}

// Event returns the messages added so far as one event.
func (b *SQSBuilder) Event() events.SQSEvent {
	return events.SQSEvent{Records: append([]events.SQSMessage(nil), b.records...)}
}

// KafkaHeader is one Kafka record header.
type KafkaHeader struct {
	Key   string
	Value []byte
}

// KafkaBuilder builds events.KafkaEvent values. With EventSourceARN set the
// event is an Amazon MSK event (eventSource "aws:kafka"); without, a
// self-managed Kafka event (eventSource "SelfManagedKafka").
type KafkaBuilder struct {
	EventSourceARN   string
	BootstrapServers string // default two broker addresses
	Clock            func() time.Time

	offsets map[string]int64
	records map[string][]events.KafkaRecord
}

// Add appends a record to topic-partition and returns the builder. Offsets
// count up from 0 per partition. A nil key or value is left out of the record,
// as Lambda does.
func (b *KafkaBuilder) Add(topic string, partition int64, key, value []byte, headers ...KafkaHeader) *KafkaBuilder {
	if b.records == nil {
		b.records = map[string][]events.KafkaRecord{}
		b.offsets = map[string]int64{}
	}
	pk := KafkaPartitionKey(topic, partition)
	off := b.offsets[pk]
	b.offsets[pk] = off + 1
	hs := make([]map[string]events.JSONNumberBytes, 0, len(headers))
	for _, h := range headers {
		hs = append(hs, map[string]events.JSONNumberBytes{h.Key: append([]byte(nil), h.Value...)})
	}
	r := events.KafkaRecord{
		Topic:         topic,
		Partition:     partition,
		Offset:        off,
		Timestamp:     events.MilliSecondsEpochTime{Time: clockOr(b.Clock).Truncate(time.Millisecond)},
		TimestampType: "CREATE_TIME",
		Headers:       hs,
	}
	if key != nil {
		r.Key = base64.StdEncoding.EncodeToString(key)
	}
	if value != nil {
		r.Value = base64.StdEncoding.EncodeToString(value)
	}
	b.records[pk] = append(b.records[pk], r)
	return b
}

// Last returns the record added last to topic-partition pk ("<topic>-<n>").
func (b *KafkaBuilder) Last(pk string) events.KafkaRecord {
	rs := b.records[pk]
	return rs[len(rs)-1]
}

// Envelope returns the event without records: source, ARN, brokers.
func (b *KafkaBuilder) Envelope() events.KafkaEvent {
	ev := events.KafkaEvent{
		EventSource:      "SelfManagedKafka",
		EventSourceARN:   b.EventSourceARN,
		BootstrapServers: or(b.BootstrapServers, "b-1.kafka.example:9092,b-2.kafka.example:9092"),
	}
	if b.EventSourceARN != "" {
		ev.EventSource = "aws:kafka"
	}
	return ev
}

// Event returns the records added so far as one event.
func (b *KafkaBuilder) Event() events.KafkaEvent {
	ev := events.KafkaEvent{
		EventSource:      "SelfManagedKafka",
		EventSourceARN:   b.EventSourceARN,
		BootstrapServers: or(b.BootstrapServers, "b-1.kafka.example:9092,b-2.kafka.example:9092"),
		Records:          make(map[string][]events.KafkaRecord, len(b.records)),
	}
	if b.EventSourceARN != "" {
		ev.EventSource = "aws:kafka"
	}
	for k, v := range b.records {
		ev.Records[k] = append([]events.KafkaRecord(nil), v...)
	}
	return ev
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
