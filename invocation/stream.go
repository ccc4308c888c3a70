package invocation

import (
	"encoding/json"
	"time"
)

// StreamRecord is one stream record as Lambda delivers it.
type StreamRecord struct {
	SequenceNumber string
	PartitionKey   string // Kinesis partition key; DynamoDB: the item's keys
	Arrival        time.Time
	// Event is the record exactly as it appears in the Lambda event's
	// Records array (events.KinesisEventRecord or events.DynamoDBEventRecord
	// as JSON).
	Event json.RawMessage
}

// KafkaEnvelope is the part of a Kafka event around its records.
type KafkaEnvelope struct {
	EventSource      string
	EventSourceARN   string
	BootstrapServers string
}

// QueueMessage is one received SQS message.
type QueueMessage struct {
	MessageID     string
	ReceiptHandle string
	GroupID       string
	ReceiveCount  int
	Sent          time.Time
	// Event is the message exactly as it appears in the Lambda event's
	// Records array (events.SQSMessage as JSON).
	Event json.RawMessage
}

// KafkaRecord is one Kafka record as Lambda delivers it.
type KafkaRecord struct {
	Offset    int64
	Timestamp time.Time
	Key       string // the record key, for ordering checks (decoded)
	// Event is the record exactly as it appears in the event's records map
	// (events.KafkaRecord as JSON).
	Event json.RawMessage
}
