// Package destination holds the on-failure destinations of localtest that
// are real endpoints, each writing what Lambda writes there:
//
//   - SQS sends each on-failure record as one message.
//   - S3 puts each record, with the failed batch's event as payload, as one
//     object under aws/lambda/<mapping UUID>/<shard>/YYYY/MM/DD/...
//     (S3Bucket; localtest.DirDestination writes the same objects as
//     files).
//   - Kafka produces one message per failed record to a topic.
//
// Give one to localtest.Options.Destination. The file destinations
// (file://path for JSON lines, file://dir/ for S3 objects) are in localtest,
// which opens them from the mapping alone; a kafka:// destination on the
// source's cluster is opened by source.KafkaCluster.
package destination
