package infra

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/fromenv"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
)

// All CDK tests live in this one package: each test binary starts one
// Node process of about 1 GB for jsii. The stacks are built once, in one
// app, and synthesized once.

var update = flag.Bool("update", false, "rewrite the golden template ../localtest/testdata/cdk/sluice.template.json")

const fnDir = "testdata/fn"

func fn() FunctionOptions { return FunctionOptions{BootstrapDir: jsii.String(fnDir)} }

type fixture struct {
	app    awscdk.App
	stacks map[string]awscdk.Stack
	tmpl   map[string]assertions.Template
}

var (
	fixtureOnce sync.Once
	theFixture  *fixture
)

// stacks builds every stack the tests read, in one app with the cdk-nag
// AwsSolutions pack applied.
func stacks(t *testing.T) *fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		f := &fixture{app: awscdk.NewApp(nil), stacks: map[string]awscdk.Stack{}, tmpl: map[string]assertions.Template{}}
		awscdk.Aspects_Of(f.app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		stack := func(name string) awscdk.Stack {
			s := awscdk.NewStack(f.app, jsii.String(name), nil)
			f.stacks[name] = s
			return s
		}

		s := stack("KinesisDefaults")
		NewStreamConsumer(s, jsii.String("Orders"), &StreamConsumerProps{
			Stream:           awskinesis.NewStream(s, jsii.String("Stream"), &awskinesis.StreamProps{Encryption: awskinesis.StreamEncryption_MANAGED}),
			IdempotencyTable: NewIdempotencyTable(s, jsii.String("Idempotency"), nil), Function: fn()})

		s = stack("KinesisOverrides")
		dl := NewDeadLetterQueue(s, jsii.String("Shared"), &DeadLetterQueueProps{QueueName: jsii.String("shared-dlq"),
			Alarms: &AlarmOptions{DeadLetterAge: awscdk.Duration_Days(jsii.Number(2))}})
		of := awssqs.NewQueue(s, jsii.String("MyOnFailure"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true)})
		cdknag.NagSuppressions_AddResourceSuppressions(of, &[]*cdknag.NagPackSuppression{{Id: jsii.String("AwsSolutions-SQS3"),
			Reason: jsii.String("The test's own on-failure queue: Lambda writes to it directly.")}}, nil)
		topic := awssns.NewTopic(s, jsii.String("Pager"), &awssns.TopicProps{EnforceSSL: jsii.Bool(true)})
		cdknag.NagSuppressions_AddResourceSuppressions(topic, &[]*cdknag.NagPackSuppression{{Id: jsii.String("AwsSolutions-SNS2"),
			Reason: jsii.String("A test topic that carries alarm notifications only, no data to protect.")}}, nil)
		NewStreamConsumer(s, jsii.String("Orders"), &StreamConsumerProps{
			Stream: awskinesis.NewStream(s, jsii.String("Stream"), &awskinesis.StreamProps{Encryption: awskinesis.StreamEncryption_MANAGED}),
			Function: FunctionOptions{BootstrapDir: jsii.String(fnDir), Timeout: awscdk.Duration_Seconds(jsii.Number(60)),
				MemorySize: jsii.Number(1024), FunctionName: jsii.String("orders"), MetricsNamespace: jsii.String("Shop"),
				Environment: &map[string]*string{"TZ": jsii.String("UTC")}, Architecture: awslambda.Architecture_X86_64()},
			StartingPosition: awslambda.StartingPosition_LATEST, BatchSize: jsii.Number(500), MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(5)),
			ParallelizationFactor: jsii.Number(4), BisectBatchOnFunctionError: jsii.Bool(false), MaximumRetryAttempts: jsii.Number(-1),
			NoRecordAgeLimit: jsii.Bool(true), ReportBatchItemFailures: jsii.Bool(false), MaxAttempts: jsii.Number(7), MappingMetrics: jsii.Bool(false),
			DeadLetters: dl, OnFailure: of,
			AttemptsTable: NewAttemptsTable(s, jsii.String("Attempts"), &TableProps{TableName: jsii.String("attempts")}),
			Alarms:        &AlarmOptions{Action: awscloudwatchactions.NewSnsAction(topic), IteratorAge: awscdk.Duration_Minutes(jsii.Number(30))}})
		// Reading through an enhanced fan-out consumer, from AT_TIMESTAMP.
		NewStreamConsumer(s, jsii.String("FanOut"), &StreamConsumerProps{
			Stream:            awskinesis.Stream_FromStreamArn(s, jsii.String("Clicks"), jsii.String("arn:aws:kinesis:eu-west-1:123456789012:stream/clicks")),
			StreamConsumerArn: jsii.String("arn:aws:kinesis:eu-west-1:123456789012:stream/clicks/consumer/sluice:1700000000"),
			StartingPosition:  awslambda.StartingPosition_AT_TIMESTAMP, StartingPositionTimestamp: jsii.Number(1700000000),
			MaxRecordAge: awscdk.Duration_Hours(jsii.Number(1)), Function: fn(),
			Alarms: &AlarmOptions{DroppedEvents: jsii.Number(5), OnFailureEvents: jsii.Number(10)}})

		s = stack("DynamoDB")
		NewStreamConsumer(s, jsii.String("Changes"), &StreamConsumerProps{
			Table: awsdynamodb.NewTable(s, jsii.String("Source"), &awsdynamodb.TableProps{
				PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
				BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST, Stream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
				PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}}),
			Function: fn()})

		s = stack("QueueDefaults")
		NewQueueConsumer(s, jsii.String("Jobs"), &QueueConsumerProps{Function: fn()})

		s = stack("QueueOverrides")
		NewQueueConsumer(s, jsii.String("Jobs"), &QueueConsumerProps{Function: FunctionOptions{BootstrapDir: jsii.String(fnDir),
			Timeout: awscdk.Duration_Seconds(jsii.Number(20))}, BatchSize: jsii.Number(100), MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(5)),
			MinimumPollers: jsii.Number(2), MaximumPollers: jsii.Number(10), MappingMetrics: jsii.Bool(false),
			Alarms:          &AlarmOptions{BacklogAge: awscdk.Duration_Minutes(jsii.Number(2))},
			MaxReceiveCount: jsii.Number(10), MaxAttempts: jsii.Number(10), MaximumConcurrency: jsii.Number(5),
			QueueName: jsii.String("jobs")})
		NewQueueConsumer(s, jsii.String("Slow"), &QueueConsumerProps{Function: fn(), VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(15))})

		s = stack("Fifo")
		NewQueueConsumer(s, jsii.String("Ledger"), &QueueConsumerProps{Fifo: jsii.Bool(true), ContentBasedDeduplication: jsii.Bool(true), Function: fn()})

		s = stack("Kafka")
		NewKafkaConsumer(s, jsii.String("Msk"), &KafkaConsumerProps{
			ClusterArn: jsii.String("arn:aws:kafka:eu-west-1:123456789012:cluster/shop/0123-abcd-1"), Topic: jsii.String("orders"),
			ConsumerGroupId: jsii.String("orders-consumer"), Function: fn()})
		NewKafkaConsumer(s, jsii.String("OnDemand"), &KafkaConsumerProps{
			ClusterArn: jsii.String("arn:aws:kafka:eu-west-1:123456789012:cluster/shop/0123-abcd-1"), Topic: jsii.String("audit"),
			OnDemand: jsii.Bool(true), Function: fn()})
		secret := awssecretsmanager.Secret_FromSecretCompleteArn(s, jsii.String("Creds"),
			jsii.String("arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-AbCdEf"))
		NewKafkaConsumer(s, jsii.String("SelfManaged"), &KafkaConsumerProps{
			BootstrapServers: jsii.Strings("b1.example.com:9092", "b2.example.com:9092"), Topic: jsii.String("clicks"),
			Secret: secret, MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(2)), MinimumPollers: jsii.Number(2), MaximumPollers: jsii.Number(4),
			MappingMetrics: jsii.Bool(false),
			SourceAccessConfigurations: &[]*awslambda.CfnEventSourceMapping_SourceAccessConfigurationProperty{
				{Type: jsii.String("VPC_SUBNET"), Uri: jsii.String("subnet:subnet-0123")},
				{Type: jsii.String("VPC_SECURITY_GROUP"), Uri: jsii.String("security_group:sg-0123")}},
			Function: fn()})

		NewKafkaConsumer(s, jsii.String("Registry"), &KafkaConsumerProps{
			ClusterArn: jsii.String("arn:aws:kafka:eu-west-1:123456789012:cluster/shop/0123-abcd-1"), Topic: jsii.String("payments"),
			PollerGroupName: jsii.String("shop"), SystemLogLevel: MappingLogWarn, MaxRecordAge: awscdk.Duration_Hours(jsii.Number(2)),
			StartingPosition: awslambda.StartingPosition_LATEST,
			SchemaRegistry: &KafkaSchemaRegistry{Uri: jsii.String("arn:aws:glue:eu-west-1:123456789012:registry/shop"),
				EventRecordFormat: KafkaRecordFormatSource, Validate: []KafkaSchemaAttribute{KafkaSchemaKey, KafkaSchemaValue}},
			Alarms: &AlarmOptions{OffsetLag: jsii.Number(500)}, Function: fn()})
		NewKafkaConsumer(s, jsii.String("Shares"), &KafkaConsumerProps{
			BootstrapServers: jsii.Strings("b1.example.com:9092"), Topic: jsii.String("jobs"), ConsumptionMode: KafkaConsumptionQueue,
			SchemaRegistry: &KafkaSchemaRegistry{Uri: jsii.String("https://registry.example.com"), EventRecordFormat: KafkaRecordFormatJSON,
				Secret: secret},
			Function: fn()})

		// Existing resources: a FIFO queue, a stream and a table of other stacks.
		s = stack("Existing")
		NewQueueConsumer(s, jsii.String("Payments"), &QueueConsumerProps{
			Queue:    awssqs.Queue_FromQueueArn(s, jsii.String("Live"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:payments.fifo")),
			Function: fn(), IdempotencyTable: NewIdempotencyTable(s, jsii.String("Idempotency"), nil), IdempotencyKey: jsii.String("payment-id"),
			IdempotencyKeyPrefix: jsii.String("payments")})
		NewStreamConsumer(s, jsii.String("Changes"), &StreamConsumerProps{
			Table: awsdynamodb.Table_FromTableAttributes(s, jsii.String("Live"+"Table"), &awsdynamodb.TableAttributes{
				TableArn:       jsii.String("arn:aws:dynamodb:eu-west-1:123456789012:table/accounts"),
				TableStreamArn: jsii.String("arn:aws:dynamodb:eu-west-1:123456789012:table/accounts/stream/2026-01-01T00:00:00.000")}),
			Function: fn(), ParallelizationFactor: jsii.Number(2),
			IdempotencyTable: NewIdempotencyTable(s, jsii.String("ChangesIdempotency"), nil), IdempotencyKeyPrefix: jsii.String("changes")})

		// What an operator looks at: dashboards, every mapping metric, S3
		// on-failure destinations, shadow replays.
		s = stack("Operate")
		NewStreamConsumer(s, jsii.String("Orders"), &StreamConsumerProps{
			Stream: awskinesis.NewStream(s, jsii.String("Stream"), &awskinesis.StreamProps{Encryption: awskinesis.StreamEncryption_MANAGED}),
			Function: FunctionOptions{BootstrapDir: jsii.String(fnDir), FunctionName: jsii.String("orders"), MetricsNamespace: jsii.String("Shop"),
				Environment: &map[string]*string{"SINK_TABLE": jsii.String("orders")}},
			IdempotencyTable: NewIdempotencyTable(s, jsii.String("Idempotency"), nil),
			OnFailureToS3:    jsii.Bool(true), OnFailureRetention: awscdk.Duration_Days(jsii.Number(30)),
			ShadowReplay: &ShadowReplay{From: jsii.Number(1700000000), BatchSize: jsii.Number(1000), ParallelizationFactor: jsii.Number(3),
				Environment: &map[string]*string{"SINK_TABLE": jsii.String("orders-shadow")}}})
		NewStreamConsumer(s, jsii.String("Changes"), &StreamConsumerProps{
			Table: awsdynamodb.NewTable(s, jsii.String("Source"), &awsdynamodb.TableProps{
				PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
				BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST, Stream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
				PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}}),
			ShadowReplay: &ShadowReplay{Enabled: jsii.Bool(true)}, Function: fn()})
		given := awss3.Bucket_FromBucketArn(s, jsii.String("Failed"), jsii.String("arn:aws:s3:::shop-failed-batches"))
		NewKafkaConsumer(s, jsii.String("Payments"), &KafkaConsumerProps{
			ClusterArn: jsii.String("arn:aws:kafka:eu-west-1:123456789012:cluster/shop/0123-abcd-1"), Topic: jsii.String("payments"),
			ConsumerGroupId: jsii.String("payments"), OnFailureBucket: given,
			StartingPosition: awslambda.StartingPosition_AT_TIMESTAMP, StartingPositionTimestamp: jsii.Number(1690000000),
			ShadowReplay: &ShadowReplay{From: jsii.Number(1700000000)}, Function: fn()})
		NewQueueConsumer(s, jsii.String("Quiet"), &QueueConsumerProps{Function: fn(), Dashboard: jsii.Bool(false)})
		NewQueueConsumer(s, jsii.String("Jobs"), &QueueConsumerProps{Function: fn()})

		// The template sluice run --template reads in localtest's tests.
		s = stack("Sluice")
		NewStreamConsumer(s, jsii.String("Orders"), &StreamConsumerProps{
			Stream: awskinesis.NewStream(s, jsii.String("Stream"), &awskinesis.StreamProps{Encryption: awskinesis.StreamEncryption_MANAGED,
				ShardCount: jsii.Number(2)}),
			IdempotencyTable: NewIdempotencyTable(s, jsii.String("Idempotency"), nil), BatchSize: jsii.Number(4),
			Function:     FunctionOptions{BootstrapDir: jsii.String(fnDir), FunctionName: jsii.String("sluice-orders")},
			ShadowReplay: &ShadowReplay{From: jsii.Number(1700000000)}})
		NewQueueConsumer(s, jsii.String("Ledger"), &QueueConsumerProps{Fifo: jsii.Bool(true), Function: fn()})

		for name, st := range f.stacks {
			f.tmpl[name] = assertions.Template_FromStack(st, nil)
		}
		theFixture = f
	})
	if theFixture == nil {
		t.Fatal("building the test stacks failed (see the first test's panic)")
	}
	return theFixture
}

