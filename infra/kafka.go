package infra

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// KafkaRecordFormat is how a mapping that validates records against a
// schema registry delivers them (SchemaRegistryConfig.EventRecordFormat).
type KafkaRecordFormat string

// The record formats.
const (
	// KafkaRecordFormatJSON delivers each validated key or value as a JSON
	// document.
	KafkaRecordFormatJSON KafkaRecordFormat = "JSON"
	// KafkaRecordFormatSource delivers it in its own encoding (Avro,
	// Protobuf, JSON Schema) without the wire header.
	KafkaRecordFormatSource KafkaRecordFormat = "SOURCE"
)

// KafkaSchemaAttribute is a part of a record the mapping validates.
type KafkaSchemaAttribute string

// The parts.
const (
	KafkaSchemaKey   KafkaSchemaAttribute = "KEY"
	KafkaSchemaValue KafkaSchemaAttribute = "VALUE"
)

// KafkaSchemaRegistry is the schema registry a provisioned Kafka mapping
// validates records against (SchemaRegistryConfig). The function learns
// the format as SLUICE_KAFKA_EVENT_RECORD_FORMAT, which fromenv turns into
// handlers.WithKafkaEventRecordFormat.
type KafkaSchemaRegistry struct {
	// Uri of a Confluent-compatible registry (https://...), or the ARN of
	// an AWS Glue registry. Required.
	Uri *string
	// EventRecordFormat: required.
	EventRecordFormat KafkaRecordFormat
	// Validate names the parts validated: default the value only.
	Validate []KafkaSchemaAttribute
	// Secret holds a Confluent registry's credentials; AuthType is how
	// (BASIC_AUTH by default, CLIENT_CERTIFICATE_TLS_AUTH,
	// SERVER_ROOT_CA_CERTIFICATE). A Glue registry takes none: the role is
	// granted glue:GetRegistry and glue:GetSchemaVersion.
	Secret   awssecretsmanager.ISecret
	AuthType *string
}

// KafkaConsumptionMode is how a self-managed Kafka mapping reads its topic.
type KafkaConsumptionMode string

// The consumption modes.
const (
	// KafkaConsumptionStream reads through a consumer group, in order per
	// partition (Lambda's default).
	KafkaConsumptionStream KafkaConsumptionMode = "Stream"
	// KafkaConsumptionQueue reads through a share group (Kafka 4.2 or
	// later): several pollers read one partition at once, and order is
	// not kept. No StartingPosition or MaxBatchingWindow.
	KafkaConsumptionQueue KafkaConsumptionMode = "Queue"
)

// MappingLogLevel is the level of the system logs a Kafka mapping's
// pollers write (LoggingConfig.SystemLogLevel).
type MappingLogLevel string

