package infra

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// FunctionOptions describe the function a consumer deploys.
type FunctionOptions struct {
	// BootstrapDir is a directory holding the compiled handler, a file
	// named bootstrap (GOOS=linux, GOARCH=arm64 unless Architecture says
	// otherwise; -tags lambda.norpc). Required.
	BootstrapDir *string
	// Architecture: default ARM_64.
	Architecture awslambda.Architecture
	// Timeout: default 30 s. An SQS source queue's visibility timeout
	// follows it.
	Timeout awscdk.Duration
	// MemorySize in MB: default 256.
	MemorySize *float64
	// FunctionName: default a name CloudFormation makes up.
	FunctionName *string
	Description  *string
	// Environment is added to the variables the construct sets; it may not
	// set those (SLUICE_*: they follow the construct's props).
	Environment *map[string]*string
	// LogRetention of the function's own log group: default one month.
	LogRetention awslogs.RetentionDays
	// ReservedConcurrentExecutions: default none.
	ReservedConcurrentExecutions *float64
	// MetricsNamespace turns the handler's CloudWatch embedded metrics on
	// (SLUICE_METRICS_NAMESPACE); default off, since custom metrics cost
	// money.
	MetricsNamespace *string
}

// AlarmOptions tune the alarms every consumer creates.
type AlarmOptions struct {
	// Action is added to every alarm (an SNS topic, for instance); default
	// none: the alarms are visible in CloudWatch only.
	Action awscloudwatch.IAlarmAction
	// IteratorAge of a stream or Kafka mapping that raises the alarm:
	// default 5 minutes.
	IteratorAge awscdk.Duration
	// DeadLetterAge is the age of the oldest message in a dead-letter,
	// on-failure or redrive queue that raises the alarm: default 1 hour.
	DeadLetterAge awscdk.Duration
	// BacklogAge is the age of the oldest message of a consumed SQS queue
	// that raises the alarm: default 15 minutes.
	BacklogAge awscdk.Duration
	// OffsetLag of a Kafka mapping (records behind the topic) that raises
	// the alarm: default 10,000.
	OffsetLag *float64
	// DroppedEvents and OnFailureEvents: the records in 5 minutes that
	// Lambda dropped (past MaximumRetryAttempts or MaxRecordAge, or not
	// delivered to the on-failure destination) or sent to the on-failure
	// destination that raise the alarms on the mapping's own metrics
	// (streams and Kafka in provisioned mode, with MappingMetrics on):
	// default 1 each.
	DroppedEvents   *float64
	OnFailureEvents *float64
}

// function is what newFunction makes.
type function struct {
	fn       awslambda.Function
	role     awsiam.Role
	logGroup awslogs.LogGroup
	timeout  int // seconds
}

// functionTimeout reads o.Timeout in whole seconds.
func functionTimeout(o *FunctionOptions) int {
	if o.Timeout == nil {
		return DefaultFunctionTimeoutSeconds
	}
	return int(*o.Timeout.ToSeconds(nil))
}

// functionProblems checks what newFunction needs before anything is built.
func functionProblems(o *FunctionOptions) []string {
	var p []string
	if o.BootstrapDir == nil || *o.BootstrapDir == "" {
		return append(p, "Function.BootstrapDir is required: a directory holding the compiled handler named bootstrap")
	}
	st, err := os.Stat(filepath.Join(*o.BootstrapDir, "bootstrap"))
	switch {
	case err != nil:
		p = append(p, fmt.Sprintf("Function.BootstrapDir %s holds no file named bootstrap (%v): build the handler there, "+
			"e.g. GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o %s/bootstrap ./cmd/yourfunction",
			*o.BootstrapDir, err, *o.BootstrapDir))
	case !st.Mode().IsRegular():
		p = append(p, fmt.Sprintf("Function.BootstrapDir %s: bootstrap is not a regular file", *o.BootstrapDir))
	default:
		arch := "arm64"
		if o.Architecture != nil {
			arch = *o.Architecture.Name()
		}
		if msg := bootstrapProblem(*o.BootstrapDir, arch); msg != "" {
			p = append(p, msg)
		}
	}
	if o.Environment != nil {
		for _, k := range append(reservedEnv(), EnvShadow) {
			if _, ok := (*o.Environment)[k]; ok {
				p = append(p, fmt.Sprintf("Function.Environment sets %s, which the construct sets from its props: remove it and set the prop", k))
			}
		}
	}
	return p
}

