package infra

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The metrics a Sluice handler writes in CloudWatch Embedded Metric Format
// (package handlers, Metric*), which the dashboards read in the namespace
// FunctionOptions.MetricsNamespace names, under the handler's default
// dimensions FunctionName and Source. TestContractWithRuntime keeps the
// names equal to the handlers'.
const (
	MetricRecordsFailed      = "RecordsFailed"
	MetricInProcessRetries   = "InProcessRetries"
	MetricRecordsDuplicate   = "RecordsDuplicate"
	MetricRecordsQuarantined = "RecordsQuarantined"
	MetricBatchDuration      = "BatchDuration"
	MetricOldestRecordAge    = "OldestRecordAge"
)

// The mapping's EventCount metrics (MetricsConfig EventCount; AWS/Lambda,
// dimension EventSourceMappingUUID) the dashboards draw.
var eventCountMetrics = []struct{ name, label string }{
	{"PolledEventCount", "polled"},
	{"FilteredOutEventCount", "filtered out"},
	{"FailedInvokeEventCount", "failed invoke"},
	{"DroppedEventCount", "dropped"},
	{"OnFailureDestinationDeliveredEventCount", "on-failure delivered"},
	{"DeletedEventCount", "deleted (SQS)"},
}

// board is what a consumer's dashboard shows beyond what Consumer holds.
type board struct {
	mappingMetrics bool
	onFailure      onFailureDestination
	shadow         *ShadowConsumer
	redrive        awssqs.IQueue // an SQS source's redrive queue
}

var (
	minute = awscdk.Duration_Minutes(jsii.Number(1))
	five   = awscdk.Duration_Minutes(jsii.Number(5))
)

func lambdaMetric(fn awslambda.Function, name, stat, label string, period awscdk.Duration) awscloudwatch.IMetric {
	return fn.Metric(jsii.String(name), &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Period: period, Label: jsii.String(label)})
}

func mappingMetric(m awslambda.CfnEventSourceMapping, name, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{"EventSourceMappingUUID": m.Ref()},
		Statistic:     jsii.String("Sum"), Period: five, Label: jsii.String(label),
	})
}

// sluiceMetric is one of the handler's own metrics, under its default
// dimensions: the function's name and the source.
func sluiceMetric(ns *string, fn awslambda.Function, source, name, stat, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: ns, MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{"FunctionName": fn.FunctionName(), "Source": jsii.String(source)},
		Statistic:     jsii.String(stat), Period: five, Label: jsii.String(label),
	})
}

func graph(title string, w, h float64, left []awscloudwatch.IMetric, annotations ...*awscloudwatch.HorizontalAnnotation) awscloudwatch.GraphWidget {
	p := &awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(w), Height: jsii.Number(h), Left: &left,
		LeftYAxis: &awscloudwatch.YAxisProps{Min: jsii.Number(0)}}
	if len(annotations) > 0 {
		p.LeftAnnotations = &annotations
	}
	return awscloudwatch.NewGraphWidget(p)
}

func threshold(label string, v float64) *awscloudwatch.HorizontalAnnotation {
	return &awscloudwatch.HorizontalAnnotation{Value: jsii.Number(v), Label: jsii.String(label), Color: jsii.String("#d62728")}
}

func text(md string, w, h float64) awscloudwatch.TextWidget {
	return awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Markdown: jsii.String(md), Width: jsii.Number(w), Height: jsii.Number(h)})
}

// backlogKind says how a source's backlog is measured: the metric, its
// unit, and the alarm on it.
func backlogKind(source string) (title, alarm string) {
	switch source {
	case sourceKafka:
		return "Kafka: OffsetLag (records behind the topic)", "OffsetLag"
	case sourceSQS, sourceSQSFIFO:
		return "Queues: age of the oldest message (s)", "BacklogAge"
	}
	return "Streams: IteratorAge (ms, age of the last record read)", "IteratorAge"
}

// shadowBacklog is the shadow function's backlog metric: Lambda's
// IteratorAge or OffsetLag by function name, which a replay's mapping
// feeds apart from production's.
func shadowBacklog(source string, s *ShadowConsumer) awscloudwatch.IMetric {
	name := "IteratorAge"
	if source == sourceKafka {
		name = "OffsetLag"
	}
	return lambdaMetric(s.Function, name, "Maximum", "shadow replay", minute)
}

// label names a consumer on dashboards: its path in the stack.
func label(c constructs.IConstruct) string { return *awscdk.Names_StackRelativeConstructPath(c) }

