package events

// Source names a kind of event source, the one vocabulary of Sluice for
// it: the local runner's mappings (localtest.Mapping.EventSource), the
// dead-letter envelope (dlq.Envelope.Source), the options a function reads
// from its environment (fromenv), the batch report (handlers.BatchReport)
// and the Source dimension of the metrics all use these values. It is not
// Lambda's eventSource field ("aws:kinesis", "aws:sqs", ...), which the
// handlers check on every event.
type Source string

// The sources.
const (
	SourceKinesis  Source = "kinesis"  // Kinesis Data Streams
	SourceDynamoDB Source = "dynamodb" // DynamoDB Streams
	SourceSQS      Source = "sqs"      // SQS standard queues
	SourceSQSFIFO  Source = "sqs-fifo" // SQS FIFO queues
	SourceKafka    Source = "kafka"    // Amazon MSK and self-managed Kafka
	SourceFirehose Source = "firehose" // Data Firehose transformations
)

// Sources lists every Source, in the order above.
func Sources() []Source {
	return []Source{SourceKinesis, SourceDynamoDB, SourceSQS, SourceSQSFIFO, SourceKafka, SourceFirehose}
}

// Stream reports whether records of s are read from a shard by sequence
// number (Kinesis, DynamoDB Streams): the sources with bisection,
// checkpoints and on-failure records of stream batches.
func (s Source) Stream() bool { return s == SourceKinesis || s == SourceDynamoDB }

// Queue reports whether s is an SQS queue, standard or FIFO.
func (s Source) Queue() bool { return s == SourceSQS || s == SourceSQSFIFO }
