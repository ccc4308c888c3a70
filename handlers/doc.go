// Package handlers turns a typed per-record function into a Lambda handler
// for Kinesis Data Streams, DynamoDB Streams, SQS (standard and FIFO) and
// Kafka (Amazon MSK and self-managed), with the partial batch response each
// source needs:
//
//	func process(ctx context.Context, r handlers.KinesisRecord[Order]) error { ... }
//
//	func main() { lambda.Start(handlers.MustKinesis(process)) }
//
// NewKinesis, NewDynamoDB, NewSQS, NewSQSFIFO and NewKafka return an error for
// a bad option or a mapping contract the handler cannot honour; the MustX
// forms panic instead, so a misconfigured function fails at init, before it
// takes a batch.
//
// Each handler implements aws-lambda-go's lambda.Handler (Invoke(ctx, []byte)),
// so the event is decoded once, by Sluice: a hand-written scanner per source
// for the shape Lambda sends, a general decoder with encoding/json's rules
// for anything a scanner does not expect (each scanner is fuzzed against
// encoding/json). Each record's payload is decoded into T with a Codec (JSON by default; T of type
// []byte receives the raw payload, a string its text). A payload another
// service wrapped is unwrapped by naming the wrapper as T: SNSMessage (SNS
// notifications in SQS), EventBridgeEvent, S3Notification (S3 event
// notifications; the s3:TestEvent message is acknowledged without running
// the function) and DynamoDBChange (Kinesis Data Streams for DynamoDB);
// each gives the record a default idempotency key of its own. NewFirehose
// serves a Firehose stream's data transformation. The typed record keeps the record exactly
// as Lambda delivered it beside the decoded value, with one exception:
// DynamoDBRecord.Raw's image maps are usually nil, and its Keys, NewImage and
// OldImage methods decode them on demand (DynamoDB images are decoded into T
// straight from the event's JSON).
//
// # What is reported
//
// Kinesis and DynamoDB Streams records are handled in sequence order, and the
// batch stops at the first failure, whose sequence number alone is reported
// (Lambda retries the shard from there). WithKeyConcurrency runs different
// partition keys concurrently, each in order. SQS standard messages run with
// bounded concurrency and every failure is reported by message id. SQS FIFO
// messages run in order; a failure reports it and every later message of the
// batch, or only the later messages of its group with WithSkipGroupOnFailure.
// Kafka topic-partitions run concurrently, each in offset order; a failure
// stops its partition and reports {partition, offset} for it and every later
// record of the partition.
//
// A record whose payload cannot be decoded fails alone, permanently, with an
// error naming it. A panic fails its record. Transient errors are retried in
// process (twice by default); each retry is counted into the record's
// attempts (see WithOnBatch) and logged at debug level. No record is started
// when less than the deadline margin (500 ms by default) is left, and a batch
// in which nothing succeeded returns a function error so
// BisectBatchOnFunctionError can split it (WithPartialResponseWhenNoneSucceed
// answers with a partial response instead). A response that reports failures
// never comes with an error.
//
// An event that does not come from the handler's source (its records carry
// another eventSource, or it has no records array of the source's name)
// fails the whole invocation with a *SourceMismatchError before any record
// runs: the event source mapping points at the wrong function.
//
// # Around each record
//
// Options add what docs/handlers.md describes at length, and each one's own
// comment states the rules: WithIdempotency runs each record's function at
// most once per key (package idempotency), in-process retries inside one
// claim; WithDeadLetters quarantines what cannot be processed; WithLogger
// sets where the batch's summary line (counts by outcome, retries,
// duplicates, duration, oldest record age) and its per-failure lines go
// (standard error as Lambda's logging configuration says, by default);
// WithMetrics, or SLUICE_METRICS_NAMESPACE, writes one CloudWatch Embedded
// Metric Format line per batch (the Metric constants), and WithOnBatch is
// the hook for other metric and tracing libraries. NewKinesisWindow and
// NewDynamoDBWindow serve mappings with TumblingWindowInSeconds, folding
// records into an aggregate that travels in Lambda's window state.
//
// # The mapping contract
//
// Lambda ignores a partial batch response unless the event source mapping has
// FunctionResponseTypes ReportBatchItemFailures: failed records would then
// count as processed. When the environment says so
// (SLUICE_REPORT_BATCH_ITEM_FAILURES=false, set by Sluice's CDK constructs),
// the constructors refuse to build a handler that reports partial failures,
// unless WithWholeBatchFailures is given, which fails the whole invocation on
// any failure instead.
package handlers