// dashboard makes the consumer's dashboard and adds its lines to the
// stack's, unless on is false.
func (c *Consumer) dashboard(on *bool, b board) {
	if !boolOr(on, true) {
		return
	}
	a, fn, name := c.alarms, c.Function, label(c.Construct)
	title, backlogAlarm := backlogKind(c.source)
	backlog := []awscloudwatch.IMetric{a.metrics[backlogAlarm]}
	if b.shadow != nil {
		backlog = append(backlog, shadowBacklog(c.source, b.shadow))
	}
	d := awscloudwatch.NewDashboard(c.Construct, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	c.Dashboard = d
	d.AddWidgets(text(fmt.Sprintf("## Sluice consumer %s (%s)\n"+
		"Backlog age, the mapping's events, the function, the handler's own records, and the dead letters; red lines are alarm thresholds. "+
		"What each widget and alarm means and what to do when it fires: the Sluice README, section Deploy.", name, c.source), 24, 2))
	d.AddWidgets(
		graph(title, 12, 6, backlog, threshold("alarm", a.thresholds[backlogAlarm])),
		awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{Title: jsii.String("Alarms"), Alarms: c.alarmRefs(),
			Width: jsii.Number(12), Height: jsii.Number(6)}),
	)

	var events awscloudwatch.IWidget
	if b.mappingMetrics {
		var ms []awscloudwatch.IMetric
		for _, m := range eventCountMetrics {
			sqs := m.name == "DeletedEventCount"
			if sqs != (c.source == sourceSQS || c.source == sourceSQSFIFO) && (sqs || m.name == "DroppedEventCount" || m.name == "OnFailureDestinationDeliveredEventCount") {
				continue // SQS mappings delete; streams and Kafka drop and send on-failure records
			}
			ms = append(ms, mappingMetric(c.Mapping, m.name, m.label))
		}
		if b.shadow != nil {
			ms = append(ms, mappingMetric(b.shadow.Mapping, "PolledEventCount", "shadow replay: polled"))
		}
		var ann []*awscloudwatch.HorizontalAnnotation
		if v, ok := a.thresholds["DroppedEvents"]; ok {
			ann = append(ann, threshold("alarm: dropped", v))
		}
		events = graph("Mapping: events per 5 min", 12, 6, ms, ann...)
	} else {
		events = text("### Mapping events\nThe mapping publishes no EventCount metrics (MappingMetrics false, or Kafka in on-demand mode): "+
			"nothing shows records it dropped or sent to its on-failure destination.", 12, 6)
	}
	errs := []awscloudwatch.IMetric{
		lambdaMetric(fn, "Errors", "Sum", "errors", five), lambdaMetric(fn, "Throttles", "Sum", "throttles", five)}
	if b.shadow != nil {
		errs = append(errs, lambdaMetric(b.shadow.Function, "Errors", "Sum", "shadow replay: errors", five))
	}
	d.AddWidgets(events, graph("Function: errors and throttles per 5 min", 12, 6, errs, threshold("alarm", a.thresholds["Errors"])))

	timeout := float64(functionTimeout(c.fnOpts) * 1000)
	d.AddWidgets(
		graph("Function: duration (ms)", 8, 6, []awscloudwatch.IMetric{
			lambdaMetric(fn, "Duration", "p50", "p50", five), lambdaMetric(fn, "Duration", "p99", "p99", five),
			lambdaMetric(fn, "Duration", "Maximum", "max", five)}, threshold("timeout", timeout)),
		graph("Function: concurrency", 8, 6, []awscloudwatch.IMetric{lambdaMetric(fn, "ConcurrentExecutions", "Maximum", "concurrent executions", minute)}),
		graph("Function: invocations per 5 min", 8, 6, []awscloudwatch.IMetric{lambdaMetric(fn, "Invocations", "Sum", "invocations", five)}),
	)

	if ns := c.fnOpts.MetricsNamespace; ns != nil && *ns != "" {
		s := func(name, stat, label string) awscloudwatch.IMetric {
			return sluiceMetric(ns, fn, c.source, name, stat, label)
		}
		d.AddWidgets(
			graph("Handler: records per 5 min", 12, 6, []awscloudwatch.IMetric{
				s(MetricRecordsFailed, "Sum", "failed"), s(MetricInProcessRetries, "Sum", "retried in process"),
				s(MetricRecordsDuplicate, "Sum", "duplicates skipped"), s(MetricRecordsQuarantined, "Sum", "quarantined")}),
			graph("Handler: batch duration and oldest record age (ms)", 12, 6, []awscloudwatch.IMetric{
				s(MetricBatchDuration, "p99", "batch duration p99"), s(MetricBatchDuration, "Maximum", "batch duration max"),
				s(MetricOldestRecordAge, "Maximum", "oldest record age")}),
		)
	} else {
		d.AddWidgets(text("### Handler metrics\nOff: set FunctionOptions.MetricsNamespace (SLUICE_METRICS_NAMESPACE) for the handler's "+
			"records failed, retried, duplicate and quarantined, batch duration and oldest record age.", 24, 2))
	}

	queues := c.deadLetterQueues(b)
	var depth, age []awscloudwatch.IMetric
	for _, q := range queues {
		depth = append(depth, q.q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: five, Label: jsii.String(q.label)}))
		age = append(age, q.q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: five, Label: jsii.String(q.label)}))
	}
	deadAge := float64(DefaultDeadLetterAgeAlarm)
	if a.opts.DeadLetterAge != nil {
		deadAge = *a.opts.DeadLetterAge.ToSeconds(nil)
	}
	row := []awscloudwatch.IWidget{
		graph("Dead letters: messages waiting", 12, 6, depth),
		graph("Dead letters: age of the oldest (s)", 12, 6, age, threshold("alarm", deadAge)),
	}
	if b.onFailure.bucket != nil {
		row = append(row, text("### On-failure bucket\nLambda writes each batch it gives up on to "+
			"the on-failure bucket (aws/lambda/...): the mapping's \"on-failure delivered\" line counts them. "+
			"Read them back with `sluice fetch-failed --from-bucket`.", 24, 3))
	}
	d.AddWidgets(row...)

	StackDashboardOf(c.Construct).add(c, name, backlogAlarm, b, queues)
}