// has asserts that the stack has a resource of type with props, turning
// the assertion library's panic into a test failure.
func has(t *testing.T, stack, typ string, props any) {
	t.Helper()
	tmpl := stacks(t).tmpl[stack]
	if err := catch(func() { tmpl.HasResourceProperties(jsii.String(typ), props) }); err != "" {
		t.Fatalf("%s: %s", stack, err)
	}
}

// hasNot asserts that no resource of type has props.
func hasNot(t *testing.T, stack, typ string, props any) {
	t.Helper()
	tmpl := stacks(t).tmpl[stack]
	if err := catch(func() { tmpl.HasResourceProperties(jsii.String(typ), props) }); err == "" {
		t.Fatalf("%s: a %s matches %v", stack, typ, props)
	}
}

func count(t *testing.T, stack, typ string, n int) {
	t.Helper()
	tmpl := stacks(t).tmpl[stack]
	if err := catch(func() { tmpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) }); err != "" {
		t.Fatalf("%s: %s", stack, err)
	}
}

func catch(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func absent() assertions.Matcher               { return assertions.Match_Absent() }
func like(v map[string]any) assertions.Matcher { return assertions.Match_ObjectLike(&v) }
func anyValue() assertions.Matcher             { return assertions.Match_AnyValue() }
func arrayWith(v ...any) assertions.Matcher {
	l := v
	return assertions.Match_ArrayWith(&l)
}

// resources returns the template's resources of type.
func resources(t *testing.T, stack, typ string) map[string]map[string]any {
	t.Helper()
	m := stacks(t).tmpl[stack].FindResources(jsii.String(typ), nil)
	out := map[string]map[string]any{}
	for k, v := range *m {
		b, _ := json.Marshal(v)
		var r map[string]any
		json.Unmarshal(b, &r)
		out[k] = r
	}
	return out
}

func TestContractWithRuntime(t *testing.T) {
	if EnvReportBatchItemFailures != handlers.EnvReportBatchItemFailures {
		t.Errorf("EnvReportBatchItemFailures %q, handlers reads %q", EnvReportBatchItemFailures, handlers.EnvReportBatchItemFailures)
	}
	for mine, theirs := range map[string]string{
		EnvShadow: handlers.EnvShadow,
		// What the dashboards read is what the handlers write.
		MetricRecordsFailed: handlers.MetricRecordsFailed, MetricInProcessRetries: handlers.MetricInProcessRetries,
		MetricRecordsDuplicate: handlers.MetricRecordsDuplicate, MetricRecordsQuarantined: handlers.MetricRecordsQuarantined,
		MetricBatchDuration: handlers.MetricBatchDuration, MetricOldestRecordAge: handlers.MetricOldestRecordAge,
		sourceKinesis: string(sevents.SourceKinesis), sourceDynamoDB: string(sevents.SourceDynamoDB), sourceSQS: string(sevents.SourceSQS),
		sourceSQSFIFO: string(sevents.SourceSQSFIFO), sourceKafka: string(sevents.SourceKafka),
		EnvIdempotencyTable: fromenv.EnvIdempotencyTable, EnvDLQURL: fromenv.EnvDLQURL,
		EnvMaxAttempts: fromenv.EnvMaxAttempts, EnvAttemptsTable: fromenv.EnvAttemptsTable,
		EnvMetricsNamespace: handlers.EnvMetricsNamespace, EnvIdempotencyKey: fromenv.EnvIdempotencyKey,
		EnvKafkaEventRecordFormat: fromenv.EnvKafkaEventRecordFormat, EnvIdempotencyKeyPrefix: fromenv.EnvIdempotencyKeyPrefix,
		EnvParallelizationFactor: handlers.EnvParallelizationFactor,
	} {
		if mine != theirs {
			t.Errorf("the constructs set %q, the runtime reads %q", mine, theirs)
		}
	}
	if TableTTLAttribute != dynamodbattempts.AttrExpiration || TablePartitionKey != dynamodbattempts.AttrID {
		t.Errorf("attempts table layout id=%q ttl=%q, dynamodbattempts uses %q and %q", TablePartitionKey, TableTTLAttribute,
			dynamodbattempts.AttrID, dynamodbattempts.AttrExpiration)
	}
	if TablePartitionKey != dynamodbstore.DefaultPartitionKey || TableTTLAttribute != dynamodbstore.AttrExpiration {
		t.Errorf("table layout id=%q ttl=%q, dynamodbstore uses %q and %q", TablePartitionKey, TableTTLAttribute,
			dynamodbstore.DefaultPartitionKey, dynamodbstore.AttrExpiration)
	}
}

func TestKinesisDefaults(t *testing.T) {
	const s = "KinesisDefaults"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"EventSourceArn":   like(map[string]any{"Fn::GetAtt": []any{anyValue(), "Arn"}}),
		"StartingPosition": "TRIM_HORIZON", "BatchSize": 100, "MaximumBatchingWindowInSeconds": 0, "ParallelizationFactor": 1,
		"BisectBatchOnFunctionError": true, "MaximumRetryAttempts": 5, "MaximumRecordAgeInSeconds": 21600,
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		"DestinationConfig":     map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{"Fn::GetAtt": []any{anyValue(), "Arn"}}}},
		"MetricsConfig":         map[string]any{"Metrics": []any{"EventCount"}}, "StartingPositionTimestamp": absent(),
	})
	has(t, s, "AWS::Lambda::Function", map[string]any{
		"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap", "Timeout": 30, "MemorySize": 256,
		"Environment": map[string]any{"Variables": map[string]any{
			"SLUICE_REPORT_BATCH_ITEM_FAILURES": "true", "SLUICE_MAX_ATTEMPTS": "3",
			"SLUICE_DLQ_URL": like(map[string]any{"Ref": anyValue()}), "SLUICE_IDEMPOTENCY_TABLE": like(map[string]any{"Ref": anyValue()}),
			"SLUICE_ATTEMPTS_TABLE": like(map[string]any{"Ref": anyValue()}), "SLUICE_METRICS_NAMESPACE": absent(),
			"SLUICE_IDEMPOTENCY_KEY": absent(), "SLUICE_KAFKA_EVENT_RECORD_FORMAT": absent(), "SLUICE_IDEMPOTENCY_KEY_PREFIX": absent(),
		}},
		"LoggingConfig": map[string]any{"LogGroup": like(map[string]any{"Ref": anyValue()})},
	})
	// Its own role: no managed policy (AWSLambdaBasicExecutionRole would
	// write to every log group).
	has(t, s, "AWS::IAM::Role", map[string]any{"ManagedPolicyArns": absent()})
	has(t, s, "AWS::Logs::LogGroup", map[string]any{"RetentionInDays": 30})
	// No fan-out consumer: nothing may subscribe to shards.
	hasNot(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": arrayWith("kinesis:SubscribeToShard")}))})})
	// Three queues: dead letters, on-failure records; all encrypted, TLS only, 14 days.
	count(t, s, "AWS::SQS::Queue", 2)
	for id, q := range resources(t, s, "AWS::SQS::Queue") {
		p := q["Properties"].(map[string]any)
		if p["SqsManagedSseEnabled"] != true || p["MessageRetentionPeriod"] != float64(14*24*3600) {
			t.Errorf("queue %s: %v, want SqsManagedSseEnabled true and 14 days' retention", id, p)
		}
	}
	count(t, s, "AWS::SQS::QueuePolicy", 2)
	has(t, s, "AWS::SQS::QueuePolicy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}))})})
	// Idempotency and attempts tables share the store's layout.
	count(t, s, "AWS::DynamoDB::Table", 2)
	for id, tb := range resources(t, s, "AWS::DynamoDB::Table") {
		p, _ := json.Marshal(tb["Properties"])
		for _, want := range []string{`"KeySchema":[{"AttributeName":"id","KeyType":"HASH"}]`, `"AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}]`,
			`"BillingMode":"PAY_PER_REQUEST"`, `"TimeToLiveSpecification":{"AttributeName":"expiration","Enabled":true}`,
			`"SSESpecification":{"SSEEnabled":true}`, `"PointInTimeRecoveryEnabled":true`} {
			if !strings.Contains(string(p), want) {
				t.Errorf("table %s lacks %s: %s", id, want, p)
			}
		}
	}
	// Alarms: errors, throttles, iterator age, the two queues' oldest
	// message, and the mapping's dropped and on-failure records.
	count(t, s, "AWS::CloudWatch::Alarm", 7)
	for _, name := range []string{"DroppedEventCount", "OnFailureDestinationDeliveredEventCount"} {
		has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": name, "Namespace": "AWS/Lambda", "Threshold": 1, "Statistic": "Sum",
			"Period": 300, "ComparisonOperator": "GreaterThanOrEqualToThreshold",
			"Dimensions": []any{map[string]any{"Name": "EventSourceMappingUUID", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersMapping"))}}}})
	}
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "IteratorAge", "Namespace": "AWS/Lambda", "Threshold": 300000,
		"Statistic": "Maximum", "ComparisonOperator": "GreaterThanThreshold", "AlarmActions": absent()})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "Errors", "Threshold": 1})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "Throttles", "Threshold": 1})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 3600})
}

