package localtest_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/localtest"
)

func ip(v int) *int   { return &v }
func bp(v bool) *bool { return &v }
func readSAM(t *testing.T, tmpl, name string, overrides ...string) (*localtest.TemplateMapping, error) {
	t.Helper()
	params, err := localtest.ParseParameterOverrides(overrides)
	if err != nil {
		t.Fatal(err)
	}
	return localtest.ReadTemplateMapping([]byte(tmpl), name, localtest.TemplateOptions{Parameters: params})
}

func mustSAM(t *testing.T, tmpl, name string, overrides ...string) *localtest.TemplateMapping {
	t.Helper()
	tm, err := readSAM(t, tmpl, name, overrides...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Mapping.Validate(); err != nil {
		t.Fatalf("the mapping does not validate: %v", err)
	}
	return tm
}

// samKinesis uses every feature of a template a Kinesis consumer's
// mapping and function are read through: parameters, conditions, mappings,
// Globals, and the intrinsics in their short forms.
const samKinesis = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage:
    Type: String
    Default: dev
    AllowedValues: [dev, prod]
  BatchSize:
    Type: Number
    Default: 25
  Retries:
    Type: Number
    Default: "2"
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Not [!Condition IsProd]
Mappings:
  StageConfig:
    dev: {Window: 1}
    prod: {Window: 5}
Globals:
  Function:
    Timeout: 15
    MemorySize: 256
    Architectures: [arm64]
    Runtime: provided.al2023
    Handler: bootstrap
    Environment:
      Variables:
        STAGE: !Ref Stage
        SHARED: global
        OVERRIDDEN: global
Resources:
  Orders:
    Type: AWS::Kinesis::Stream
    Properties:
      Name: !Sub "${AWS::StackName}-orders"
      ShardCount: !If [IsProd, 4, 2]
  Failures:
    Type: AWS::SQS::Queue
  OrdersFunction:
    Type: AWS::Serverless::Function
    Metadata:
      BuildMethod: go1.x
    Properties:
      CodeUri: orders/
      Environment:
        Variables:
          OVERRIDDEN: local
          FAILURES: !Ref Failures
          REGION: !Sub "${AWS::Region}"
          JOINED: !Join ["-", [a, !Select [1, !Split [",", "x,y,z"]]]]
          DEV_ONLY: !If [IsDev, "yes", !Ref AWS::NoValue]
          LITERAL: !Sub "${!NotAVariable}"
      Events:
        Stream:
          Type: Kinesis
          Properties:
            Stream: !GetAtt Orders.Arn
            StartingPosition: TRIM_HORIZON
            BatchSize: !Ref BatchSize
            MaximumBatchingWindowInSeconds: !FindInMap [StageConfig, !Ref Stage, Window]
            BisectBatchOnFunctionError: true
            MaximumRetryAttempts: !Ref Retries
            MaximumRecordAgeInSeconds: 3600
            ParallelizationFactor: 2
            FunctionResponseTypes: [ReportBatchItemFailures]
            Enabled: true
            MetricsConfig:
              Metrics: [EventCount]
            DestinationConfig:
              OnFailure:
                Type: SQS
                Destination: !GetAtt Failures.Arn
            FilterCriteria:
              Filters:
                - Pattern: '{"data": {"kind": ["order"]}}'
`

func TestSAMKinesis(t *testing.T) {
	for _, name := range []string{"OrdersFunction", "OrdersFunction.Stream", "OrdersFunctionStream"} {
		t.Run(name, func(t *testing.T) {
			tm := mustSAM(t, samKinesis, name)
			m := tm.Mapping
			want := &localtest.Mapping{EventSource: "kinesis", FunctionName: "OrdersFunction", StartingPosition: "TRIM_HORIZON",
				BatchSize: ip(25), MaximumBatchingWindowInSeconds: ip(1), BisectBatchOnFunctionError: bp(true),
				MaximumRetryAttempts: ip(2), MaximumRecordAgeInSeconds: ip(3600), ParallelizationFactor: ip(2),
				FunctionResponseTypes: []string{"ReportBatchItemFailures"}, StreamName: "local-orders", Shards: ip(2),
				DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "file://Failures.onfailure.jsonl"}},
				FilterCriteria:    m.FilterCriteria}
			if m.FilterCriteria == nil || len(m.FilterCriteria.Filters) != 1 || !strings.Contains(m.FilterCriteria.Filters[0].Pattern, `"order"`) {
				t.Fatalf("filter criteria %+v", m.FilterCriteria)
			}
			if !reflect.DeepEqual(m, want) {
				t.Errorf("mapping\n%+v\nwant\n%+v", *m, *want)
			}
			if tm.LogicalID != "OrdersFunctionStream" || tm.FunctionLogicalID != "OrdersFunction" || tm.Event != "Stream" || tm.EventType != "Kinesis" {
				t.Errorf("ids %s %s %s %s", tm.LogicalID, tm.FunctionLogicalID, tm.Event, tm.EventType)
			}
			// Globals: the timeout, memory and architecture; the variables
			// merged, the function's own winning.
			if tm.FunctionTimeout != 15*time.Second || tm.FunctionMemory != 256 || !reflect.DeepEqual(tm.Architectures, []string{"arm64"}) {
				t.Errorf("timeout %v, memory %d, architectures %v", tm.FunctionTimeout, tm.FunctionMemory, tm.Architectures)
			}
			wantEnv := map[string]string{"STAGE": "dev", "SHARED": "global", "OVERRIDDEN": "local", "REGION": "us-east-1",
				"JOINED": "a-y", "DEV_ONLY": "yes", "LITERAL": "${NotAVariable}"}
			if !reflect.DeepEqual(tm.Environment, wantEnv) {
				t.Errorf("environment %v\nwant %v", tm.Environment, wantEnv)
			}
			if len(tm.Unresolved) != 1 || !strings.Contains(tm.Unresolved["FAILURES"], "a Ref to the AWS::SQS::Queue Failures") {
				t.Errorf("unresolved %v", tm.Unresolved)
			}
			if f := tm.Function; !f.Serverless || f.LogicalID != "OrdersFunction" || f.Runtime != "provided.al2023" || f.Handler != "bootstrap" {
				t.Errorf("function %+v", f)
			}
			notes := strings.Join(tm.Notes, "\n")
			for _, w := range []string{"AWS::StackName is local, as sam local has it", "AWS::Region is us-east-1",
				"on-failure records, which AWS sends to Failures, go to file://Failures.onfailure.jsonl"} {
				if !strings.Contains(notes, w) {
					t.Errorf("notes lack %q:\n%s", w, notes)
				}
			}
		})
	}
}

// TestSAMParameterOverrides: the overrides, in both of sam's forms, change
// what the parameters reach: a condition, a mapping's entry, a setting.
func TestSAMParameterOverrides(t *testing.T) {
	for _, o := range [][]string{
		{"Stage=prod BatchSize=50"},
		{"ParameterKey=Stage,ParameterValue=prod ParameterKey=BatchSize,ParameterValue=50"},
		{"Stage=dev", "Stage='prod' BatchSize=\"50\""},
	} {
		tm := mustSAM(t, samKinesis, "OrdersFunction", o...)
		m := tm.Mapping
		if *m.Shards != 4 || *m.MaximumBatchingWindowInSeconds != 5 || *m.BatchSize != 50 || tm.Environment["STAGE"] != "prod" {
			t.Errorf("%q: shards %d window %d batch %d stage %s", o, *m.Shards, *m.MaximumBatchingWindowInSeconds, *m.BatchSize, tm.Environment["STAGE"])
		}
		if _, ok := tm.Environment["DEV_ONLY"]; ok {
			t.Errorf("%q: Fn::If to AWS::NoValue left DEV_ONLY in", o)
		}
	}
	tm := mustSAM(t, samKinesis, "OrdersFunction", "AWS::StackName=shop AWS::Region=eu-west-1")
	if tm.Mapping.StreamName != "shop-orders" || tm.Environment["REGION"] != "eu-west-1" {
		t.Errorf("pseudo parameters: stream %s, region %s", tm.Mapping.StreamName, tm.Environment["REGION"])
	}
	if strings.Contains(strings.Join(tm.Notes, "\n"), "as sam local has it") {
		t.Errorf("notes name sam local's values for overridden pseudo parameters: %q", tm.Notes)
	}
}

const samDynamoDB = `Transform: AWS::Serverless-2016-10-31
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: changes
      BillingMode: PAY_PER_REQUEST
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      StreamSpecification: {StreamViewType: NEW_AND_OLD_IMAGES}
  Changes:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: changes/
      Handler: bootstrap
      Runtime: provided.al2023
      Timeout: 20
      Environment:
        Variables:
          TABLE: !Ref Table
      Events:
        Feed:
          Type: DynamoDB
          Properties:
            Stream:
              Fn::GetAtt: [Table, StreamArn]
            StartingPosition: LATEST
            BatchSize: 10
            TumblingWindowInSeconds: 60
            MaximumRetryAttempts: 0
            FunctionResponseTypes: [ReportBatchItemFailures]
`

func TestSAMDynamoDB(t *testing.T) {
	tm := mustSAM(t, samDynamoDB, "Changes")
	want := &localtest.Mapping{EventSource: "dynamodb", FunctionName: "Changes", StartingPosition: "LATEST", BatchSize: ip(10),
		TumblingWindowInSeconds: ip(60), MaximumRetryAttempts: ip(0), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		TableName: "changes"}
	if !reflect.DeepEqual(tm.Mapping, want) {
		t.Errorf("mapping\n%+v\nwant\n%+v", *tm.Mapping, *want)
	}
	// The table's Ref is its TableName, which the template sets.
	if tm.Environment["TABLE"] != "changes" || len(tm.Unresolved) != 0 {
		t.Errorf("environment %v, unresolved %v", tm.Environment, tm.Unresolved)
	}
	if tm.FunctionTimeout != 20*time.Second || tm.FunctionMemory != 0 || tm.Architectures != nil {
		t.Errorf("timeout %v, memory %d, architectures %v", tm.FunctionTimeout, tm.FunctionMemory, tm.Architectures)
	}
}

// samSQS is JSON, in the long forms: a SAM template is either.
const samSQS = `{
  "Transform": ["AWS::Serverless-2016-10-31"],
  "Parameters": {"Concurrency": {"Type": "Number", "Default": 5, "MinValue": 2, "MaxValue": 1000}},
  "Globals": {"Function": {"Timeout": 10}},
  "Resources": {
    "JobsDLQ": {"Type": "AWS::SQS::Queue"},
    "Jobs": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "jobs", "VisibilityTimeout": 60,
      "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": ["JobsDLQ", "Arn"]}, "maxReceiveCount": 3}}},
    "Ledger": {"Type": "AWS::SQS::Queue", "Properties": {"FifoQueue": true,
      "QueueName": {"Fn::Join": ["", [{"Ref": "AWS::StackName"}, "-ledger.fifo"]]}}},
    "Worker": {"Type": "AWS::Serverless::Function", "Properties": {"CodeUri": "worker/", "Handler": "bootstrap",
      "Runtime": "provided.al2023", "FunctionName": "jobs-worker", "Timeout": 30,
      "Events": {
        "Jobs": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["Jobs", "Arn"]}, "BatchSize": 20,
          "MaximumBatchingWindowInSeconds": 2, "FunctionResponseTypes": ["ReportBatchItemFailures"],
          "ScalingConfig": {"MaximumConcurrency": {"Ref": "Concurrency"}}}},
        "Ledger": {"Type": "SQS", "Properties": {"Queue": {"Fn::Sub": "${Ledger.Arn}"}, "BatchSize": 10}}
      }}}
  }
}`

func TestSAMSQS(t *testing.T) {
	tm := mustSAM(t, samSQS, "Worker.Jobs")
	want := &localtest.Mapping{EventSource: "sqs", FunctionName: "jobs-worker", BatchSize: ip(20), MaximumBatchingWindowInSeconds: ip(2),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}, ScalingConfig: &localtest.ScalingConfig{MaximumConcurrency: ip(5)},
		QueueName: "jobs", VisibilityTimeout: ip(60), RedrivePolicy: &localtest.RedrivePolicy{MaxReceiveCount: 3}}
	if !reflect.DeepEqual(tm.Mapping, want) {
		t.Errorf("mapping\n%+v\nwant\n%+v", *tm.Mapping, *want)
	}
	if tm.FunctionTimeout != 30*time.Second {
		t.Errorf("the function's own Timeout loses to Globals: %v", tm.FunctionTimeout)
	}
	// The function's name selects it too, but it has two events.
	if _, err := readSAM(t, samSQS, "jobs-worker"); err == nil || !strings.Contains(err.Error(), `"jobs-worker" names 2 event source mappings`) ||
		!strings.Contains(err.Error(), "Worker.Ledger (SQS, mapping WorkerLedger, function named jobs-worker)") {
		t.Fatalf("error %v", err)
	}
	tm = mustSAM(t, samSQS, "WorkerLedger")
	if tm.Mapping.EventSource != "sqs-fifo" || tm.Mapping.QueueName != "local-ledger.fifo" || *tm.Mapping.BatchSize != 10 {
		t.Errorf("FIFO mapping %+v", *tm.Mapping)
	}
	if _, err := readSAM(t, samSQS, "Worker.Jobs", "Concurrency=1"); err == nil || !strings.Contains(err.Error(), "Parameters.Concurrency: 1 is below its MinValue 2") {
		t.Fatalf("error %v", err)
	}
}

const samMSK = `Transform: AWS::Serverless-2016-10-31
Parameters:
  ClusterArn:
    Type: String
    Default: arn:aws:kafka:us-east-1:123456789012:cluster/payments/abc