// The levels, DEBUG the most detailed.
const (
	MappingLogDebug MappingLogLevel = "DEBUG"
	MappingLogInfo  MappingLogLevel = "INFO"
	MappingLogWarn  MappingLogLevel = "WARN"
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
	// PollerGroupName lets mappings in the same VPC share their pollers'
	// capacity (provisioned mode): default none.
	PollerGroupName *string
	// ConsumptionMode of a self-managed cluster: Lambda's Stream unless
	// set. Queue (share groups) keeps no order per partition.
	ConsumptionMode KafkaConsumptionMode
	// SchemaRegistry validates records before delivery (provisioned mode):
	// default none.
	SchemaRegistry *KafkaSchemaRegistry
	// SystemLogLevel of the mapping's pollers (LoggingConfig): default
	// none (Lambda writes no poller logs).
	SystemLogLevel MappingLogLevel
	// MappingMetrics turns on the mapping's EventCount metrics
	// (MetricsConfig, provisioned mode) and the alarms on them: default
	// true in provisioned mode.
	MappingMetrics *bool

	StartingPosition awslambda.StartingPosition // TRIM_HORIZON
	// StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP:
	// Unix seconds.
	StartingPositionTimestamp  *float64
	BatchSize                  *float64        // 100
	MaxBatchingWindow          awscdk.Duration // Lambda's 0.5 s when unset
	BisectBatchOnFunctionError *bool           // true (provisioned)
	MaximumRetryAttempts       *float64        // 5 (provisioned)
	MaxRecordAge               awscdk.Duration // 6 h (provisioned)
	NoRecordAgeLimit           *bool           // (provisioned)
	ReportBatchItemFailures    *bool           // true (provisioned)

	MaxAttempts *float64 // 3; at most MaximumRetryAttempts+1
	DeadLetters *DeadLetterQueue
	// OnFailure, OnFailureBucket, OnFailureToS3 and OnFailureRetention
	// name the on-failure destination (provisioned mode), as on a
	// StreamConsumer: default a queue of its own.
	OnFailure          awssqs.IQueue
	OnFailureBucket    awss3.IBucket
	OnFailureToS3      *bool
	OnFailureRetention awscdk.Duration
	IdempotencyTable   *IdempotencyTable
	// IdempotencyKey names the business key the function registered with
	// fromenv.IdempotencyKey (SLUICE_IDEMPOTENCY_KEY): default
	// "<topic>-<partition>-<offset>". Needs IdempotencyTable.
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
	AttemptsTable        *AttemptsTable
	Alarms               *AlarmOptions
	// Dashboard false leaves out the consumer's CloudWatch dashboard and its
	// lines on the stack's: default true.
	Dashboard *bool
	// ShadowReplay adds a replay of the topic through Lambda into a shadow
	// copy of the function, with a consumer group of its own: default none.
	ShadowReplay *ShadowReplay
}

// KafkaConsumer deploys a function consuming a Kafka topic.
type KafkaConsumer struct {
	Consumer
	// OnFailure is the mapping's on-failure queue, or nil (on-demand mode,
	// or OnFailureBucket).
	OnFailure       awssqs.IQueue
	OnFailureBucket awss3.IBucket
	AttemptsTable   *AttemptsTable
	// Shadow is what ShadowReplay deployed, or nil.
	Shadow *ShadowConsumer
}

