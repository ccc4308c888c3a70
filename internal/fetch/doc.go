// Package fetch turns Lambda's native on-failure records into dead-letter
// envelopes. When a stream or Kafka event source mapping gives up on a
// batch, its on-failure destination gets only the batch's coordinates
// (KinesisBatchInfo, DDBStreamBatchInfo, KafkaBatchInfo: a shard and a
// sequence number range, or offsets per partition), never the records.
// While the stream still retains them, Fetcher reads the named records back
// (Kinesis and DynamoDB Streams: GetShardIterator AT_SEQUENCE_NUMBER, then
// GetRecords up to the end sequence number; Kafka: the offsets, with
// franz-go) in the shape Lambda delivered them, and writes envelopes that
// sluice redrive replays.
//
// Records past the stream's retention are gone: the error wraps ErrTrimmed.
// Except from S3: an S3 on-failure destination's object carries the batch's
// whole invocation event as "payload", and Fetcher takes the records from
// there, reading no stream; Bucket reads such a bucket, Dir the files
// `sluice run` writes for a file://dir/ destination.
//
// Only the sluice command links this package: it carries the Kinesis,
// DynamoDB Streams and Kafka clients, which a Lambda function must not.
package fetch