Resources:
  Payments:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: payments/
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        Topic:
          Type: MSK
          Properties:
            Stream: !Ref ClusterArn
            Topics: [payments]
            StartingPosition: TRIM_HORIZON
            ConsumerGroupId: payments-consumer
            BatchSize: 50
            ProvisionedPollerConfig: {MinimumPollers: 1, MaximumPollers: 3}
            MaximumRetryAttempts: 3
            BisectBatchOnFunctionError: true
            FunctionResponseTypes: [ReportBatchItemFailures]
            SchemaRegistryConfig:
              SchemaRegistryURI: arn:aws:glue:us-east-1:123456789012:registry/payments
              EventRecordFormat: JSON
              SchemaValidationConfigs: [{Attribute: VALUE}]
`

func TestSAMMSK(t *testing.T) {
	tm := mustSAM(t, samMSK, "Payments")
	want := &localtest.Mapping{EventSource: "kafka", FunctionName: "Payments", StartingPosition: "TRIM_HORIZON", BatchSize: ip(50),
		MaximumRetryAttempts: ip(3), BisectBatchOnFunctionError: bp(true), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		Topic: "payments", Mode: "provisioned"}
	if !reflect.DeepEqual(tm.Mapping, want) {
		t.Errorf("mapping\n%+v\nwant\n%+v", *tm.Mapping, *want)
	}
}

const samSelfManagedKafka = `Transform: AWS::Serverless-2016-10-31
Resources:
  Secret:
    Type: AWS::SecretsManager::Secret
  Audit:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: audit/
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        Kafka:
          Type: SelfManagedKafka
          Properties:
            KafkaBootstrapServers: ["broker-1:9092", "broker-2:9092"]
            Topics: [audit]
            StartingPosition: LATEST
            ConsumerGroupId: audit
            SourceAccessConfigurations:
              - Type: BASIC_AUTH
                URI: !Ref Secret