// namedQueue is a queue of records nobody processed, as dashboards label
// it.
type namedQueue struct {
	label string
	q     awssqs.IQueue
}

// deadLetterQueues lists the consumer's queues of unprocessed records.
func (c *Consumer) deadLetterQueues(b board) []namedQueue {
	qs := []namedQueue{{"dead letters (quarantine)", c.DeadLetters.Queue}}
	if b.onFailure.queue != nil {
		qs = append(qs, namedQueue{"on-failure records", b.onFailure.queue})
	}
	if b.redrive != nil {
		qs = append(qs, namedQueue{"redrive queue", b.redrive})
	}
	if s := b.shadow; s != nil {
		qs = append(qs, namedQueue{"shadow replay: dead letters", s.DeadLetters})
		if s.OnFailure != nil {
			qs = append(qs, namedQueue{"shadow replay: on-failure records", s.OnFailure})
		}
	}
	return qs
}

// StackDashboard is the dashboard of all the Sluice consumers of a stack
// (each consumer's Dashboard prop left true): one backlog line per
// consumer (ages in seconds on the left axis, Kafka offset lag in records
// on the right), the sum over consumers of errors, throttles, records
// dropped or sent to on-failure destinations, records failed and
// quarantined, the dead letters' age, and a row of alarms per consumer.
// The consumers make it, once per stack, as the construct
// SluiceDashboard.
type StackDashboard struct {
	constructs.Construct
	Dashboard awscloudwatch.Dashboard

	backlog             awscloudwatch.GraphWidget
	errors, throttles   awscloudwatch.GraphWidget
	lost                awscloudwatch.GraphWidget
	failed, quarantined awscloudwatch.GraphWidget
	deadLetters         awscloudwatch.GraphWidget
	n                   int // expressions made, for their ids
}

// StackDashboardID is the id of the StackDashboard in its stack.
const StackDashboardID = "SluiceDashboard"