func TestLeastPrivilege(t *testing.T) {
	// "*" only where AWS has no resource-level permission.
	star := map[string]bool{"dynamodb:ListStreams": true, "ec2:CreateNetworkInterface": true, "ec2:DescribeNetworkInterfaces": true,
		"ec2:DescribeVpcs": true, "ec2:DeleteNetworkInterface": true, "ec2:DescribeSubnets": true, "ec2:DescribeSecurityGroups": true}
	for _, s := range []string{"KinesisDefaults", "DynamoDB", "QueueDefaults", "Kafka", "Operate"} {
		for id, p := range resources(t, s, "AWS::IAM::Policy") {
			b, _ := json.Marshal(p["Properties"])
			var doc struct {
				PolicyDocument struct {
					Statement []struct{ Action, Resource any }
				}
			}
			json.Unmarshal(b, &doc)
			for _, st := range doc.PolicyDocument.Statement {
				actions, _ := json.Marshal(st.Action)
				for _, bad := range []string{`*"`, `"dynamodb:Scan"`, `"dynamodb:Query"`, `"logs:CreateLogGroup"`} {
					if strings.Contains(string(actions), bad) {
						t.Errorf("%s: policy %s grants %s", s, id, actions)
					}
				}
				res, _ := json.Marshal(st.Resource)
				// A Glue registry's schemas, which producers name: its own only.
				if strings.Contains(string(actions), "glue:") && strings.Contains(string(res), `:schema/shop/*"`) &&
					!strings.Contains(string(res), `"*"`) {
					continue
				}
				// The objects Lambda names in an on-failure bucket: one prefix
				// of one bucket.
				if string(actions) == `"s3:PutObject"` && strings.HasSuffix(string(res), `/aws/lambda/*"]]}`) ||
					string(res) == `"arn:aws:s3:::shop-failed-batches/aws/lambda/*"` {
					continue
				}
				if strings.Contains(string(res), `*`) {
					var as []string
					if json.Unmarshal(actions, &as) != nil {
						as = []string{strings.Trim(string(actions), `"`)}
					}
					for _, a := range as {
						if !star[a] {
							t.Errorf("%s: policy %s grants %s on %s", s, id, a, res)
						}
					}
				}
			}
		}
	}
	has(t, "KinesisDefaults", "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"logs:CreateLogStream", "logs:PutLogEvents"}, "Resource": map[string]any{"Fn::GetAtt": []any{anyValue(), "Arn"}}}),
		like(map[string]any{"Action": arrayWith("sqs:SendMessage")}),
		like(map[string]any{"Action": []any{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
			"dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}}),
		like(map[string]any{"Action": []any{"kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetRecords",
			"kinesis:GetShardIterator", "kinesis:ListShards"}}),
	)})})
	has(t, "QueueDefaults", "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": arrayWith("sqs:ReceiveMessage", "sqs:DeleteMessage")}))})})
	// The mapping waits for the role's policy: AWS checks it on create.
	for id, m := range resources(t, "QueueDefaults", "AWS::Lambda::EventSourceMapping") {
		if b, _ := json.Marshal(m["DependsOn"]); !strings.Contains(string(b), "DefaultPolicy") {
			t.Errorf("mapping %s depends on %s, want the role's policy", id, b)
		}
	}
}