func kafkaSettings(props *KafkaConsumerProps, timeout int) (mappingSettings, []string) {
	var p []string
	s := mappingSettings{
		source:           sourceKafka,
		timeout:          timeout,
		onDemand:         boolOr(props.OnDemand, false),
		batchSize:        whole("BatchSize", props.BatchSize, DefaultStreamBatchSize, &p),
		window:           seconds("MaxBatchingWindow", props.MaxBatchingWindow, 0, &p),
		bisect:           boolOr(props.BisectBatchOnFunctionError, true),
		retries:          whole("MaximumRetryAttempts", props.MaximumRetryAttempts, DefaultMaximumRetryAttempts, &p),
		maxAge:           recordAge(props.MaxRecordAge, props.NoRecordAgeLimit, &p),
		report:           boolOr(props.ReportBatchItemFailures, true),
		maxAttempts:      whole("MaxAttempts", props.MaxAttempts, DefaultMaxAttempts, &p),
		startingPosition: startingPosition(props.StartingPosition),
		timestamp:        props.StartingPositionTimestamp != nil,
		minPollers:       whole("MinimumPollers", props.MinimumPollers, 0, &p),
		maxPollers:       whole("MaximumPollers", props.MaximumPollers, 0, &p),
		queueMode:        props.ConsumptionMode == KafkaConsumptionQueue,
	}
	switch props.ConsumptionMode {
	case "", KafkaConsumptionStream, KafkaConsumptionQueue:
	default:
		p = append(p, fmt.Sprintf("ConsumptionMode %q: use KafkaConsumptionStream or KafkaConsumptionQueue", props.ConsumptionMode))
	}
	if props.ConsumptionMode != "" && props.ClusterArn != nil {
		p = append(p, "ConsumptionMode applies to self-managed Kafka only (BootstrapServers); Amazon MSK reads through a consumer group")
	}
	if s.queueMode {
		if props.StartingPosition != "" || props.MaxBatchingWindow != nil {
			p = append(p, "StartingPosition and MaxBatchingWindow do not apply in ConsumptionMode Queue (Lambda rejects them): leave them unset")
		}
	}
	switch props.SystemLogLevel {
	case "", MappingLogDebug, MappingLogInfo, MappingLogWarn:
	default:
		p = append(p, fmt.Sprintf("SystemLogLevel %q: use MappingLogDebug, MappingLogInfo or MappingLogWarn", props.SystemLogLevel))
	}
	if r := props.SchemaRegistry; r != nil {
		if r.Uri == nil || *r.Uri == "" {
			p = append(p, "SchemaRegistry.Uri is required: a Confluent registry's URL or an AWS Glue registry's ARN")
		}
		if r.EventRecordFormat != KafkaRecordFormatJSON && r.EventRecordFormat != KafkaRecordFormatSource {
			p = append(p, fmt.Sprintf("SchemaRegistry.EventRecordFormat %q: use KafkaRecordFormatJSON or KafkaRecordFormatSource", r.EventRecordFormat))
		}
		for _, a := range r.Validate {
			if a != KafkaSchemaKey && a != KafkaSchemaValue {
				p = append(p, fmt.Sprintf("SchemaRegistry.Validate %q: use KafkaSchemaKey or KafkaSchemaValue", a))
			}
		}
	}
	if s.onDemand {
		for name, set := range map[string]bool{
			"BisectBatchOnFunctionError": props.BisectBatchOnFunctionError != nil,
			"MaximumRetryAttempts":       props.MaximumRetryAttempts != nil,
			"MaxRecordAge":               props.MaxRecordAge != nil || props.NoRecordAgeLimit != nil,
			"ReportBatchItemFailures":    props.ReportBatchItemFailures != nil,
			"MinimumPollers":             props.MinimumPollers != nil,
			"MaximumPollers":             props.MaximumPollers != nil,
			"PollerGroupName":            props.PollerGroupName != nil,
			"SchemaRegistry":             props.SchemaRegistry != nil,
			"MappingMetrics":             props.MappingMetrics != nil && *props.MappingMetrics,
			"OnFailure":                  props.OnFailure != nil,
			"OnFailureBucket":            props.OnFailureBucket != nil,
			"OnFailureToS3":              props.OnFailureToS3 != nil && *props.OnFailureToS3,
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
	problems = append(problems, keyProblems(props.IdempotencyKey, props.IdempotencyTable)...)
	problems = append(problems, shadowProblems(props.ShadowReplay, sourceKafka, props.ConsumptionMode == KafkaConsumptionQueue)...)
	problems = append(problems, prefixProblems(props.IdempotencyKeyPrefix, props.IdempotencyTable)...)
	of := onFailureProblems(props.OnFailure, props.OnFailureBucket, props.OnFailureToS3, props.OnFailureRetention, &problems)
	s, sp := kafkaSettings(props, functionTimeout(&props.Function))
	invalid(path, append(problems, sp...))
	c.source = sourceKafka

	c.AttemptsTable = props.AttemptsTable
	if c.AttemptsTable == nil {
		c.AttemptsTable = NewAttemptsTable(c.Construct, jsii.String("Attempts"), nil)
	}
	var format string
	if props.SchemaRegistry != nil {
		format = string(props.SchemaRegistry.EventRecordFormat)
	}
	a := c.build(commonProps{fn: &props.Function, deadLetters: props.DeadLetters, idempotency: props.IdempotencyTable,
		attempts: c.AttemptsTable, maxAttempts: s.maxAttempts, report: s.report, alarms: props.Alarms, key: props.IdempotencyKey, prefix: props.IdempotencyKeyPrefix,
		kafkaFormat: format})
	var dest onFailureDestination
	if !s.onDemand {
		dest = c.onFailure(of, a)
		c.OnFailure, c.OnFailureBucket = dest.queue, dest.bucket
	}
	a.offsetLag()

	group := props.ConsumerGroupId
	if group == nil {
		group = awscdk.Names_UniqueId(c.Construct)
	}
	mp := &awslambda.CfnEventSourceMappingProps{
		Topics:    &[]*string{props.Topic},
		BatchSize: jsii.Number(s.batchSize),
	}
	if !s.queueMode {
		mp.StartingPosition = jsii.String(s.startingPosition)
		mp.StartingPositionTimestamp = props.StartingPositionTimestamp
	}
	if props.MaxBatchingWindow != nil {
		mp.MaximumBatchingWindowInSeconds = jsii.Number(s.window)
	}
	if props.SystemLogLevel != "" {
		mp.LoggingConfig = &awslambda.CfnEventSourceMapping_LoggingConfigProperty{SystemLogLevel: jsii.String(string(props.SystemLogLevel))}
	}
	var registry interface{} // untyped nil unless set: jsii would send a typed nil
	if props.SchemaRegistry != nil {
		registry = schemaRegistryConfig(props.SchemaRegistry)
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
	}
	if len(access) > 0 {
		mp.SourceAccessConfigurations = &access
	}
	vpc := msk
	if props.SourceAccessConfigurations != nil {
		for _, sa := range *props.SourceAccessConfigurations {
			if sa.Type != nil && (*sa.Type == "VPC_SUBNET" || *sa.Type == "VPC_SECURITY_GROUP") {
				vpc = true
			}
		}
	}
	// grant lets a role read the topic as consumer group g, as Lambda's
	// poller does.
	grant := func(role awsiam.Role, g string) {
		if props.Secret != nil {
			props.Secret.GrantRead(role, nil)
		}
		if props.SchemaRegistry != nil {
			grantSchemaRegistry(role, props.SchemaRegistry)
		}
		if msk {
			grantMSK(role, *props.ClusterArn, *props.Topic, g, props.Secret == nil)
		}
		if vpc {
			grantVPC(role)
		}
	}
	groupConfig := func(g *string) {
		if msk {
			mp.EventSourceArn = props.ClusterArn
			mp.AmazonManagedKafkaEventSourceConfig = &awslambda.CfnEventSourceMapping_AmazonManagedKafkaEventSourceConfigProperty{
				ConsumerGroupId: g, SchemaRegistryConfig: registry}
			return
		}
		mp.SelfManagedEventSource = &awslambda.CfnEventSourceMapping_SelfManagedEventSourceProperty{
			Endpoints: &awslambda.CfnEventSourceMapping_EndpointsProperty{KafkaBootstrapServers: props.BootstrapServers},
		}
		cfg := &awslambda.CfnEventSourceMapping_SelfManagedKafkaEventSourceConfigProperty{ConsumerGroupId: g, SchemaRegistryConfig: registry}
		if props.ConsumptionMode != "" {
			cfg.ConsumptionMode = jsii.String(string(props.ConsumptionMode))
		}
		mp.SelfManagedKafkaEventSourceConfig = cfg
	}
	groupConfig(group)
	grant(c.Role, *group)
	if !s.onDemand {
		mp.ProvisionedPollerConfig = &awslambda.CfnEventSourceMapping_ProvisionedPollerConfigProperty{
			MinimumPollers:  orNumber(props.MinimumPollers, 1),
			MaximumPollers:  props.MaximumPollers,
			PollerGroupName: props.PollerGroupName,
		}
		mp.BisectBatchOnFunctionError = jsii.Bool(s.bisect)
		mp.MaximumRetryAttempts = jsii.Number(s.retries)
		mp.MaximumRecordAgeInSeconds = jsii.Number(s.maxAge)
		mp.FunctionResponseTypes = responseTypes(s.report)
		mp.DestinationConfig = &awslambda.CfnEventSourceMapping_DestinationConfigProperty{
			OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: dest.arn()},
		}
	}
	metrics := !s.onDemand && boolOr(props.MappingMetrics, true)
	mp.MetricsConfig = metricsConfig(metrics, sourceKafka)
	prod := *mp
	c.mapping(&prod)
	if metrics {
		a.mappingMetrics(c.Mapping)
	}
	if r := props.ShadowReplay; r != nil {
		g := r.ConsumerGroupId
		if g == nil {
			g = jsii.String(*group + "-shadow")
		}
		groupConfig(g)
		c.Shadow = c.shadow(r, *mp, c.AttemptsTable, func(role awsiam.Role) { grant(role, *g) })
	}
	c.dashboard(props.Dashboard, board{mappingMetrics: metrics, onFailure: dest, shadow: c.Shadow})
	return c
}

// schemaRegistryConfig is the mapping's SchemaRegistryConfig.
func schemaRegistryConfig(r *KafkaSchemaRegistry) *awslambda.CfnEventSourceMapping_SchemaRegistryConfigProperty {
	cfg := &awslambda.CfnEventSourceMapping_SchemaRegistryConfigProperty{
		SchemaRegistryUri: r.Uri, EventRecordFormat: jsii.String(string(r.EventRecordFormat)),
	}
	validate := r.Validate
	if len(validate) == 0 {
		validate = []KafkaSchemaAttribute{KafkaSchemaValue}
	}
	var vs []interface{}
	for _, a := range validate {
		vs = append(vs, &awslambda.CfnEventSourceMapping_SchemaValidationConfigProperty{Attribute: jsii.String(string(a))})
	}
	cfg.SchemaValidationConfigs = &vs
	if r.Secret != nil {
		t := r.AuthType
		if t == nil {
			t = jsii.String("BASIC_AUTH")
		}
		cfg.AccessConfigs = &[]interface{}{&awslambda.CfnEventSourceMapping_SchemaRegistryAccessConfigProperty{Type: t, Uri: r.Secret.SecretArn()}}
	}
	return cfg
}

// grantSchemaRegistry lets a role read the registry as Lambda does: the
// secret of a Confluent registry, the registry and its schemas for Glue.
func grantSchemaRegistry(role awsiam.Role, r *KafkaSchemaRegistry) {
	if r.Secret != nil {
		r.Secret.GrantRead(role, nil)
	}
	if uri := *r.Uri; strings.HasPrefix(uri, "arn:") && strings.Contains(uri, ":registry/") {
		// arn:PARTITION:glue:REGION:ACCOUNT:registry/NAME -> schema/NAME/*
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("glue:GetRegistry", "glue:GetSchemaVersion"),
			Resources: jsii.Strings(uri, strings.Replace(uri, ":registry/", ":schema/", 1)+"/*"),
		}))
		suppress(role, "AwsSolutions-IAM5",
			"Lambda reads the writer's schema of each record from the Glue registry: its schemas are named by the producers, so the grant covers the registry's schemas (schema/NAME/*) and no other registry's.",
			"Resource::"+strings.Replace(uri, ":registry/", ":schema/", 1)+"/*")
	}
}

// grantMSK lets the role read the cluster's topic as Lambda's MSK poller
// does; with IAM authentication, the topic and the consumer group by name.
func grantMSK(role awsiam.Role, clusterArn, topic, group string, iamAuth bool) {
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
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
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kafka-cluster:Connect", "kafka-cluster:DescribeClusterDynamicConfiguration"),
			Resources: jsii.Strings(clusterArn),
		}))
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"),
			Resources: jsii.Strings(arn("topic", topic)),
		}))
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"),
			Resources: jsii.Strings(arn("group", group)),
		}))
	}
}

// grantVPC lets Lambda's poller reach a cluster inside a VPC through
// network interfaces it makes in the cluster's subnets.
func grantVPC(role awsiam.Role) {
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs",
			"ec2:DeleteNetworkInterface", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"),
		Resources: jsii.Strings("*"),
	}))
	suppress(role, "AwsSolutions-IAM5",
		"Lambda's Kafka poller creates and describes network interfaces in the cluster's VPC; these EC2 actions take no resource-level scope that is known before the interfaces exist.",
		"Resource::*")
}

func orNumber(v *float64, def float64) *float64 {
	if v == nil {
		return jsii.Number(def)
	}
	return v
}
