// Package eventscan decodes the events Lambda hands a stream or queue
// consumer (Kinesis, SQS, DynamoDB Streams, Kafka; a Firehose
// transformation with the plan decoder) without reflection:
// one hand-written scanner per source, in a file of its own, for the shape
// Lambda sends (known keys, spelled as Lambda spells them, each once).
// A scanner gives up on anything else, and a general decoder (encoding/json
// or the plan decoder of internal/jsonplan) settles it; each source's fuzz
// target keeps the scanner equal to its reference decoder.
//
// The envelopes other services wrap a payload in (an SNS notification, an
// EventBridge event, a DynamoDB change through Kinesis, an S3
// notification) have readers of the same kind, one file each (sns.go,
// eventbridge.go, ddbchange.go, s3.go; envelopes.go holds what they
// share), which read the SQS body or Kinesis data the source's scanner
// decoded, sharing its memory.
//
// Decoded records share no memory with the payload (the Lambda runtime
// reuses it), but strings of one batch share the large chunks of an Arena,
// which are never reused. The shared core (scanner, Arena, string and
// number lexing, base64) is in scan.go and base64.go; this package and
// internal/jsonplan are where Sluice uses unsafe.
//
// Beside the scanners is what else the handlers read from the wire: the
// {"Records":[...]} fallback that fails only the bad records (RecordArray),
// the DynamoDB Streams event with its image checks (DecodeDynamoDB,
// MissingImage), KPL deaggregation (Deaggregate), Kafka schema metadata
// (KafkaSchemaMetadata), the tumbling window fields (WindowEvent) and
// where an event they cannot decode comes from (EventSourceOf,
// IsFirehoseEvent), its records' bytes for dead letters (SplitRecords) and
// whether a validated Kafka value arrived as JSON (KafkaAsJSON).
package eventscan
