package infra

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// StreamConsumerProps configure a StreamConsumer. Set exactly one of Stream
// and Table; both may be existing ones (awskinesis.Stream_FromStreamArn,
// awsdynamodb.Table_FromTableAttributes with TableStreamArn). Unset, each
// setting takes the default in parentheses.
type StreamConsumerProps struct {
	// Stream is a Kinesis data stream.
	Stream awskinesis.IStream
	// StreamConsumerArn is an enhanced fan-out consumer of Stream
	// (arn:...:stream/NAME/consumer/CONSUMER:TIMESTAMP) to read through:
	// dedicated throughput per shard instead of sharing the stream's reads.
	// Default none.
	StreamConsumerArn *string
	// Table is a DynamoDB table with a stream (TableProps.Stream set).
	Table awsdynamodb.ITable

	Function FunctionOptions

	// StartingPosition (TRIM_HORIZON): nothing written before the first
	// deploy is skipped. AT_TIMESTAMP (Kinesis) takes
	// StartingPositionTimestamp, in Unix seconds.
	StartingPosition           awslambda.StartingPosition
	StartingPositionTimestamp  *float64
	BatchSize                  *float64        // 100
	MaxBatchingWindow          awscdk.Duration // 0; whole seconds
	ParallelizationFactor      *float64        // 1
	BisectBatchOnFunctionError *bool           // true
	MaximumRetryAttempts       *float64        // 5; -1 retries until the record expires
	// MaxRecordAge (6 h); NoRecordAgeLimit true removes the limit (-1).
	MaxRecordAge            awscdk.Duration
	NoRecordAgeLimit        *bool
	ReportBatchItemFailures *bool // true
	// MappingMetrics turns on the mapping's EventCount metrics
	// (MetricsConfig) and the alarms on them: default true.
	MappingMetrics *bool

	// MaxAttempts is the attempt limit after which the handler quarantines
	// a record (SLUICE_MAX_ATTEMPTS): 3; at most MaximumRetryAttempts+1.
	MaxAttempts *float64
	// DeadLetters is the quarantine queue: default one of its own.
	DeadLetters *DeadLetterQueue
	// OnFailure receives Lambda's on-failure records: default a queue of
	// its own.
	OnFailure awssqs.IQueue
	// OnFailureBucket sends them to an S3 bucket of yours instead, where
	// Lambda writes each failed batch whole (its event as "payload"), so
	// `sluice fetch-failed --from-bucket` recovers the records even past
	// the stream's retention. The role may put objects under aws/lambda/
	// and list the bucket (and use its KMS key to write).
	OnFailureBucket awss3.IBucket
	// OnFailureToS3 true makes that bucket: SSE-S3, TLS only, public access
	// blocked, ACLs off, kept when the stack is deleted, objects expiring
	// after OnFailureRetention (14 days; whole days). Default false.
	OnFailureToS3      *bool
	OnFailureRetention awscdk.Duration
	// IdempotencyTable turns idempotency on: default off.
	IdempotencyTable *IdempotencyTable
	// IdempotencyKey names the business key the function registered with
	// fromenv.IdempotencyKey (SLUICE_IDEMPOTENCY_KEY): default the
	// record's event id. Needs IdempotencyTable.
	IdempotencyKey *string
	// IdempotencyKeyPrefix comes before "#" in every idempotency key
	// instead of the function's name (SLUICE_IDEMPOTENCY_KEY_PREFIX,
	// handlers.WithIdempotencyKeyPrefix), so the keys survive a rename of
	// the function: keys under its name would all be new after a rename,
	// and every record still in the table's retention would run again.
	// Default the function's name, as before (synth warns). To keep the
	// keys a deployed table holds, set it to the function's current name.
	// Needs IdempotencyTable.
	IdempotencyKeyPrefix *string
	// AttemptsTable counts attempts: default a table of its own.
	AttemptsTable *AttemptsTable
	Alarms        *AlarmOptions
	// Dashboard false leaves out the consumer's CloudWatch dashboard and its
	// lines on the stack's: default true.
	Dashboard *bool
	// ShadowReplay adds a replay of the stream through Lambda into a shadow
	// copy of the function: default none.
	ShadowReplay *ShadowReplay
}