// bootstrapProblem checks that dir/bootstrap runs on Lambda's arch
// ("arm64" or "x86_64"): a Linux ELF executable for that machine, or a
// script (a "#!" line), which any architecture runs. It returns "" when it
// does, else what is wrong and the command that builds the right one.
func bootstrapProblem(dir, arch string) string {
	path := filepath.Join(dir, "bootstrap")
	goarch := map[string]string{"arm64": "arm64", "x86_64": "amd64"}[arch]
	build := fmt.Sprintf("GOOS=linux GOARCH=%s CGO_ENABLED=0 go build -tags lambda.norpc -o %s ./cmd/yourfunction", goarch, path)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("Function.BootstrapDir: %v", err)
	}
	defer f.Close()
	head := make([]byte, 2)
	if n, _ := f.Read(head); n == 2 && string(head) == "#!" {
		return ""
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return fmt.Sprintf("Function.BootstrapDir: %s is not a Linux executable (%v); Lambda's provided.al2023 runs ELF binaries: build it with %s",
			path, err, build)
	}
	machine := map[elf.Machine]string{elf.EM_AARCH64: "arm64", elf.EM_X86_64: "x86_64"}[ef.Machine]
	switch {
	case ef.Class != elf.ELFCLASS64 || machine == "":
		return fmt.Sprintf("Function.BootstrapDir: %s is a %s %s binary, which Lambda does not run: build it with %s", path, ef.Class, ef.Machine, build)
	case machine != arch:
		return fmt.Sprintf("Function.BootstrapDir: %s is built for %s but the function's Architecture is %s, so Lambda could not start it: "+
			"build it with %s (or set Function.Architecture to %s)", path, machine, arch, build, machine)
	}
	return ""
}

// newFunction makes the function with its own role and log group: the
// role may write to that log group and nothing else until the consumer
// grants what the handler needs.
func newFunction(scope constructs.Construct, o *FunctionOptions, env map[string]string) *function {
	role := awsiam.NewRole(scope, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Sluice consumer " + *scope.Node().Path() + ": its own log group, its source, its queues and tables"),
	})
	retention := o.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	logGroup := awslogs.NewLogGroup(scope, jsii.String("LogGroup"), &awslogs.LogGroupProps{Retention: retention})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logGroup.LogGroupArn()),
	}))
	arch := o.Architecture
	if arch == nil {
		arch = awslambda.Architecture_ARM_64()
	}
	timeout := o.Timeout
	if timeout == nil {
		timeout = awscdk.Duration_Seconds(jsii.Number(DefaultFunctionTimeoutSeconds))
	}
	memory := o.MemorySize
	if memory == nil {
		memory = jsii.Number(DefaultMemorySize)
	}
	vars := map[string]*string{}
	if o.Environment != nil {
		for k, v := range *o.Environment {
			vars[k] = v
		}
	}
	for k, v := range env {
		vars[k] = jsii.String(v)
	}
	if o.MetricsNamespace != nil && *o.MetricsNamespace != "" {
		vars[EnvMetricsNamespace] = o.MetricsNamespace
	}
	fn := awslambda.NewFunction(scope, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 arch,
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(o.BootstrapDir, nil),
		Role:                         role,
		LogGroup:                     logGroup,
		Timeout:                      timeout,
		MemorySize:                   memory,
		FunctionName:                 o.FunctionName,
		Description:                  o.Description,
		Environment:                  &vars,
		ReservedConcurrentExecutions: o.ReservedConcurrentExecutions,
	})
	return &function{fn: fn, role: role, logGroup: logGroup, timeout: functionTimeout(o)}
}

// alarms is the set of alarms a consumer makes, with each alarm's metric
// and threshold, which its dashboard draws.
type alarms struct {
	scope      constructs.Construct
	opts       *AlarmOptions
	all        map[string]awscloudwatch.Alarm
	metrics    map[string]awscloudwatch.IMetric
	thresholds map[string]float64
	order      []string // the alarms in the order they were made
	prefix     string
	fn         awslambda.Function
}

func newAlarms(scope constructs.Construct, o *AlarmOptions) *alarms {
	if o == nil {
		o = &AlarmOptions{}
	}
	return &alarms{scope: scope, opts: o, all: map[string]awscloudwatch.Alarm{}, metrics: map[string]awscloudwatch.IMetric{},
		thresholds: map[string]float64{}, prefix: *scope.Node().Path()}
}

func (a *alarms) add(id string, m awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator, what string) {
	al := awscloudwatch.NewAlarm(a.scope, jsii.String(id+"Alarm"), &awscloudwatch.AlarmProps{
		Metric:             m,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: op,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		AlarmDescription:   jsii.String(a.prefix + ": " + what),
	})
	if a.opts.Action != nil {
		al.AddAlarmAction(a.opts.Action)
	}
	a.all[id] = al
	a.metrics[id], a.thresholds[id] = m, threshold
	a.order = append(a.order, id)
}

// function adds the alarms on function errors and throttles.
func (a *alarms) function(fn awslambda.Function) {
	a.fn = fn
	five := &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}
	a.add("Errors", fn.MetricErrors(five), 1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		"the function failed whole batches (a function error: a crash, a timeout, or no record made progress)")
	a.add("Throttles", fn.MetricThrottles(five), 1, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		"invocations were throttled: the mapping falls behind")
}

