package infra

// The environment variables the constructs set on the function. The runtime
// packages read them by the same names.
const (
	// EnvReportBatchItemFailures is "true" when the mapping has
	// FunctionResponseTypes ReportBatchItemFailures, else "false"; the
	// handler checks it at init.
	EnvReportBatchItemFailures = "SLUICE_REPORT_BATCH_ITEM_FAILURES"
	// EnvIdempotencyTable names the idempotency table (IdempotencyTable).
	EnvIdempotencyTable = "SLUICE_IDEMPOTENCY_TABLE"
	// EnvDLQURL is the URL of the queue the quarantine middleware sends
	// dead letters to (DeadLetterQueue).
	EnvDLQURL = "SLUICE_DLQ_URL"
	// EnvMaxAttempts is the attempt limit after which a record is
	// quarantined, a decimal integer.
	EnvMaxAttempts = "SLUICE_MAX_ATTEMPTS"
	// EnvAttemptsTable names the table that counts attempts of stream,
	// Kafka and SQS FIFO records (AttemptsTable).
	EnvAttemptsTable = "SLUICE_ATTEMPTS_TABLE"
	// EnvMetricsNamespace is the CloudWatch namespace of the handler's
	// embedded-metric-format lines; unset, the handler emits none.
	EnvMetricsNamespace = "SLUICE_METRICS_NAMESPACE"
	// EnvIdempotencyKey names the business idempotency key the function
	// must use (the consumer's IdempotencyKey prop); package fromenv picks
	// the handler option the function registered under that name, and
	// fails at init when it registered none.
	EnvIdempotencyKey = "SLUICE_IDEMPOTENCY_KEY"
	// EnvIdempotencyKeyPrefix is what comes before "#" in every
	// idempotency key instead of the function's name (the consumer's
	// IdempotencyKeyPrefix prop).
	EnvIdempotencyKeyPrefix = "SLUICE_IDEMPOTENCY_KEY_PREFIX"
	// EnvParallelizationFactor is a stream mapping's ParallelizationFactor,
	// 1 included, set on every stream consumer with an idempotency table:
	// the handler keeps a checkpoint per shard when told 1, per shard and
	// partition key when told more (Lambda then runs batches of several
	// partition keys of one shard at once) or not told.
	EnvParallelizationFactor = "SLUICE_PARALLELIZATION_FACTOR"
	// EnvKafkaEventRecordFormat is the EventRecordFormat of a Kafka
	// mapping's schema registry configuration (JSON or SOURCE): how the
	// mapping delivers the records it validated.
	EnvKafkaEventRecordFormat = "SLUICE_KAFKA_EVENT_RECORD_FORMAT"
)

// Table layout shared by the idempotency and attempts tables (see
// idempotency/dynamodbstore): a string partition key and a TTL attribute in
// epoch seconds.
const (
	TablePartitionKey = "id"
	TableTTLAttribute = "expiration"
)

// reservedEnv are the variables a construct sets itself from its props;
// FunctionOptions.Environment may not set them.
func reservedEnv() []string {
	return []string{EnvReportBatchItemFailures, EnvIdempotencyTable, EnvDLQURL, EnvMaxAttempts, EnvAttemptsTable, EnvMetricsNamespace,
		EnvIdempotencyKey, EnvIdempotencyKeyPrefix, EnvParallelizationFactor, EnvKafkaEventRecordFormat}
}
