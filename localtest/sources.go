package localtest

import (
	"context"
	"encoding/json"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
)

var jsonMarshal = json.Marshal

// A StreamSource is a Kinesis or DynamoDB stream, read shard by shard. The
// emulated source (records from a file) and real endpoints (kinesalite,
// DynamoDB Local, LocalStack, AWS) implement it.
type StreamSource interface {
	// Shards lists the shard ids, in a stable order.
	Shards(ctx context.Context) ([]string, error)
	// Read returns up to max records of shard that come after the record
	// with sequence number after ("" means from the starting position), in
	// order. An empty result means nothing more is available now.
	Read(ctx context.Context, shard, after string, max int) ([]invocation.StreamRecord, error)
}

// A Queue is an SQS queue. The emulated queue implements visibility
// timeouts, receive counts, redrive to a dead-letter queue and FIFO group
// locking itself; a real endpoint (fauxqs, LocalStack, AWS) does it server
// side.
type Queue interface {
	// Receive returns up to max visible messages and hides them for
	// visibility. On a FIFO queue it never returns a message of a group that
	// has a message in flight, and returns a group's messages in order.
	Receive(ctx context.Context, max int, visibility time.Duration) ([]invocation.QueueMessage, error)
	// Delete removes received messages.
	Delete(ctx context.Context, receiptHandles []string) error
	// Counts reports messages left in the queue (visible or in flight) and
	// messages in its dead-letter queue.
	Counts(ctx context.Context) (left, deadLettered int, err error)
}

// A KafkaSource is a set of Kafka topic-partitions.
type KafkaSource interface {
	// Partitions lists "<topic>-<n>" keys, in a stable order.
	Partitions(ctx context.Context) ([]string, error)
	// Fetch returns up to max records of the partition from offset on, in
	// order. An empty result means nothing more is available now.
	Fetch(ctx context.Context, partition string, offset int64, max int) ([]invocation.KafkaRecord, error)
	// Event describes the cluster for the event envelope: eventSource
	// ("aws:kafka" or "SelfManagedKafka"), eventSourceArn, bootstrapServers.
	Envelope() invocation.KafkaEnvelope
}

// realRef is the inputRef of a record read from a real source, with its
// payload taken from its event record (Kinesis data, SQS body, Kafka value,
// DynamoDB image); a Kinesis record a producer aggregated with the KPL
// stands for its user records (deaggregated), as the handlers see it.
func realRef(source sevents.Source, id, key string, event json.RawMessage) inputRef {
	return realLaneRef(source, id, key, "", event)
}

// realLaneRef is realRef for a Kinesis record read from lane (laneName).
func realLaneRef(source sevents.Source, id, key, lane string, event json.RawMessage) inputRef {
	p := eventPayload(source, event)
	ref := inputRef{id: id, key: key, payload: p, items: payloadItems(p), lane: lane}
	if source == sevents.SourceKinesis {
		ref = deaggregated(ref)
	}
	return ref
}

// eventPayload extracts the payload of one event record, or nil.
func eventPayload(source sevents.Source, event json.RawMessage) []byte {
	switch source {
	case sevents.SourceKinesis:
		var e struct {
			Kinesis struct {
				Data []byte `json:"data"`
			} `json:"kinesis"`
		}
		if json.Unmarshal(event, &e) == nil {
			return e.Kinesis.Data
		}
	case sevents.SourceSQS, sevents.SourceSQSFIFO:
		var e struct {
			Body string `json:"body"`
		}
		if json.Unmarshal(event, &e) == nil {
			return []byte(e.Body)
		}
	case sevents.SourceKafka:
		var e struct {
			Value []byte `json:"value"`
		}
		if json.Unmarshal(event, &e) == nil {
			return e.Value
		}
	case sevents.SourceDynamoDB:
		var e struct {
			Change struct {
				New map[string]map[string]json.RawMessage `json:"NewImage"`
				Old map[string]map[string]json.RawMessage `json:"OldImage"`
			} `json:"dynamodb"`
		}
		if json.Unmarshal(event, &e) != nil {
			return nil
		}
		img := e.Change.New
		if img == nil {
			img = e.Change.Old
		}
		// Top-level scalar attributes as plain JSON: enough to match
		// effects by a field and to name records.
		plain := map[string]json.RawMessage{}
		for name, av := range img {
			for typ, v := range av {
				switch typ {
				case "S", "BOOL":
					plain[name] = v
				case "N":
					if n := jsonText(v); json.Valid([]byte(n)) {
						plain[name] = json.RawMessage(n)
					}
				}
			}
		}
		var inner string
		if json.Unmarshal(plain["payload"], &inner) == nil && len(inner) > 0 && inner[0] == '{' {
			return []byte(inner)
		}
		b, _ := json.Marshal(plain)
		return b
	}
	return nil
}