func TestKinesisOverrides(t *testing.T) {
	const s = "KinesisOverrides"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"StartingPosition": "LATEST", "BatchSize": 500, "MaximumBatchingWindowInSeconds": 5, "ParallelizationFactor": 4,
		"BisectBatchOnFunctionError": false, "MaximumRetryAttempts": -1, "MaximumRecordAgeInSeconds": -1,
		"FunctionResponseTypes": absent(), "MetricsConfig": absent(),
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^MyOnFailure")), "Arn"}}}},
	})
	// MappingMetrics off: no alarms on the mapping's metrics for Orders.
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "DroppedEventCount",
		"Dimensions": []any{map[string]any{"Name": "EventSourceMappingUUID", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OrdersMapping"))}}}})
	// The fan-out consumer: its ARN is the source, it may subscribe to it,
	// and reads from a timestamp, with its own thresholds.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"EventSourceArn":   "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks/consumer/sluice:1700000000",
		"StartingPosition": "AT_TIMESTAMP", "StartingPositionTimestamp": 1700000000, "MaximumRecordAgeInSeconds": 3600,
		"MetricsConfig": map[string]any{"Metrics": []any{"EventCount"}},
	})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:GetRecords",
			"kinesis:GetShardIterator", "kinesis:ListShards"}, "Resource": "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks"}),
		like(map[string]any{"Action": []any{"kinesis:SubscribeToShard", "kinesis:DescribeStreamConsumer"},
			"Resource": "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks/consumer/sluice:1700000000"}),
	)})})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "DroppedEventCount", "Threshold": 5})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "OnFailureDestinationDeliveredEventCount", "Threshold": 10})
	has(t, s, "AWS::Lambda::Function", map[string]any{
		"FunctionName": "orders", "Timeout": 60, "MemorySize": 1024, "Architectures": []any{"x86_64"},
		"Environment": map[string]any{"Variables": map[string]any{
			"SLUICE_REPORT_BATCH_ITEM_FAILURES": "false", "SLUICE_MAX_ATTEMPTS": "7", "SLUICE_METRICS_NAMESPACE": "Shop", "TZ": "UTC",
			"SLUICE_DLQ_URL":           map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^SharedQueue"))},
			"SLUICE_ATTEMPTS_TABLE":    map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^AttemptsTable"))},
			"SLUICE_IDEMPOTENCY_TABLE": absent(),
		}},
	})
	// Given queues and table: none of its own (the fan-out consumer has
	// its own three queues and attempts table).
	count(t, s, "AWS::SQS::Queue", 2+2)
	count(t, s, "AWS::DynamoDB::Table", 1+1)
	has(t, s, "AWS::SQS::Queue", map[string]any{"QueueName": "shared-dlq"})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "IteratorAge", "Threshold": 1800000,
		"AlarmActions": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Pager"))}}})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 2 * 24 * 3600})
	has(t, s, "AWS::DynamoDB::Table", map[string]any{"TableName": "attempts"})
}

