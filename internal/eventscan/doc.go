// Package eventscan reads the events Lambda hands a stream or queue
// consumer (Kinesis, SQS, DynamoDB Streams, Kafka, a Firehose
// transformation) and the envelopes other services wrap a payload in (an
// SNS notification, an EventBridge event, a DynamoDB change through
// Kinesis, an S3 notification): one file per source, each holding the one
// table of fields (internal/jsonread) that spells the AWS shape, beside its
// fuzz target, which compares it with encoding/json on every input.
//
// A table names the members Lambda writes; any other member is skipped, as
// encoding/json skips a key its struct does not name, so a field AWS adds
// costs its bytes and nothing more. There is no fallback path: a reader
// takes every input encoding/json takes, and fails (the event, or only the
// record, when the record carries its identifier) where encoding/json
// fails.
//
// Decoded records share no memory with the payload (the Lambda runtime
// reuses it): their strings are cut from one copy of the event (an SQS
// event's from one string of its strings' texts alone), their
// base64 payloads decoded into chunks of their own (Bytes), SQS bodies
// unescaped into one buffer per event that the handlers decode them from
// (DecodeSQSBodies). The records' payloads themselves are not read here:
// the handlers decode them with encoding/json's rules (handlers.JSON).
//
// Beside the readers is what else the handlers read from the wire: the
// DynamoDB images (checked as aws-lambda-go takes attribute values,
// ImageMap, DecodeImage through events.UnmarshalImage, MissingImage), KPL
// deaggregation of a Kinesis event on events/kpl (Deaggregate), the
// tumbling window fields (DecodeWindow), where an event they cannot decode
// comes from (EventSourceOf, IsFirehoseEvent), its records' bytes for dead
// letters (SplitRecords) and whether a validated Kafka value arrived as
// JSON (KafkaAsJSON).
package eventscan