// StreamConsumer deploys a function consuming a Kinesis stream or a
// DynamoDB table's stream.
type StreamConsumer struct {
	Consumer
	// OnFailure is the mapping's on-failure queue, or nil when it sends
	// its on-failure records to OnFailureBucket.
	OnFailure       awssqs.IQueue
	OnFailureBucket awss3.IBucket
	AttemptsTable   *AttemptsTable
	// Shadow is what ShadowReplay deployed, or nil.
	Shadow *ShadowConsumer
}

// recordAge reads MaxRecordAge and NoRecordAgeLimit.
func recordAge(age awscdk.Duration, none *bool, p *[]string) int {
	if boolOr(none, false) {
		if age != nil {
			*p = append(*p, "MaxRecordAge and NoRecordAgeLimit: set one")
		}
		return -1
	}
	return seconds("MaxRecordAge", age, DefaultMaximumRecordAge, p)
}

func startingPosition(pos awslambda.StartingPosition) string {
	if pos == "" {
		return DefaultStartingPosition
	}
	return string(pos)
}

// streamSettings applies the defaults to props.
func streamSettings(props *StreamConsumerProps, source string, timeout int) (mappingSettings, []string) {
	var p []string
	s := mappingSettings{
		source:           source,
		timeout:          timeout,
		batchSize:        whole("BatchSize", props.BatchSize, DefaultStreamBatchSize, &p),
		window:           seconds("MaxBatchingWindow", props.MaxBatchingWindow, 0, &p),
		parallelization:  whole("ParallelizationFactor", props.ParallelizationFactor, 1, &p),
		bisect:           boolOr(props.BisectBatchOnFunctionError, true),
		retries:          whole("MaximumRetryAttempts", props.MaximumRetryAttempts, DefaultMaximumRetryAttempts, &p),
		maxAge:           recordAge(props.MaxRecordAge, props.NoRecordAgeLimit, &p),
		report:           boolOr(props.ReportBatchItemFailures, true),
		maxAttempts:      whole("MaxAttempts", props.MaxAttempts, DefaultMaxAttempts, &p),
		startingPosition: startingPosition(props.StartingPosition),
		timestamp:        props.StartingPositionTimestamp != nil,
	}
	return s, append(p, s.validate()...)
}