func TestDynamoDBStream(t *testing.T) {
	const s = "DynamoDB"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"EventSourceArn":   map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^Source")), "StreamArn"}},
		"StartingPosition": "TRIM_HORIZON", "BisectBatchOnFunctionError": true, "FunctionResponseTypes": []any{"ReportBatchItemFailures"},
	})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"},
			"Resource": map[string]any{"Fn::GetAtt": []any{anyValue(), "StreamArn"}}}),
		like(map[string]any{"Action": "dynamodb:ListStreams", "Resource": "*"}),
	)})})
}

func TestQueueDefaults(t *testing.T) {
	const s = "QueueDefaults"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"BatchSize": 10, "MaximumBatchingWindowInSeconds": 0, "FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		"BisectBatchOnFunctionError": absent(), "MaximumRetryAttempts": absent(), "StartingPosition": absent(), "DestinationConfig": absent(),
		"ScalingConfig": absent(), "ProvisionedPollerConfig": absent(), "MetricsConfig": map[string]any{"Metrics": []any{"EventCount"}},
	})
	// Visibility: 6 x 30 s + 0 s window; redrive after 5 receives; 4 days.
	has(t, s, "AWS::SQS::Queue", map[string]any{"VisibilityTimeout": 180, "MessageRetentionPeriod": 4 * 24 * 3600,
		"SqsManagedSseEnabled": true, "RedrivePolicy": map[string]any{"maxReceiveCount": 5, "deadLetterTargetArn": anyValue()}})
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": map[string]any{
		"SLUICE_MAX_ATTEMPTS": "3", "SLUICE_ATTEMPTS_TABLE": absent(), "SLUICE_REPORT_BATCH_ITEM_FAILURES": "true"}}})
	count(t, s, "AWS::SQS::Queue", 3) // source, redrive, dead letters
	count(t, s, "AWS::DynamoDB::Table", 0)
	count(t, s, "AWS::CloudWatch::Alarm", 5) // errors, throttles, the dead-letter and redrive queues' age, the source's backlog
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "ApproximateAgeOfOldestMessage",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^JobsRedrive")), "QueueName"}}}}})
	// The backlog of the consumed queue itself: 15 minutes.
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 900, "Period": 60,
		"Statistic": "Maximum", "ComparisonOperator": "GreaterThanThreshold",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^JobsQueue")), "QueueName"}}}}})
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "IteratorAge"})
	// SQS mappings publish no dropped or on-failure counts: no alarm on them.
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "DroppedEventCount"})
}

func TestQueueOverrides(t *testing.T) {
	const s = "QueueOverrides"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"BatchSize": 100, "MaximumBatchingWindowInSeconds": 5,
		"ScalingConfig": map[string]any{"MaximumConcurrency": 5}, "ProvisionedPollerConfig": map[string]any{"MinimumPollers": 2, "MaximumPollers": 10},
		"MetricsConfig": absent()})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 120,
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^JobsQueue")), "QueueName"}}}}})
	has(t, s, "AWS::SQS::Queue", map[string]any{"QueueName": "jobs", "VisibilityTimeout": 6*20 + 5,
		"RedrivePolicy": like(map[string]any{"maxReceiveCount": 10})})
	has(t, s, "AWS::SQS::Queue", map[string]any{"VisibilityTimeout": 900})
}

func TestFifo(t *testing.T) {
	const s = "Fifo"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"BatchSize": 10, "MaximumBatchingWindowInSeconds": absent(),
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"}})
	has(t, s, "AWS::SQS::Queue", map[string]any{"FifoQueue": true, "ContentBasedDeduplication": true, "VisibilityTimeout": 180,
		"RedrivePolicy": like(map[string]any{"maxReceiveCount": 5})})
	// The redrive and quarantine queues of a FIFO queue are FIFO: order in
	// a message group survives into a redrive.
	count(t, s, "AWS::SQS::Queue", 3)
	for id, q := range resources(t, s, "AWS::SQS::Queue") {
		if q["Properties"].(map[string]any)["FifoQueue"] != true {
			t.Errorf("queue %s is not FIFO", id)
		}
	}
	has(t, s, "AWS::SQS::Queue", map[string]any{"FifoQueue": true, "MessageRetentionPeriod": 14 * 24 * 3600, "RedrivePolicy": absent(),
		"ContentBasedDeduplication": absent()})
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_DLQ_URL": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^LedgerDeadLettersQueue"))}})}})
	// A FIFO message's receive count also counts deliveries it waited
	// through unrun: the handler counts its failed runs in a table.
	count(t, s, "AWS::DynamoDB::Table", 1)
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_ATTEMPTS_TABLE": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^LedgerAttemptsTable"))}})}})
}

