// Package replay reads a range of a stream's retained history again, on
// purpose, and sends it to a function in Lambda's event shape: a Kinesis
// stream from a time or sequence number (AT_TIMESTAMP, AT_SEQUENCE_NUMBER),
// a DynamoDB stream within its 24 hours, a Kafka topic-partition from an
// offset or a time. It is not a retry: the records may all have succeeded
// before, and what the replay writes to is the operator's decision.
//
// Four controls make a replay safe:
//
//   - retention: a range that starts before what the stream still holds
//     is an error wrapping ErrTrimmed, saying what is left, never a silent
//     replay of less;
//   - a checkpoint per consumer: Options.Checkpoint records, per shard or
//     partition, the last record whose batch succeeded, so an interrupted
//     replay resumes there; the file names the stream, the function and
//     whether the replay is a shadow one, and refuses another;
//   - an idempotent sink: records keep their ids (eventID, sequence
//     number, topic, partition and offset), so a function with idempotency
//     on skips what production already completed;
//   - production or shadow: a shadow replay runs the function with
//     SLUICE_SHADOW=1 (handlers.Shadow reports it to the function, which
//     writes to a shadow sink), and its idempotency keys live in a
//     namespace of their own (handlers.ShadowKeyPrefix).
//
// Batches are cut as the mapping cuts them: one shard per Kinesis and
// DynamoDB Streams event, several partitions per Kafka event, at most
// BatchSize records and 6 MB. The answer is read as the mapping reads it
// (partial batch responses honoured): a record the function fails stops
// its shard or partition there, and the checkpoint stays before it.
//
// Events are built by redrive.Event, the builder sluice redrive uses, from
// the records as the local runner's sources deliver them, so they are the
// bytes the mapping would send.
//
// Only the sluice command links this package.
package replay
