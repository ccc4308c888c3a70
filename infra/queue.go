package infra

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// DeadLetterQueueProps configure a DeadLetterQueue.
type DeadLetterQueueProps struct {
	// Fifo makes a FIFO queue (a FIFO source's quarantine keeps its order
	// per message group). Default false.
	Fifo *bool
	// QueueName: default a name CloudFormation makes up (FIFO: it adds
	// the .fifo suffix).
	QueueName *string
	// RetentionPeriod: default 14 days, SQS's longest.
	RetentionPeriod awscdk.Duration
	// Alarms: the oldest-message alarm's threshold and action.
	Alarms *AlarmOptions
}

// DeadLetterQueue is the queue the quarantine middleware sends dead letters
// to (envelopes holding the record, its source and its last error). The
// consumer that uses it gets SLUICE_DLQ_URL and sqs:SendMessage on it;
// `sluice redrive` reads it back.
type DeadLetterQueue struct {
	constructs.Construct
	Queue awssqs.Queue
	// AgeAlarm fires when the oldest dead letter is older than
	// AlarmOptions.DeadLetterAge.
	AgeAlarm awscloudwatch.Alarm
}

// NewDeadLetterQueue makes an encrypted (SQS-managed SSE), TLS-only queue
// keeping messages 14 days, with an alarm on the age of its oldest message.
func NewDeadLetterQueue(scope constructs.Construct, id *string, props *DeadLetterQueueProps) *DeadLetterQueue {
	if props == nil {
		props = &DeadLetterQueueProps{}
	}
	d := &DeadLetterQueue{Construct: constructs.NewConstruct(scope, id)}
	d.Queue = newSafeQueue(d.Construct, "Queue", &awssqs.QueueProps{
		Fifo:            props.Fifo,
		QueueName:       props.QueueName,
		RetentionPeriod: props.RetentionPeriod,
	})
	suppress(d.Queue, "AwsSolutions-SQS3",
		"This queue is the dead-letter queue itself: the quarantine middleware sends to it directly, so no redrive policy names it and it needs no DLQ of its own.")
	a := newAlarms(d.Construct, props.Alarms)
	a.deadLetterAge("OldestMessage", d.Queue, "the dead-letter queue")
	d.AgeAlarm = a.all["OldestMessage"]
	return d
}

// newSafeQueue makes a queue with encryption at rest stated explicitly
// (SQS-managed keys, so it shows in the template), TLS enforced, and
// dead-letter retention unless props say otherwise.
func newSafeQueue(scope constructs.Construct, id string, props *awssqs.QueueProps) awssqs.Queue {
	props.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	props.EnforceSSL = jsii.Bool(true)
	if props.RetentionPeriod == nil {
		props.RetentionPeriod = awscdk.Duration_Days(jsii.Number(DefaultDeadLetterRetention))
	}
	return awssqs.NewQueue(scope, jsii.String(id), props)
}

// suppress records a cdk-nag finding that does not apply, with the reason.
// appliesTo names the findings: literal strings, or a regular expression
// ("/^Resource::.../g") where the finding holds a token CloudFormation
// resolves at deploy.
func suppress(c constructs.IConstruct, rule, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		var at []interface{}
		for _, a := range appliesTo {
			if strings.HasPrefix(a, "/") {
				at = append(at, &cdknag.RegexAppliesTo{Regex: jsii.String(a)})
				continue
			}
			at = append(at, a)
		}
		s.AppliesTo = &at
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}