func TestKafka(t *testing.T) {
	const s = "Kafka"
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"EventSourceArn": "arn:aws:kafka:eu-west-1:123456789012:cluster/shop/0123-abcd-1", "Topics": []any{"orders"},
		"AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": "orders-consumer"},
		"ProvisionedPollerConfig":             map[string]any{"MinimumPollers": 1}, "StartingPosition": "TRIM_HORIZON",
		"BisectBatchOnFunctionError": true, "MaximumRetryAttempts": 5, "MaximumRecordAgeInSeconds": 21600,
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"}, "DestinationConfig": like(map[string]any{}),
		"MaximumBatchingWindowInSeconds": absent(),
	})
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"Topics": []any{"audit"}, "ProvisionedPollerConfig": absent(), "BisectBatchOnFunctionError": absent(),
		"MaximumRetryAttempts": absent(), "FunctionResponseTypes": absent(), "DestinationConfig": absent(),
		"AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": assertions.Match_StringLikeRegexp(jsii.String("OnDemand"))},
	})
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{"SLUICE_REPORT_BATCH_ITEM_FAILURES": "false"})}})
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"SelfManagedEventSource":            map[string]any{"Endpoints": map[string]any{"KafkaBootstrapServers": []any{"b1.example.com:9092", "b2.example.com:9092"}}},
		"SelfManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": anyValue()},
		"MaximumBatchingWindowInSeconds":    2, "ProvisionedPollerConfig": map[string]any{"MinimumPollers": 2, "MaximumPollers": 4},
		"MetricsConfig": absent(), "StartingPosition": "TRIM_HORIZON",
		"SourceAccessConfigurations": []any{
			map[string]any{"Type": "VPC_SUBNET", "URI": "subnet:subnet-0123"},
			map[string]any{"Type": "VPC_SECURITY_GROUP", "URI": "security_group:sg-0123"},
			map[string]any{"Type": "SASL_SCRAM_512_AUTH", "URI": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-AbCdEf"},
		},
	})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"},
			"Resource": "arn:aws:kafka:eu-west-1:123456789012:topic/shop/0123-abcd-1/orders"}),
		like(map[string]any{"Action": []any{"kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"},
			"Resource": "arn:aws:kafka:eu-west-1:123456789012:group/shop/0123-abcd-1/orders-consumer"}),
	)})})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}}))})})

	// Kafka's lag is OffsetLag (IteratorAge is not emitted for Kafka):
	// one per consumer, default 10,000 records.
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "IteratorAge"})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "OffsetLag", "Namespace": "AWS/Lambda", "Threshold": 10000,
		"Statistic": "Maximum", "ComparisonOperator": "GreaterThanThreshold"})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "OffsetLag", "Threshold": 500})
	// Provisioned mode: EventCount metrics and the alarms on them; on-demand: neither.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"Topics": []any{"orders"}, "MetricsConfig": map[string]any{"Metrics": []any{"EventCount", "ErrorCount", "KafkaMetrics"}},
		"LoggingConfig": absent(), "AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": "orders-consumer"}})
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"Topics": []any{"audit"}, "MetricsConfig": absent()})
	hasNot(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "DroppedEventCount",
		"Dimensions": []any{map[string]any{"Name": "EventSourceMappingUUID", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^OnDemandMapping"))}}}})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "DroppedEventCount",
		"Dimensions": []any{map[string]any{"Name": "EventSourceMappingUUID", "Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^MskMapping"))}}}})

	// A Glue schema registry, a poller group, poller logs.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"Topics": []any{"payments"}, "StartingPosition": "LATEST", "MaximumRecordAgeInSeconds": 7200,
		"ProvisionedPollerConfig": map[string]any{"MinimumPollers": 1, "PollerGroupName": "shop"},
		"LoggingConfig":           map[string]any{"SystemLogLevel": "WARN"},
		"AmazonManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": anyValue(), "SchemaRegistryConfig": map[string]any{
			"SchemaRegistryURI": "arn:aws:glue:eu-west-1:123456789012:registry/shop", "EventRecordFormat": "SOURCE",
			"SchemaValidationConfigs": []any{map[string]any{"Attribute": "KEY"}, map[string]any{"Attribute": "VALUE"}},
			"AccessConfigs":           absent()}},
	})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"glue:GetRegistry", "glue:GetSchemaVersion"},
			"Resource": []any{"arn:aws:glue:eu-west-1:123456789012:registry/shop", "arn:aws:glue:eu-west-1:123456789012:schema/shop/*"}}))})})
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_KAFKA_EVENT_RECORD_FORMAT": "SOURCE"})}})
	// Queue mode (share groups): no starting position; a Confluent registry
	// with its secret, which the role may read.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"Topics": []any{"jobs"}, "StartingPosition": absent(), "MaximumBatchingWindowInSeconds": absent(),
		"SelfManagedKafkaEventSourceConfig": map[string]any{"ConsumerGroupId": anyValue(), "ConsumptionMode": "Queue", "SchemaRegistryConfig": map[string]any{
			"SchemaRegistryURI": "https://registry.example.com", "EventRecordFormat": "JSON",
			"SchemaValidationConfigs": []any{map[string]any{"Attribute": "VALUE"}},
			"AccessConfigs":           []any{map[string]any{"Type": "BASIC_AUTH", "URI": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka-AbCdEf"}}}},
	})
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_KAFKA_EVENT_RECORD_FORMAT": "JSON"})}})
	hasNot(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"Topics": []any{"orders"}, "SelfManagedKafkaEventSourceConfig": anyValue()})
}

// TestExisting: consumers of resources the construct did not make.
func TestExisting(t *testing.T) {
	const s = "Existing"
	// A given FIFO queue: consumed as it is (no queue, redrive queue or
	// policy of the construct's own), with a FIFO quarantine queue.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{"EventSourceArn": "arn:aws:sqs:eu-west-1:123456789012:payments.fifo",
		"BatchSize": 10, "MaximumBatchingWindowInSeconds": absent()})
	count(t, s, "AWS::SQS::Queue", 1+2) // the FIFO quarantine; the table consumer's dead letters and on-failure queue
	has(t, s, "AWS::SQS::Queue", map[string]any{"FifoQueue": true, "RedrivePolicy": absent()})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": arrayWith("sqs:ReceiveMessage", "sqs:DeleteMessage"),
			"Resource": "arn:aws:sqs:eu-west-1:123456789012:payments.fifo"}))})})
	has(t, s, "AWS::CloudWatch::Alarm", map[string]any{"MetricName": "ApproximateAgeOfOldestMessage", "Threshold": 900,
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": "payments.fifo"}}})
	// The business key reaches the function.
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_IDEMPOTENCY_KEY": "payment-id", "SLUICE_IDEMPOTENCY_KEY_PREFIX": "payments",
		"SLUICE_IDEMPOTENCY_TABLE": map[string]any{"Ref": anyValue()}})}})
	// A stream read two batches a shard at once: the handler is told.
	has(t, s, "AWS::Lambda::Function", map[string]any{"Environment": map[string]any{"Variables": like(map[string]any{
		"SLUICE_PARALLELIZATION_FACTOR": "2", "SLUICE_IDEMPOTENCY_KEY_PREFIX": "changes"})}})
	// A table without a key prefix: synth warns that a rename re-runs
	// what the table holds; the consumer with one gets no warning.
	prefixWarns := func(stack string) int {
		w := assertions.Annotations_FromStack(stacks(t).stacks[stack]).FindWarning(jsii.String("*"),
			assertions.Match_StringLikeRegexp(jsii.String("set IdempotencyKeyPrefix")))
		return len(*w)
	}
	if n := prefixWarns("KinesisDefaults"); n != 1 {
		t.Errorf("KinesisDefaults: %d warnings about the key prefix, want 1", n)
	}
	if n := prefixWarns(s); n != 0 {
		t.Errorf("%s: %d warnings about the key prefix, want none (its table has a prefix)", s, n)
	}
	// The construct cannot check the given queue: synth says what to check.
	warns := assertions.Annotations_FromStack(stacks(t).stacks[s]).FindWarning(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String("the source queue is given.*visibility timeout of at least 180 s")))
	if len(*warns) != 1 {
		t.Errorf("%d warnings about the given queue, want 1", len(*warns))
	}
	// A table of another stack, by its stream's ARN.
	has(t, s, "AWS::Lambda::EventSourceMapping", map[string]any{
		"EventSourceArn": "arn:aws:dynamodb:eu-west-1:123456789012:table/accounts/stream/2026-01-01T00:00:00.000", "StartingPosition": "TRIM_HORIZON"})
	has(t, s, "AWS::IAM::Policy", map[string]any{"PolicyDocument": like(map[string]any{"Statement": arrayWith(
		like(map[string]any{"Action": []any{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"},
			"Resource": "arn:aws:dynamodb:eu-west-1:123456789012:table/accounts/stream/2026-01-01T00:00:00.000"}))})})
}

