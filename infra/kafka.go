package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// KafkaConsumerProps configure a KafkaConsumer. Set exactly one of
// ClusterArn (Amazon MSK) and BootstrapServers (self-managed Kafka).
type KafkaConsumerProps struct {
	// ClusterArn of an Amazon MSK cluster; the function reads it with IAM
	// authentication unless Secret is set.
	ClusterArn *string
	// BootstrapServers of a self-managed cluster, host:port each.
	BootstrapServers *[]*string
	Topic            *string
	// ConsumerGroupId: default the construct's unique id (stable across
	// deploys; IAM grants name it exactly).
	ConsumerGroupId *string
	// Secret holds SASL/SCRAM credentials or an mTLS client certificate;
	// SecretType is its SourceAccessConfiguration type
	// (SASL_SCRAM_512_AUTH by default; BASIC_AUTH, CLIENT_CERTIFICATE_TLS_AUTH, ...).
	Secret     awssecretsmanager.ISecret
	SecretType *string
	// SourceAccessConfigurations are added as given (for self-managed
	// Kafka in a VPC: VPC_SUBNET and VPC_SECURITY_GROUP entries).
	SourceAccessConfigurations *[]*awslambda.CfnEventSourceMapping_SourceAccessConfigurationProperty

	Function FunctionOptions

	// OnDemand uses Lambda's on-demand pollers: no retry limits, no
	// bisection, no partial batch responses (Lambda ignores them, and the
	// handler is told so). Default false: provisioned mode.
	OnDemand *bool
	// MinimumPollers and MaximumPollers of provisioned mode: 1 and
	// Lambda's default.
	MinimumPollers *float64
	MaximumPollers *float64

	StartingPosition               *string  // TRIM_HORIZON
	BatchSize                      *float64 // 100
	MaximumBatchingWindowInSeconds *float64 // Lambda's 0.5 s when unset
	BisectBatchOnFunctionError     *bool    // true (provisioned)
	MaximumRetryAttempts           *float64 // 5 (provisioned)
	MaximumRecordAgeInSeconds      *float64 // 21600 (provisioned)
	ReportBatchItemFailures        *bool    // true (provisioned)

	MaxAttempts      *float64 // 3; at most MaximumRetryAttempts+1
	DeadLetters      *DeadLetterQueue
	OnFailure        awssqs.IQueue
	IdempotencyTable *IdempotencyTable
	AttemptsTable    *AttemptsTable
	Alarms           *AlarmOptions
}

// KafkaConsumer deploys a function consuming a Kafka topic.
type KafkaConsumer struct {
	Consumer
	OnFailure     awssqs.IQueue
	AttemptsTable *AttemptsTable
}

func kafkaSettings(props *KafkaConsumerProps, timeout int) (mappingSettings, []string) {
	var p []string
	s := mappingSettings{
		source:           sourceKafka,
		timeout:          timeout,
		onDemand:         boolOr(props.OnDemand, false),
		batchSize:        whole("BatchSize", props.BatchSize, DefaultStreamBatchSize, &p),
		window:           whole("MaximumBatchingWindowInSeconds", props.MaximumBatchingWindowInSeconds, 0, &p),
		bisect:           boolOr(props.BisectBatchOnFunctionError, true),
		retries:          whole("MaximumRetryAttempts", props.MaximumRetryAttempts, DefaultMaximumRetryAttempts, &p),
		maxAge:           whole("MaximumRecordAgeInSeconds", props.MaximumRecordAgeInSeconds, DefaultMaximumRecordAge, &p),
		report:           boolOr(props.ReportBatchItemFailures, true),
		maxAttempts:      whole("MaxAttempts", props.MaxAttempts, DefaultMaxAttempts, &p),
		startingPosition: DefaultStartingPosition,
	}
	if props.StartingPosition != nil {
		s.startingPosition = *props.StartingPosition
	}
	if s.onDemand {
		for name, set := range map[string]bool{
			"BisectBatchOnFunctionError": props.BisectBatchOnFunctionError != nil,
			"MaximumRetryAttempts":       props.MaximumRetryAttempts != nil,
			"MaximumRecordAgeInSeconds":  props.MaximumRecordAgeInSeconds != nil,
			"ReportBatchItemFailures":    props.ReportBatchItemFailures != nil,
			"MinimumPollers":             props.MinimumPollers != nil,
			"MaximumPollers":             props.MaximumPollers != nil,
		} {
			if set {
				p = append(p, name+" needs provisioned mode: leave OnDemand unset or false")
			}
		}
		s.report, s.bisect = false, false
	}
	return s, append(p, s.validate()...)
}