// StackDashboardOf returns the stack's StackDashboard, making it on first
// use.
func StackDashboardOf(scope constructs.IConstruct) *StackDashboard {
	stack := awscdk.Stack_Of(scope)
	if c := stack.Node().TryFindChild(jsii.String(StackDashboardID)); c != nil {
		if d, ok := c.(*StackDashboard); ok {
			return d
		}
		panic(fmt.Sprintf("sluice/infra: %s/%s is not a StackDashboard: the id is Sluice's", *stack.Node().Path(), StackDashboardID))
	}
	d := &StackDashboard{}
	// An override, so that TryFindChild hands this struct back to the next
	// consumer of the stack.
	constructs.NewConstruct_Override(d, stack, jsii.String(StackDashboardID))
	d.Dashboard = awscloudwatch.NewDashboard(d, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	// The graphs are made now and filled as consumers come: a widget added
	// to a row after the row is placed would land out of line.
	total := func() awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("SUM(METRICS())"), Label: jsii.String("all consumers"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{}, Period: five})
	}
	g := func(title string, w float64) awscloudwatch.GraphWidget {
		return graph(title, w, 6, []awscloudwatch.IMetric{total()})
	}
	d.backlog = awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String("Backlog: age (s; streams' IteratorAge, queues' oldest message) and Kafka offset lag (records, right)"),
		Width: jsii.Number(12), Height: jsii.Number(6),
		LeftYAxis:  &awscloudwatch.YAxisProps{Min: jsii.Number(0), Label: jsii.String("seconds"), ShowUnits: jsii.Bool(false)},
		RightYAxis: &awscloudwatch.YAxisProps{Min: jsii.Number(0), Label: jsii.String("records"), ShowUnits: jsii.Bool(false)},
	})
	d.errors, d.throttles = g("Function errors per 5 min", 6), g("Function throttles per 5 min", 6)
	d.lost = g("Records dropped or sent on-failure per 5 min", 6)
	d.failed, d.quarantined = g("Handler: records failed per 5 min", 6), g("Handler: records quarantined per 5 min", 6)
	d.deadLetters = graph("Dead letters: age of the oldest (s)", 6, 6, nil)
	d.Dashboard.AddWidgets(text("## Sluice consumers of stack "+*stack.StackName()+"\n"+
		"One line per consumer, and the sum over them; each consumer's alarms below. Each consumer's own dashboard has the detail; "+
		"what each widget and alarm means: the Sluice README, section Deploy.", 24, 2))
	d.Dashboard.AddWidgets(d.backlog, d.errors, d.throttles)
	d.Dashboard.AddWidgets(d.lost, d.failed, d.quarantined, d.deadLetters)
	return d
}

// ToString is the construct's path; defining it makes StackDashboard a
// jsii override (see StackDashboardOf).
func (d *StackDashboard) ToString() *string { return d.Node().Path() }

// add draws consumer c (named name) on the stack's dashboard.
func (d *StackDashboard) add(c *Consumer, name, backlogAlarm string, b board, queues []namedQueue) {
	a := c.alarms
	backlog := func(m awscloudwatch.IMetric, label string) {
		switch c.source {
		case sourceKafka:
			d.backlog.AddRightMetric(relabel(m, label))
		case sourceKinesis, sourceDynamoDB: // IteratorAge is in milliseconds
			d.n++
			id := fmt.Sprintf("age%d", d.n)
			d.backlog.AddLeftMetric(awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String(id + "/1000"), Label: jsii.String(label), UsingMetrics: &map[string]awscloudwatch.IMetric{id: m}}))
		default:
			d.backlog.AddLeftMetric(relabel(m, label))
		}
	}
	backlog(a.metrics[backlogAlarm], name)
	if b.shadow != nil {
		backlog(shadowBacklog(c.source, b.shadow), name+" shadow replay")
	}
	d.errors.AddLeftMetric(relabel(a.metrics["Errors"], name))
	d.throttles.AddLeftMetric(relabel(a.metrics["Throttles"], name))
	if m, ok := a.metrics["DroppedEvents"]; ok {
		d.lost.AddLeftMetric(relabel(m, name+" dropped"))
		d.lost.AddLeftMetric(relabel(a.metrics["OnFailureEvents"], name+" on-failure"))
	}
	if ns := c.fnOpts.MetricsNamespace; ns != nil && *ns != "" {
		d.failed.AddLeftMetric(sluiceMetric(ns, c.Function, c.source, MetricRecordsFailed, "Sum", name))
		d.quarantined.AddLeftMetric(sluiceMetric(ns, c.Function, c.source, MetricRecordsQuarantined, "Sum", name))
	}
	for _, q := range queues {
		d.deadLetters.AddLeftMetric(q.q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Statistic: jsii.String("Maximum"), Period: five, Label: jsii.String(name + " " + q.label)}))
	}
	d.Dashboard.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String(name + ": alarms"), Alarms: c.alarmRefs(), Width: jsii.Number(24), Height: jsii.Number(3)}))
}

// relabel is m under another label.
func relabel(m awscloudwatch.IMetric, label string) awscloudwatch.IMetric {
	if mm, ok := m.(awscloudwatch.Metric); ok {
		return mm.With(&awscloudwatch.MetricOptions{Label: jsii.String(label)})
	}
	return m
}

// alarmRefs are the consumer's alarms in the order they were made, and
// its dead-letter queue's, as an alarm status widget takes them.
func (c *Consumer) alarmRefs() *[]interfacesawscloudwatch.IAlarmRef {
	var out []interfacesawscloudwatch.IAlarmRef
	for _, id := range c.alarms.order {
		out = append(out, c.alarms.all[id])
	}
	if c.DeadLetters.AgeAlarm != nil {
		out = append(out, c.DeadLetters.AgeAlarm)
	}
	return &out
}