// iteratorAge adds the alarm on the age of the newest record read, the
// sign that a shard is blocked or the function too slow.
func (a *alarms) iteratorAge(fn awslambda.Function) {
	age := float64(DefaultIteratorAgeAlarm * 1000)
	if a.opts.IteratorAge != nil {
		age = *a.opts.IteratorAge.ToMilliseconds(nil)
	}
	m := fn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Maximum")})
	a.add("IteratorAge", m, age, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		"records wait longer than "+strconv.Itoa(int(age/1000))+" s: a shard is blocked by a failing record, or the function is too slow")
}

// deadLetterAge adds the alarm on the oldest message of a queue that
// holds records nobody processed.
func (a *alarms) deadLetterAge(id string, q interface {
	MetricApproximateAgeOfOldestMessage(*awscloudwatch.MetricOptions) awscloudwatch.Metric
}, what string) {
	age := float64(DefaultDeadLetterAgeAlarm)
	if a.opts.DeadLetterAge != nil {
		age = *a.opts.DeadLetterAge.ToSeconds(nil)
	}
	m := q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum")})
	a.add(id, m, age, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		what+" has held a message for more than "+strconv.Itoa(int(age))+" s: inspect and redrive it before the queue's retention deletes it")
}

// backlogAge adds the alarm on the oldest message of the queue the
// function consumes: a small backlog of old messages can matter more than
// a burst of new ones, and the message count would not show it.
func (a *alarms) backlogAge(q awssqs.IQueue) {
	age := float64(DefaultBacklogAgeAlarm)
	if a.opts.BacklogAge != nil {
		age = *a.opts.BacklogAge.ToSeconds(nil)
	}
	m := q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Maximum")})
	a.add("BacklogAge", m, age, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		"the source queue's oldest message waits longer than "+strconv.Itoa(int(age))+" s: the function falls behind, or fails and retries it")
}

// offsetLag adds the alarm on how far a Kafka mapping's consumer group is
// behind the topic (Lambda's OffsetLag, the function's metric for Kafka
// sources; IteratorAge is not emitted for them).
func (a *alarms) offsetLag() {
	lag := float64(DefaultOffsetLagAlarm)
	if a.opts.OffsetLag != nil {
		lag = *a.opts.OffsetLag
	}
	m := a.fn.Metric(jsii.String("OffsetLag"), &awscloudwatch.MetricOptions{
		Period: awscdk.Duration_Minutes(jsii.Number(1)), Statistic: jsii.String("Maximum")})
	a.add("OffsetLag", m, lag, awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		"the consumer group is more than "+strconv.FormatFloat(lag, 'f', -1, 64)+" records behind the topic: a partition is blocked by a failing record, or the function is too slow")
}

// mappingMetrics adds the alarms on the mapping's own EventCount metrics
// that mean a record left the mapping unprocessed: dropped (lost unless
// the quarantine kept it) or sent to the on-failure destination.
func (a *alarms) mappingMetrics(m awslambda.CfnEventSourceMapping) {
	metric := func(name string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{"EventSourceMappingUUID": m.Ref()},
			Period:        awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum"),
		})
	}
	dropped, onFailure := float64(DefaultDroppedEventsAlarm), float64(DefaultOnFailureEventsAlarm)
	if a.opts.DroppedEvents != nil {
		dropped = *a.opts.DroppedEvents
	}
	if a.opts.OnFailureEvents != nil {
		onFailure = *a.opts.OnFailureEvents
	}
	a.add("DroppedEvents", metric("DroppedEventCount"), dropped, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		"the mapping dropped records (past MaximumRetryAttempts or MaxRecordAge, and not delivered to the on-failure destination): "+
			"what the quarantine did not keep is lost")
	a.add("OnFailureEvents", metric("OnFailureDestinationDeliveredEventCount"), onFailure, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		"the mapping gave up on records and sent their on-failure records: read them back with sluice fetch-failed and redrive them")
}

// metricsConfig is the mapping's MetricsConfig, every metric group AWS
// offers for the source (API reference, EventSourceMappingMetricsConfig):
// EventCount everywhere, and for Kafka ErrorCount and KafkaMetrics too
// (the constructs set them in provisioned mode only, which Lambda's Kafka
// observability needs). Off, it is an untyped nil, which jsii leaves out
// of the template.
func metricsConfig(on bool, source string) interface{} {
	if !on {
		return nil
	}
	m := mappingMetricGroups(source)
	return &awslambda.CfnEventSourceMapping_MetricsConfigProperty{Metrics: jsii.Strings(m...)}
}

// mappingMetricGroups are the MetricsConfig groups of a source.
func mappingMetricGroups(source string) []string {
	if source == sourceKafka {
		return []string{"EventCount", "ErrorCount", "KafkaMetrics"}
	}
	return []string{"EventCount"}
}