`

func TestSAMSelfManagedKafka(t *testing.T) {
	tm := mustSAM(t, samSelfManagedKafka, "Audit")
	want := &localtest.Mapping{EventSource: "kafka", FunctionName: "Audit", StartingPosition: "LATEST", Topic: "audit", SelfManaged: true}
	if !reflect.DeepEqual(tm.Mapping, want) {
		t.Errorf("mapping\n%+v\nwant\n%+v", *tm.Mapping, *want)
	}
}

// TestSAMRefusals: what SAM, CloudFormation or the runner would refuse is
// an error naming the resource, the property, and what to do.
func TestSAMRefusals(t *testing.T) {
	edit := func(base, old, new string) string {
		if !strings.Contains(base, old) {
			t.Fatalf("the template lacks %q", old)
		}
		return strings.Replace(base, old, new, 1)
	}
	cases := []struct {
		name, template, mapping string
		overrides               []string
		want                    []string
	}{
		{"misspelt property", edit(samKinesis, "BatchSize: !Ref BatchSize", "Batchsize: !Ref BatchSize"), "OrdersFunction", nil,
			[]string{"resource OrdersFunction, Events.Stream.Properties.Batchsize: SAM refuses it: property Batchsize not defined for resource of type Kinesis"}},
		{"required property", edit(samKinesis, "StartingPosition: TRIM_HORIZON", ""), "OrdersFunction", nil,
			[]string{"Events.Stream.Properties.StartingPosition: SAM refuses the event: missing required property 'StartingPosition'"}},
		{"type", edit(samDynamoDB, "BatchSize: 10", "BatchSize: ten"), "Changes", nil,
			[]string{`resource Changes, Events.Feed.Properties.BatchSize: SAM refuses it: BatchSize must be an integer, not "ten"`}},
		{"destination type", edit(samKinesis, "Type: SQS\n", "Type: Lambda\n"), "OrdersFunction", nil,
			[]string{"DestinationConfig.OnFailure.Type: SAM refuses it: The only valid values for 'Type' are 'SQS', 'SNS', 'S3', and 'Kafka'"}},
		{"filter format", edit(samKinesis, "Filters:\n", "Filter:\n"), "OrdersFunction", nil,
			[]string{"FilterCriteria: SAM refuses it: FilterCriteria field has a wrong format"}},
		{"consumer group on SQS", edit(samSQS, `"BatchSize": 20,`, `"BatchSize": 20, "ConsumerGroupId": "g",`), "Worker.Jobs", nil,
			[]string{"Property ConsumerGroupId not defined for resource of type SQS"}},
		{"self-managed Kafka", edit(edit(samSelfManagedKafka, "Topics: [audit]", "Topics: [audit, other]"), "SourceAccessConfigurations:\n              - Type: BASIC_AUTH\n                URI: !Ref Secret\n", ""), "Audit", nil,
			[]string{"Topics: SAM refuses it: Topics for self managed kafka only supports single configuration entry",
				"SourceAccessConfigurations: SAM refuses it: No SourceAccessConfigurations for self managed kafka event provided"}},
		{"import", edit(samSQS, `{"Fn::GetAtt": ["Jobs", "Arn"]}`, `{"Fn::ImportValue": "jobs-queue-arn"}`), "Worker.Jobs", nil,
			[]string{`resource Worker, Events.Jobs.Properties.Queue: Fn::ImportValue "jobs-queue-arn": the value another stack exports is known only once both are deployed`,
				"make it a parameter and pass --parameter-overrides NAME=VALUE"}},
		{"unsupported intrinsic", edit(samDynamoDB, "BatchSize: 10", "BatchSize: !Select [0, !GetAZs '']"), "Changes", nil,
			[]string{"Events.Feed.Properties.BatchSize: Fn::GetAZs is not an intrinsic function sluice evaluates"}},
		{"missing resource", edit(samKinesis, "!GetAtt Orders.Arn", "!GetAtt Order.Arn"), "OrdersFunction", nil,
			[]string{"Events.Stream.Properties.Stream: Fn::GetAtt Order.Arn: the template has no resource Order"}},
		{"no parameter", edit(samKinesis, "!Ref Retries", "!Ref Retry"), "OrdersFunction", nil,
			[]string{"MaximumRetryAttempts: Ref Retry: the template has no parameter or resource Retry"}},
		{"allowed values", samKinesis, "OrdersFunction", []string{"Stage=test"},
			[]string{`Parameters.Stage: "test" is not one of its AllowedValues (dev, prod)`}},
		{"unknown override", samKinesis, "OrdersFunction", []string{"Stgae=prod"},
			[]string{"--parameter-overrides Stgae: the template has no parameter Stgae (its parameters: BatchSize, Retries, Stage)"}},
		{"globals property", edit(samKinesis, "    Timeout: 15\n", "    Timeout: 15\n    Events: {}\n"), "OrdersFunction", nil,
			[]string{"Globals.Function.Events: SAM refuses it: 'Events' is not a supported property of 'Function'"}},
		{"two architectures", edit(samKinesis, "      CodeUri: orders/\n", "      CodeUri: orders/\n      Architectures: [x86_64]\n"), "OrdersFunction", nil,
			[]string{`resource OrdersFunction, Architectures: ["arm64","x86_64"]: Lambda takes one architecture, x86_64 or arm64 (SAM appends a function's Architectures to those of Globals`}},
		{"condition false", edit(samKinesis, "  OrdersFunction:\n    Type: AWS::Serverless::Function\n", "  OrdersFunction:\n    Type: AWS::Serverless::Function\n    Condition: IsProd\n"),
			"OrdersFunction", nil, []string{"resource OrdersFunction: its Condition IsProd is false with these parameters"}},
		{"not emulated", edit(samSQS, `"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["Jobs", "Arn"]}`, `"Type": "MQ", "Properties": {"Broker": "b"`), "Worker.Jobs", nil,
			[]string{"an event of type MQ: sluice run emulates Kinesis, DynamoDB, SQS, MSK and SelfManagedKafka mappings, not MQ"}},
		{"source of another type", edit(samKinesis, "!GetAtt Orders.Arn", "!GetAtt Failures.Arn"), "OrdersFunction", nil,
			[]string{"resource OrdersFunction, Events.Stream: an event of type Kinesis whose source is a sqs"}},
		{"no transform", edit(samDynamoDB, "Transform: AWS::Serverless-2016-10-31\n", ""), "Changes", nil,
			[]string{`resource Changes: a AWS::Serverless::Function in a template without "Transform: AWS::Serverless-2016-10-31"`}},
		{"unknown tag", edit(samDynamoDB, "BatchSize: 10", "BatchSize: !Number 10"), "Changes", nil,
			[]string{"template line 28: the tag !Number is not an intrinsic function CloudFormation knows"}},
		{"tenancy", edit(samDynamoDB, "      Timeout: 20\n", "      Timeout: 20\n      TenancyConfig: {TenantIsolationMode: PER_TENANT}\n"), "Changes", nil,
			[]string{"resource Changes, Events.Feed: SAM refuses it: Event source 'DynamoDB' is not supported for functions enabled with tenancy configuration"}},
		{"unknown name", samSQS, "Jobs", nil,
			[]string{`no event source mapping is "Jobs"; name one as FUNCTION.EVENT`, "Worker.Jobs (SQS, mapping WorkerJobs, function named jobs-worker)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readSAM(t, c.template, c.mapping, c.overrides...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestSAMFunction(t *testing.T) {
	f, err := localtest.ReadTemplateFunction([]byte(samKinesis), "OrdersFunction", localtest.TemplateOptions{Parameters: map[string]string{"Stage": "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.FunctionName != "OrdersFunction" || f.Timeout != 15*time.Second || f.Memory != 256 || f.Environment["STAGE"] != "prod" ||
		f.Unresolved["FAILURES"] == "" || !f.Function.Serverless {
		b, _ := json.Marshal(f)
		t.Errorf("function %s", b)
	}
	f, err = localtest.ReadTemplateFunction([]byte(samSQS), "jobs-worker", localtest.TemplateOptions{})
	if err != nil || f.Function.LogicalID != "Worker" || f.FunctionName != "jobs-worker" || f.Timeout != 30*time.Second {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := localtest.ReadTemplateFunction([]byte(samSQS), "Nope", localtest.TemplateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `no function is "Nope"; the template's functions: Worker`) {
		t.Fatalf("error %v", err)
	}
}
