package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
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
	}
	if o.Environment != nil {
		for _, k := range reservedEnv() {
			if _, ok := (*o.Environment)[k]; ok {
				p = append(p, fmt.Sprintf("Function.Environment sets %s, which the construct sets from its props: remove it and set the prop", k))
			}
		}
	}
	return p
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

// alarms is the set of alarms a consumer makes.
type alarms struct {
	scope  constructs.Construct
	opts   *AlarmOptions
	all    map[string]awscloudwatch.Alarm
	prefix string
}

func newAlarms(scope constructs.Construct, o *AlarmOptions) *alarms {
	if o == nil {
		o = &AlarmOptions{}
	}
	return &alarms{scope: scope, opts: o, all: map[string]awscloudwatch.Alarm{}, prefix: *scope.Node().Path()}
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
}

// function adds the alarms on function errors and throttles.
func (a *alarms) function(fn awslambda.Function) {
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
