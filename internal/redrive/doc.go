// Package redrive replays dead-lettered records: it reads the envelopes
// that Sluice's quarantine (package dlq) or sluice fetch-failed wrote to an
// SQS queue or a file, rebuilds the Lambda event of each record's source
// around the record exactly as Lambda delivered it, invokes a function with
// it, reads the answer as Lambda's event source mapping does (a partial
// batch response, a function error), and removes an envelope only once its
// record succeeded.
//
// The record keeps its ids (Kinesis and DynamoDB eventID, SQS messageId,
// Kafka topic, partition and offset), so a function with idempotency on
// recognises a record that already took effect and a redrive never repeats
// an effect; running a redrive again after it was interrupted is safe.
//
// Only the sluice command links this package: it needs the local runner's
// event parser and invokers, which a Lambda function must not carry.
package redrive
