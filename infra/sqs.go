package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// QueueConsumerProps configure a QueueConsumer. The construct makes the
// source queue, so that it can give it the redrive policy and visibility
// timeout the function needs.
type QueueConsumerProps struct {
	// Fifo makes a FIFO source queue (and redrive queue). Default false.
	Fifo *bool
	// ContentBasedDeduplication of a FIFO queue. Default false.
	ContentBasedDeduplication *bool
	// QueueName of the source queue: default a name CloudFormation makes
	// up (FIFO: it adds the .fifo suffix).
	QueueName *string
	// RetentionPeriod of the source queue: default SQS's 4 days.
	RetentionPeriod awscdk.Duration

	Function FunctionOptions

	BatchSize                      *float64 // 10; FIFO at most 10
	MaximumBatchingWindowInSeconds *float64 // 0; FIFO must leave it 0
	MaximumConcurrency             *float64 // unset: Lambda's own scaling
	ReportBatchItemFailures        *bool    // true
	// MaxReceiveCount of the redrive policy: 5.
	MaxReceiveCount *float64
	// VisibilityTimeoutInSeconds of the source queue: 6 x the function
	// timeout + the batching window; never below timeout + window.
	VisibilityTimeoutInSeconds *float64

	// MaxAttempts is the attempt limit after which the handler quarantines
	// a message (SLUICE_MAX_ATTEMPTS, counted by ApproximateReceiveCount):
	// 3; at most MaxReceiveCount.
	MaxAttempts *float64
	// DeadLetters is the quarantine queue: default one of its own.
	DeadLetters *DeadLetterQueue
	// IdempotencyTable turns idempotency on: default off.
	IdempotencyTable *IdempotencyTable
	Alarms           *AlarmOptions
}

// QueueConsumer deploys a function consuming an SQS queue, standard or
// FIFO.
type QueueConsumer struct {
	Consumer
	// Queue is the source queue.
	Queue awssqs.Queue
	// Redrive is the source queue's dead-letter queue (redrive policy):
	// messages the function failed MaxReceiveCount times and the
	// quarantine could not take.
	Redrive awssqs.Queue
}

func queueSettings(props *QueueConsumerProps, timeout int) (mappingSettings, []string) {
	var p []string
	s := mappingSettings{
		source:         sourceSQS,
		timeout:        timeout,
		batchSize:      whole("BatchSize", props.BatchSize, DefaultQueueBatchSize, &p),
		window:         whole("MaximumBatchingWindowInSeconds", props.MaximumBatchingWindowInSeconds, 0, &p),
		report:         boolOr(props.ReportBatchItemFailures, true),
		maxAttempts:    whole("MaxAttempts", props.MaxAttempts, DefaultMaxAttempts, &p),
		maxReceive:     whole("MaxReceiveCount", props.MaxReceiveCount, DefaultMaxReceiveCount, &p),
		maxConcurrency: whole("MaximumConcurrency", props.MaximumConcurrency, 0, &p),
	}
	if boolOr(props.Fifo, false) {
		s.source = sourceSQSFIFO
	}
	s.visibility = whole("VisibilityTimeoutInSeconds", props.VisibilityTimeoutInSeconds, minVisibility(s.timeout, s.window), &p)
	return s, append(p, s.validate()...)
}

// NewQueueConsumer makes the source queue with its redrive queue, the
// function, its event source mapping and dead-letter queue, the grants and
// the alarms.
func NewQueueConsumer(scope constructs.Construct, id *string, props *QueueConsumerProps) *QueueConsumer {
	c := &QueueConsumer{}
	c.Construct = constructs.NewConstruct(scope, id)
	path := *c.Node().Path()
	if props == nil {
		invalid(path, []string{"props are required: set Function.BootstrapDir"})
	}
	problems := functionProblems(&props.Function)
	s, sp := queueSettings(props, functionTimeout(&props.Function))
	invalid(path, append(problems, sp...))

	fifo := s.source == sourceSQSFIFO
	var fifoProp *bool
	if fifo {
		fifoProp = jsii.Bool(true)
	}
	c.Redrive = newSafeQueue(c.Construct, "Redrive", &awssqs.QueueProps{Fifo: fifoProp})
	c.Queue = newSafeQueue(c.Construct, "Queue", &awssqs.QueueProps{
		Fifo:                      fifoProp,
		ContentBasedDeduplication: props.ContentBasedDeduplication,
		QueueName:                 props.QueueName,
		RetentionPeriod:           orDuration(props.RetentionPeriod, awscdk.Duration_Days(jsii.Number(4))),
		VisibilityTimeout:         awscdk.Duration_Seconds(jsii.Number(s.visibility)),
		DeadLetterQueue:           &awssqs.DeadLetterQueue{Queue: c.Redrive, MaxReceiveCount: jsii.Number(s.maxReceive)},
	})
	a := c.build(commonProps{fn: &props.Function, deadLetters: props.DeadLetters, idempotency: props.IdempotencyTable,
		maxAttempts: s.maxAttempts, report: s.report, alarms: props.Alarms})
	a.deadLetterAge("RedriveOldestMessage", c.Redrive, "the source queue's redrive queue")
	c.Queue.GrantConsumeMessages(c.Role)

	mp := &awslambda.CfnEventSourceMappingProps{
		EventSourceArn:        c.Queue.QueueArn(),
		BatchSize:             jsii.Number(s.batchSize),
		FunctionResponseTypes: responseTypes(s.report),
	}
	if !fifo {
		mp.MaximumBatchingWindowInSeconds = jsii.Number(s.window)
	}
	if s.maxConcurrency > 0 {
		mp.ScalingConfig = &awslambda.CfnEventSourceMapping_ScalingConfigProperty{MaximumConcurrency: jsii.Number(s.maxConcurrency)}
	}
	c.mapping(mp)
	return c
}

func orDuration(d, def awscdk.Duration) awscdk.Duration {
	if d == nil {
		return def
	}
	return d
}
