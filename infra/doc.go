// Package infra holds AWS CDK constructs (Go, CDK v2) that deploy a Sluice
// function with the event source mapping its handler expects:
//
//	StreamConsumer   a Kinesis stream or a DynamoDB table's stream
//	QueueConsumer    an SQS queue, standard or FIFO, with its redrive queue
//	KafkaConsumer    an Amazon MSK topic or a self-managed Kafka topic
//	IdempotencyTable the DynamoDB table idempotency/dynamodbstore uses
//	AttemptsTable    the DynamoDB table that counts attempts per record
//	DeadLetterQueue  the SQS queue the quarantine middleware writes to
//
// Each consumer builds an arm64 provided.al2023 function from a directory
// holding a compiled bootstrap (synth reads its ELF header and stops when
// it is built for another architecture), with its own role and log group,
// and sets safe defaults (see docs/deploy.md): partial batch
// responses on, bounded retries and record age, bisection for streams, an
// on-failure queue for streams and Kafka, redrive for SQS, a visibility
// timeout of six times the function timeout, a FIFO quarantine queue for a
// FIFO source, the mapping's EventCount metrics, encryption at rest,
// least-privilege grants and alarms (function errors and throttles,
// iterator age, SQS backlog age, Kafka offset lag, dropped and on-failure
// records, dead-letter age). Sources may be existing ones: a queue, a
// stream, a table, a Kinesis enhanced fan-out consumer.
//
// What an operator needs comes with them. Each consumer draws a CloudWatch
// dashboard (its backlog age with the alarm threshold, the mapping's
// event counts, the function's errors, throttles, duration and
// concurrency, the handler's own metrics, the dead letters), and every
// consumer of a stack adds its lines to the stack's StackDashboard, which
// sums them; Dashboard false leaves a consumer out. Every mapping publishes
// every metric group AWS offers for its source (MetricsConfig: EventCount;
// Kafka in provisioned mode also ErrorCount and KafkaMetrics). Stream and
// Kafka consumers can send their on-failure records to S3
// (OnFailureToS3, or OnFailureBucket), where Lambda writes the failed
// batch whole, for `sluice fetch-failed --from-bucket`. And ShadowReplay
// replays retained history through Lambda itself: a second mapping from a
// time into a shadow copy of the function (SLUICE_SHADOW=1). Durations are
// awscdk.Duration and starting positions awslambda.StartingPosition, as in
// aws-lambda-event-sources. Whatever the handler depends on reaches it as an environment
// variable (the Env constants), so the handler checks at start-up that the
// mapping is the one it expects.
//
// Invalid combinations (a batching window on FIFO, BatchSize over 10 on
// FIFO, a record age of 1-59 s, ...) panic in the constructor with every
// problem named, as CDK's own constructs do, so `cdk synth` fails before
// anything is deployed.
//
// infra is its own Go module: CDK and jsii never reach a Lambda binary or a
// program that imports only Sluice's runtime packages.
package infra
