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