// TestNag: the AwsSolutions pack finds no error left unsuppressed in any
// stack, and every suppression carries a reason.
func TestNag(t *testing.T) {
	f := stacks(t)
	for name, st := range f.stacks {
		errs := assertions.Annotations_FromStack(st).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
		for _, e := range *errs {
			b, _ := json.Marshal(e)
			t.Errorf("%s: cdk-nag: %s", name, b)
		}
		tmpl := f.tmpl[name].ToJSON()
		b, _ := json.Marshal(tmpl)
		var doc struct {
			Resources map[string]struct {
				Metadata struct {
					CdkNag struct {
						Rules []struct{ ID, Reason string } `json:"rules_to_suppress"`
					} `json:"cdk_nag"`
				}
			}
		}
		json.Unmarshal(b, &doc)
		for id, r := range doc.Resources {
			for _, s := range r.Metadata.CdkNag.Rules {
				if len(s.Reason) < 40 {
					t.Errorf("%s: %s suppresses %s with too short a reason: %q", name, id, s.ID, s.Reason)
				}
			}
		}
	}
}

// TestNagSees: the same checks do report a queue without encryption or
// TLS, so TestNag's silence means something.
func TestNagSees(t *testing.T) {
	app := awscdk.NewApp(nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	st := awscdk.NewStack(app, jsii.String("Bare"), nil)
	awssqs.NewQueue(st, jsii.String("Plain"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
	errs := assertions.Annotations_FromStack(st).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-SQS4.*")))
	if len(*errs) == 0 {
		t.Fatal("cdk-nag reported nothing for a queue that allows plain HTTP")
	}
}

// TestRejected: invalid props panic in the constructor with a message
// naming the prop and what to do.
func TestRejected(t *testing.T) {
	arm, x86 := t.TempDir(), t.TempDir()
	for dir, m := range map[string]elf.Machine{arm: elf.EM_AARCH64, x86: elf.EM_X86_64} {
		if err := os.WriteFile(filepath.Join(dir, "bootstrap"), elfHeader(t, elf.ELFCLASS64, m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		build func(s awscdk.Stack)
		want  string
	}{
		{"fifo window", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Fifo: jsii.Bool(true), MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(1)), Function: fn()})
		}, "no batching window for FIFO"},
		{"fifo batch size", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Fifo: jsii.Bool(true), BatchSize: jsii.Number(11), Function: fn()})
		}, "BatchSize 11: a FIFO queue's mapping takes 1..10"},
		{"attempts table on a standard queue", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{AttemptsTable: NewAttemptsTable(s, jsii.String("A"), nil), Function: fn()})
		}, "AttemptsTable is for FIFO queues"},
		{"record age 30", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil),
				MaxRecordAge: awscdk.Duration_Seconds(jsii.Number(30)), Function: fn()})
		}, "MaxRecordAge 30 s: Lambda accepts 60 s..7 days (or no limit: NoRecordAgeLimit)"},
		{"kafka record age 59", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				MaxRecordAge: awscdk.Duration_Seconds(jsii.Number(59)), Function: fn()})
		}, "MaxRecordAge 59 s"},
		{"no bootstrap", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Function: FunctionOptions{BootstrapDir: jsii.String("testdata")}})
		}, "Function.BootstrapDir testdata holds no file named bootstrap"},
		{"reserved env", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Function: FunctionOptions{BootstrapDir: jsii.String(fnDir),
				Environment: &map[string]*string{"SLUICE_MAX_ATTEMPTS": jsii.String("9")}}})
		}, "Function.Environment sets SLUICE_MAX_ATTEMPTS"},
		{"stream and table", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Function: fn()})
		}, "set exactly one of Stream (Kinesis) and Table"},
		{"table without stream", func(s awscdk.Stack) {
			tb := awsdynamodb.NewTable(s, jsii.String("T"), &awsdynamodb.TableProps{
				PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING}})
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Table: tb, Function: fn()})
		}, "has no stream"},
		{"visibility below timeout", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(10)), Function: fn()})
		}, "VisibilityTimeout 10 s is below the function timeout 30 s"},
		{"on-demand kafka retries", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				OnDemand: jsii.Bool(true), MaximumRetryAttempts: jsii.Number(2), Function: fn()})
		}, "MaximumRetryAttempts needs provisioned mode"},
		{"all problems at once", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Fifo: jsii.Bool(true), BatchSize: jsii.Number(20),
				MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(3)), Function: fn()})
		}, "Default/C: invalid props:\n  - BatchSize 20: a FIFO queue's mapping takes 1..10 messages per batch\n  - MaxBatchingWindow 3 s"},
		{"x86-64 bootstrap on arm64", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Function: FunctionOptions{BootstrapDir: jsii.String(x86)}})
		}, "is built for x86_64 but the function's Architecture is arm64, so Lambda could not start it: build it with GOOS=linux GOARCH=arm64"},
		{"arm64 bootstrap on x86-64", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil),
				Function: FunctionOptions{BootstrapDir: jsii.String(arm), Architecture: awslambda.Architecture_X86_64()}})
		}, "is built for arm64 but the function's Architecture is x86_64"},
		{"window in milliseconds", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{MaxBatchingWindow: awscdk.Duration_Millis(jsii.Number(500)), Function: fn()})
		}, "MaxBatchingWindow 500 millis is not a whole number of seconds"},
		{"record age both ways", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil),
				MaxRecordAge: awscdk.Duration_Hours(jsii.Number(1)), NoRecordAgeLimit: jsii.Bool(true), Function: fn()})
		}, "MaxRecordAge and NoRecordAgeLimit: set one"},
		{"at timestamp without one", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil),
				StartingPosition: awslambda.StartingPosition_AT_TIMESTAMP, Function: fn()})
		}, "StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP"},
		{"fan-out on a table", func(s awscdk.Stack) {
			tb := awsdynamodb.NewTable(s, jsii.String("T"), &awsdynamodb.TableProps{Stream: awsdynamodb.StreamViewType_NEW_IMAGE,
				PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING}})
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Table: tb, StreamConsumerArn: jsii.String("arn:x"), Function: fn()})
		}, "DynamoDB Streams have none"},
		{"key without a table", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{IdempotencyKey: jsii.String("order-id"), Function: fn()})
		}, `IdempotencyKey "order-id" needs IdempotencyTable`},
		{"key prefix without a table", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{IdempotencyKeyPrefix: jsii.String("orders"), Function: fn()})
		}, `IdempotencyKeyPrefix "orders" needs IdempotencyTable`},
		{"empty key prefix", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil),
				IdempotencyTable: NewIdempotencyTable(s, jsii.String("I"), nil), IdempotencyKeyPrefix: jsii.String(""), Function: fn()})
		}, "IdempotencyKeyPrefix is empty"},
		{"given queue and its shape", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{
				Queue:    awssqs.Queue_FromQueueArn(s, jsii.String("Q"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:jobs")),
				Function: fn(), QueueName: jsii.String("jobs"), MaxReceiveCount: jsii.Number(9)})
		}, "QueueName shapes the queue the construct makes; with Queue given, set it on that queue instead"},
		{"fifo with a standard quarantine", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Fifo: jsii.Bool(true), Function: fn(),
				DeadLetters: NewDeadLetterQueue(s, jsii.String("D"), nil)})
		}, "DeadLetters is a standard queue but the source is FIFO"},
		{"sqs pollers", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{MinimumPollers: jsii.Number(1), Function: fn()})
		}, "MinimumPollers 1: sqs takes at least 2"},
		{"queue mode on msk", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{ClusterArn: jsii.String("arn:aws:kafka:eu-west-1:1:cluster/a/b"), Topic: jsii.String("t"),
				ConsumptionMode: KafkaConsumptionQueue, Function: fn()})
		}, "ConsumptionMode applies to self-managed Kafka only"},
		{"queue mode with a starting position", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				ConsumptionMode: KafkaConsumptionQueue, StartingPosition: awslambda.StartingPosition_LATEST, Function: fn()})
		}, "StartingPosition and MaxBatchingWindow do not apply in ConsumptionMode Queue"},
		{"schema registry on demand", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"), OnDemand: jsii.Bool(true),
				SchemaRegistry: &KafkaSchemaRegistry{Uri: jsii.String("https://r"), EventRecordFormat: KafkaRecordFormatJSON}, Function: fn()})
		}, "SchemaRegistry needs provisioned mode"},
		{"schema registry format", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				SchemaRegistry: &KafkaSchemaRegistry{Uri: jsii.String("https://r"), EventRecordFormat: "AVRO"}, Function: fn()})
		}, `SchemaRegistry.EventRecordFormat "AVRO": use KafkaRecordFormatJSON or KafkaRecordFormatSource`},
		{"shadow from on a table", func(s awscdk.Stack) {
			tb := awsdynamodb.NewTable(s, jsii.String("T"), &awsdynamodb.TableProps{Stream: awsdynamodb.StreamViewType_NEW_IMAGE,
				PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING}})
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Table: tb, Function: fn(), ShadowReplay: &ShadowReplay{From: jsii.Number(1.7e9)}})
		}, "ShadowReplay.From: DynamoDB Streams have no AT_TIMESTAMP"},
		{"shadow sets the shadow mark itself", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil), Function: fn(),
				ShadowReplay: &ShadowReplay{Environment: &map[string]*string{"SLUICE_SHADOW": jsii.String("0")}}})
		}, "ShadowReplay.Environment sets SLUICE_SHADOW, which the construct sets"},
		{"shadow mark in the function", func(s awscdk.Stack) {
			NewQueueConsumer(s, jsii.String("C"), &QueueConsumerProps{Function: FunctionOptions{BootstrapDir: jsii.String(fnDir),
				Environment: &map[string]*string{"SLUICE_SHADOW": jsii.String("1")}}})
		}, "Function.Environment sets SLUICE_SHADOW"},
		{"shadow of a share group", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				ConsumptionMode: KafkaConsumptionQueue, ShadowReplay: &ShadowReplay{}, Function: fn()})
		}, "a Kafka share group (ConsumptionMode Queue) has no starting position to replay from"},
		{"shadow batch size", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil), Function: fn(),
				ShadowReplay: &ShadowReplay{BatchSize: jsii.Number(20000)}})
		}, "ShadowReplay.BatchSize 20000 is outside 1..10000"},
		{"two on-failure destinations", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil), Function: fn(),
				OnFailure: awssqs.NewQueue(s, jsii.String("Q"), nil), OnFailureToS3: jsii.Bool(true)})
		}, "OnFailure, OnFailureBucket and OnFailureToS3 name the on-failure destination: set one"},
		{"retention of a bucket not made", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil), Function: fn(),
				OnFailureRetention: awscdk.Duration_Days(jsii.Number(3))})
		}, "OnFailureRetention applies to the bucket the construct makes"},
		{"retention in hours", func(s awscdk.Stack) {
			NewStreamConsumer(s, jsii.String("C"), &StreamConsumerProps{Stream: awskinesis.NewStream(s, jsii.String("S"), nil), Function: fn(),
				OnFailureToS3: jsii.Bool(true), OnFailureRetention: awscdk.Duration_Hours(jsii.Number(36))})
		}, "OnFailureRetention: S3 expires objects after whole days"},
		{"on-demand kafka bucket", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				OnDemand: jsii.Bool(true), OnFailureToS3: jsii.Bool(true), Function: fn()})
		}, "OnFailureToS3 needs provisioned mode"},
		{"kafka at timestamp without one", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				StartingPosition: awslambda.StartingPosition_AT_TIMESTAMP, Function: fn()})
		}, "StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP"},
		{"log level", func(s awscdk.Stack) {
			NewKafkaConsumer(s, jsii.String("C"), &KafkaConsumerProps{BootstrapServers: jsii.Strings("b:9092"), Topic: jsii.String("t"),
				SystemLogLevel: "TRACE", Function: fn()})
		}, `SystemLogLevel "TRACE"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			app := awscdk.NewApp(nil)
			st := awscdk.NewStack(app, jsii.String("Default"), nil)
			msg := catch(func() { c.build(st) })
			if !strings.Contains(msg, c.want) {
				t.Fatalf("panic %q, want it to contain %q", msg, c.want)
			}
		})
	}
}

// TestTemplateGolden keeps the template localtest's template reader is
// tested with in step with what the constructs synthesize.
func TestTemplateGolden(t *testing.T) {
	f := stacks(t)
	b, err := json.MarshalIndent(f.tmpl["Sluice"].ToJSON(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("..", "localtest", "testdata", "cdk", "sluice.template.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./infra -run TestTemplateGolden -update writes it)", err)
	}
	if !bytes.Equal(old, b) {
		t.Errorf("%s differs from what the constructs synthesize: run go test -run TestTemplateGolden -update in infra/ and review the diff", path)
	}
}