// NewKafkaConsumer makes the function, its event source mapping (in
// provisioned mode unless OnDemand), its on-failure queue, dead-letter
// queue and attempts table, the grants and the alarms.
func NewKafkaConsumer(scope constructs.Construct, id *string, props *KafkaConsumerProps) *KafkaConsumer {
	c := &KafkaConsumer{}
	c.Construct = constructs.NewConstruct(scope, id)
	path := *c.Node().Path()
	if props == nil {
		invalid(path, []string{"props are required: set ClusterArn or BootstrapServers, Topic and Function.BootstrapDir"})
	}
	var problems []string
	msk := props.ClusterArn != nil
	if msk == (props.BootstrapServers != nil) {
		problems = append(problems, "set exactly one of ClusterArn (Amazon MSK) and BootstrapServers (self-managed Kafka)")
	}
	if props.Topic == nil || *props.Topic == "" {
		problems = append(problems, "Topic is required")
	}
	problems = append(problems, functionProblems(&props.Function)...)
	s, sp := kafkaSettings(props, functionTimeout(&props.Function))
	invalid(path, append(problems, sp...))

	c.AttemptsTable = props.AttemptsTable
	if c.AttemptsTable == nil {
		c.AttemptsTable = NewAttemptsTable(c.Construct, jsii.String("Attempts"), nil)
	}
	a := c.build(commonProps{fn: &props.Function, deadLetters: props.DeadLetters, idempotency: props.IdempotencyTable,
		attempts: c.AttemptsTable, maxAttempts: s.maxAttempts, report: s.report, alarms: props.Alarms})
	if !s.onDemand {
		c.OnFailure = c.onFailureQueue(props.OnFailure, a)
	}
	a.iteratorAge(c.Function)

	group := props.ConsumerGroupId
	if group == nil {
		group = awscdk.Names_UniqueId(c.Construct)
	}
	mp := &awslambda.CfnEventSourceMappingProps{
		Topics:           &[]*string{props.Topic},
		StartingPosition: jsii.String(s.startingPosition),
		BatchSize:        jsii.Number(s.batchSize),
	}
	if props.MaximumBatchingWindowInSeconds != nil {
		mp.MaximumBatchingWindowInSeconds = jsii.Number(s.window)
	}
	var access []interface{}
	if props.SourceAccessConfigurations != nil {
		for _, sa := range *props.SourceAccessConfigurations {
			access = append(access, sa)
		}
	}
	if props.Secret != nil {
		t := props.SecretType
		if t == nil {
			t = jsii.String("SASL_SCRAM_512_AUTH")
		}
		access = append(access, &awslambda.CfnEventSourceMapping_SourceAccessConfigurationProperty{Type: t, Uri: props.Secret.SecretArn()})
		props.Secret.GrantRead(c.Role, nil)
	}
	if len(access) > 0 {
		mp.SourceAccessConfigurations = &access
	}
	if msk {
		mp.EventSourceArn = props.ClusterArn
		mp.AmazonManagedKafkaEventSourceConfig = &awslambda.CfnEventSourceMapping_AmazonManagedKafkaEventSourceConfigProperty{ConsumerGroupId: group}
		c.grantMSK(*props.ClusterArn, *props.Topic, *group, props.Secret == nil)
	} else {
		mp.SelfManagedEventSource = &awslambda.CfnEventSourceMapping_SelfManagedEventSourceProperty{
			Endpoints: &awslambda.CfnEventSourceMapping_EndpointsProperty{KafkaBootstrapServers: props.BootstrapServers},
		}
		mp.SelfManagedKafkaEventSourceConfig = &awslambda.CfnEventSourceMapping_SelfManagedKafkaEventSourceConfigProperty{ConsumerGroupId: group}
		if props.SourceAccessConfigurations != nil {
			for _, sa := range *props.SourceAccessConfigurations {
				if sa.Type != nil && (*sa.Type == "VPC_SUBNET" || *sa.Type == "VPC_SECURITY_GROUP") {
					c.grantVPC()
					break
				}
			}
		}
	}
	if !s.onDemand {
		mp.ProvisionedPollerConfig = &awslambda.CfnEventSourceMapping_ProvisionedPollerConfigProperty{
			MinimumPollers: orNumber(props.MinimumPollers, 1),
			MaximumPollers: props.MaximumPollers,
		}
		mp.BisectBatchOnFunctionError = jsii.Bool(s.bisect)
		mp.MaximumRetryAttempts = jsii.Number(s.retries)
		mp.MaximumRecordAgeInSeconds = jsii.Number(s.maxAge)
		mp.FunctionResponseTypes = responseTypes(s.report)
		mp.DestinationConfig = &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: c.OnFailure.QueueArn()},
		}
	}
	c.mapping(mp)
	return c
}

