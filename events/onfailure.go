package events

// OnFailureRecord is the record Lambda sends to a stream or Kafka event source
// mapping's on-failure destination (SQS, SNS, S3, or a Kafka topic) once a batch
// has exhausted its retries or its records have aged out. SQS and SNS records
// carry metadata only; S3 records add Payload, the invocation's event.
//
// ResponseContext is nil for records given up on without an invocation
// (ConditionRecordAgeExceeded): Lambda then sends no responseContext.
type OnFailureRecord struct {
	RequestContext   OnFailureRequestContext   `json:"requestContext"`
	ResponseContext  *OnFailureResponseContext `json:"responseContext,omitempty"`
	Version          string                    `json:"version"`
	Timestamp        string                    `json:"timestamp"`
	KinesisBatchInfo *StreamBatchInfo          `json:"KinesisBatchInfo,omitempty"`
	DDBStreamInfo    *StreamBatchInfo          `json:"DDBStreamBatchInfo,omitempty"`
	KafkaBatchInfo   *KafkaBatchInfo           `json:"KafkaBatchInfo,omitempty"`
	Payload          string                    `json:"payload,omitempty"`
}

// Conditions Lambda reports in OnFailureRequestContext.Condition.
const (
	ConditionRetryAttemptsExhausted     = "RetryAttemptsExhausted"
	ConditionMaximumPayloadSizeExceeded = "MaximumPayloadSizeExceeded"
	// ConditionRecordAgeExceeded is the condition for records past
	// MaximumRecordAgeInSeconds, as recorded against AWS (the docs do not
	// name it). Such records were never delivered: ResponseContext is nil
	// and ApproximateInvokeCount is 1.
	ConditionRecordAgeExceeded = "RecordAgeExceeded"
)

// OnFailureRequestContext describes the invocation that failed.
type OnFailureRequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// OnFailureResponseContext describes how the last invocation ended.
// FunctionError is always present: "Unhandled" (FunctionErrorUnhandled)
// when the function failed (an error, a panic, a timeout), JSON null (nil)
// when the batch failed through its response (a partial batch response or
// an invalid one).
type OnFailureResponseContext struct {
	StatusCode      int     `json:"statusCode"`
	ExecutedVersion string  `json:"executedVersion"`
	FunctionError   *string `json:"functionError"`
}

// FunctionErrorUnhandled is OnFailureResponseContext.FunctionError for a
// function that failed.
const FunctionErrorUnhandled = "Unhandled"

// StreamBatchInfo names the range of a Kinesis or DynamoDB stream shard that
// was given up on.
type StreamBatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// KafkaBatchInfo names the Kafka records that were given up on, per
// topic-partition.
type KafkaBatchInfo struct {
	BatchSize        int                              `json:"batchSize"`
	EventSourceARN   string                           `json:"eventSourceArn,omitempty"`
	BootstrapServers string                           `json:"bootstrapServers"`
	PayloadSize      int                              `json:"payloadSize"`
	RecordsInfo      map[string]KafkaPartitionRecords `json:"recordsInfo"`
}

// KafkaPartitionRecords is the range given up on in one topic-partition.
type KafkaPartitionRecords struct {
	FirstRecordOffset    string `json:"firstRecordOffset"`
	LastRecordOffset     string `json:"lastRecordOffset"`
	FirstRecordTimestamp string `json:"firstRecordTimestamp"`
	LastRecordTimestamp  string `json:"lastRecordTimestamp"`
}