// NewStreamConsumer makes the function, its event source mapping, its
// on-failure queue, dead-letter queue and attempts table, the grants and
// the alarms.
func NewStreamConsumer(scope constructs.Construct, id *string, props *StreamConsumerProps) *StreamConsumer {
	c := &StreamConsumer{}
	c.Construct = constructs.NewConstruct(scope, id)
	path := *c.Node().Path()
	if props == nil {
		invalid(path, []string{"props are required: set Stream or Table, and Function.BootstrapDir"})
	}
	var problems []string
	source := sourceKinesis
	switch {
	case (props.Stream == nil) == (props.Table == nil):
		problems = append(problems, "set exactly one of Stream (Kinesis) and Table (DynamoDB Streams)")
	case props.Table != nil:
		source = sourceDynamoDB
		if props.Table.TableStreamArn() == nil {
			problems = append(problems, fmt.Sprintf("Table %s has no stream: set Stream (a StreamViewType such as NEW_AND_OLD_IMAGES) on the table", *props.Table.Node().Path()))
		}
		if props.StreamConsumerArn != nil {
			problems = append(problems, "StreamConsumerArn is a Kinesis enhanced fan-out consumer; DynamoDB Streams have none")
		}
	}
	problems = append(problems, functionProblems(&props.Function)...)
	problems = append(problems, keyProblems(props.IdempotencyKey, props.IdempotencyTable)...)
	problems = append(problems, shadowProblems(props.ShadowReplay, source, false)...)
	problems = append(problems, prefixProblems(props.IdempotencyKeyPrefix, props.IdempotencyTable)...)
	of := onFailureProblems(props.OnFailure, props.OnFailureBucket, props.OnFailureToS3, props.OnFailureRetention, &problems)
	s, sp := streamSettings(props, source, functionTimeout(&props.Function))
	invalid(path, append(problems, sp...))
	c.source = source

	c.AttemptsTable = props.AttemptsTable
	if c.AttemptsTable == nil {
		c.AttemptsTable = NewAttemptsTable(c.Construct, jsii.String("Attempts"), nil)
	}
	a := c.build(commonProps{fn: &props.Function, deadLetters: props.DeadLetters, idempotency: props.IdempotencyTable,
		attempts: c.AttemptsTable, maxAttempts: s.maxAttempts, report: s.report, alarms: props.Alarms, key: props.IdempotencyKey, prefix: props.IdempotencyKeyPrefix, pf: s.parallelization})
	dest := c.onFailure(of, a)
	c.OnFailure, c.OnFailureBucket = dest.queue, dest.bucket
	a.iteratorAge(c.Function)

	// grant lets a role read the stream as Lambda's poller does.
	var streamArn *string
	grant := func(role awsiam.Role) {
		if source == sourceKinesis {
			role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions: jsii.Strings("kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetRecords",
					"kinesis:GetShardIterator", "kinesis:ListShards"),
				Resources: jsii.Strings(*streamArn),
			}))
			if k := props.Stream.EncryptionKey(); k != nil {
				k.GrantDecrypt(role)
			}
			return
		}
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
			Resources: jsii.Strings(*streamArn),
		}))
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:ListStreams"),
			Resources: jsii.Strings("*"),
		}))
		suppress(role, "AwsSolutions-IAM5",
			"dynamodb:ListStreams, which Lambda calls to poll a table's stream, has no resource-level permissions: it takes only \"*\".",
			"Resource::*")
		if k := props.Table.EncryptionKey(); k != nil {
			k.GrantDecrypt(role)
		}
	}
	if source == sourceKinesis {
		streamArn = props.Stream.StreamArn()
	} else {
		streamArn = props.Table.TableStreamArn()
	}
	grant(c.Role)
	arn := streamArn
	if props.StreamConsumerArn != nil {
		arn = props.StreamConsumerArn
		c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kinesis:SubscribeToShard", "kinesis:DescribeStreamConsumer"),
			Resources: jsii.Strings(*arn),
		}))
	}
	metrics := boolOr(props.MappingMetrics, true)
	mp := awslambda.CfnEventSourceMappingProps{
		EventSourceArn:                 arn,
		StartingPosition:               jsii.String(s.startingPosition),
		StartingPositionTimestamp:      props.StartingPositionTimestamp,
		BatchSize:                      jsii.Number(s.batchSize),
		MaximumBatchingWindowInSeconds: jsii.Number(s.window),
		ParallelizationFactor:          jsii.Number(s.parallelization),
		BisectBatchOnFunctionError:     jsii.Bool(s.bisect),
		MaximumRetryAttempts:           jsii.Number(s.retries),
		MaximumRecordAgeInSeconds:      jsii.Number(s.maxAge),
		FunctionResponseTypes:          responseTypes(s.report),
		DestinationConfig: &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: dest.arn()},
		},
		MetricsConfig: metricsConfig(metrics, source),
	}
	prod := mp
	c.mapping(&prod)
	if metrics {
		a.mappingMetrics(c.Mapping)
	}
	if props.ShadowReplay != nil {
		// The replay reads the stream itself: an enhanced fan-out consumer
		// serves one subscription per shard, production's.
		mp.EventSourceArn = streamArn
		c.Shadow = c.shadow(props.ShadowReplay, mp, c.AttemptsTable, grant)
	}
	c.dashboard(props.Dashboard, board{mappingMetrics: metrics, onFailure: dest, shadow: c.Shadow})
	return c
}
