// Package source holds the real sources of localtest: streams, queues and
// Kafka clusters on an endpoint (AWS, LocalStack, kinesalite, DynamoDB
// Local, an SQS emulator, any Kafka broker), read as Lambda's event source
// mapping reads them.
//
//   - KinesisStream and DynamoDBStream are localtest.StreamSource values:
//     shards listed in order (DynamoDB parents first), records shaped as
//     Lambda delivers them, shard iterators reused between reads.
//   - SQSQueue is a localtest.Queue: the server keeps visibility timeouts,
//     receive counts, redrive and FIFO group locks.
//   - KafkaCluster is a localtest.KafkaSource; it also opens a kafka://
//     on-failure destination on its cluster (localtest.TopicOpener).
//
// Give a source to localtest.Options (Stream, Queue or Kafka); the runner
// then runs on the wall clock. The emulated sources (records from a file or
// from memory) are in localtest itself and link none of these clients.
//
// The package does not import localtest: it implements the runner's
// interfaces by their shape, with the records of package invocation and
// the destinations of localtest/onfailure, so the operations tools that
// read streams with it (internal/fetch, internal/replay) do not link the emulator.
package source