// grantMSK lets the role read the cluster's topic as Lambda's MSK poller
// does; with IAM authentication, the topic and the consumer group by name.
func (c *KafkaConsumer) grantMSK(clusterArn, topic, group string, iamAuth bool) {
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("kafka:DescribeClusterV2", "kafka:GetBootstrapBrokers"),
		Resources: jsii.Strings(clusterArn),
	}))
	if iamAuth {
		// arn:PARTITION:kafka:REGION:ACCOUNT:cluster/NAME/UUID -> topic/NAME/UUID/TOPIC, group/NAME/UUID/GROUP
		parts := awscdk.Fn_Split(jsii.String(":"), jsii.String(clusterArn), jsii.Number(6))
		path := awscdk.Fn_Split(jsii.String("/"), awscdk.Fn_Select(jsii.Number(5), parts), jsii.Number(3))
		arn := func(kind, name string) string {
			return *awscdk.Fn_Join(jsii.String(""), &[]*string{
				jsii.String("arn:"), awscdk.Fn_Select(jsii.Number(1), parts), jsii.String(":kafka:"),
				awscdk.Fn_Select(jsii.Number(3), parts), jsii.String(":"), awscdk.Fn_Select(jsii.Number(4), parts),
				jsii.String(":" + kind + "/"), awscdk.Fn_Select(jsii.Number(1), path), jsii.String("/"),
				awscdk.Fn_Select(jsii.Number(2), path), jsii.String("/" + name),
			})
		}
		c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kafka-cluster:Connect", "kafka-cluster:DescribeClusterDynamicConfiguration"),
			Resources: jsii.Strings(clusterArn),
		}))
		c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"),
			Resources: jsii.Strings(arn("topic", topic)),
		}))
		c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"),
			Resources: jsii.Strings(arn("group", group)),
		}))
	}
	c.grantVPC()
}

// grantVPC lets Lambda's poller reach a cluster inside a VPC through
// network interfaces it makes in the cluster's subnets.
func (c *KafkaConsumer) grantVPC() {
	c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
			"ec2:DeleteNetworkInterface", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"),
		Resources: jsii.Strings("*"),
	}))
	suppress(c.Role, "AwsSolutions-IAM5",
		"Lambda's Kafka poller creates and describes network interfaces in the cluster's VPC; these EC2 actions take no resource-level scope that is known before the interfaces exist.",
		"Resource::*")
}

func orNumber(v *float64, def float64) *float64 {
	if v == nil {
		return jsii.Number(def)
	}
	return v
}
