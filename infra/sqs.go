package infra

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// QueueConsumerProps configure a QueueConsumer. Unless Queue is given, the
// construct makes the source queue, so that it can give it the redrive
// policy and visibility timeout the function needs.
type QueueConsumerProps struct {
	// Queue is an existing source queue (awssqs.Queue_FromQueueArn, or a
	// queue of the app) to consume instead of one of the construct's own:
	// for a live pipeline moving to Sluice. The construct cannot change
	// it, so the props that shape the queue (Fifo, ContentBasedDeduplication,
	// QueueName, RetentionPeriod, VisibilityTimeout, MaxReceiveCount) are
	// refused with it; give it a visibility timeout of at least 6 x the
	// function timeout and a redrive policy of its own (synth warns).
	Queue awssqs.IQueue
	// Fifo makes a FIFO source queue (and redrive and quarantine queues).
	// Default false.
	Fifo *bool
	// ContentBasedDeduplication of a FIFO queue. Default false.
	ContentBasedDeduplication *bool
	// QueueName of the source queue: default a name CloudFormation makes
	// up (FIFO: it adds the .fifo suffix).
	QueueName *string
	// RetentionPeriod of the source queue: default SQS's 4 days.
	RetentionPeriod awscdk.Duration

	Function FunctionOptions

	BatchSize *float64 // 10; FIFO at most 10
	// MaxBatchingWindow: 0; FIFO must leave it 0. Whole seconds.
	MaxBatchingWindow       awscdk.Duration
	MaximumConcurrency      *float64 // unset: Lambda's own scaling
	ReportBatchItemFailures *bool    // true
	// MinimumPollers and MaximumPollers turn on provisioned mode
	// (ProvisionedPollerConfig: pollers kept ready for bursts, billed
	// while they run); unset, the mapping scales on demand. Lambda takes at
	// least 2 of each.
	MinimumPollers *float64
	MaximumPollers *float64
	// MappingMetrics turns on the mapping's EventCount metrics
	// (MetricsConfig): default true.
	MappingMetrics *bool
	// MaxReceiveCount of the redrive policy: 5.
	MaxReceiveCount *float64
	// VisibilityTimeout of the source queue: 6 x the function timeout +
	// the batching window; never below timeout + window.
	VisibilityTimeout awscdk.Duration

	// MaxAttempts is the attempt limit after which the handler quarantines
	// a message (SLUICE_MAX_ATTEMPTS, counted by ApproximateReceiveCount):
	// 3; at most MaxReceiveCount.
	MaxAttempts *float64
	// DeadLetters is the quarantine queue: default one of its own (FIFO for
	// a FIFO source; a given one must be FIFO too).
	DeadLetters *DeadLetterQueue
	// IdempotencyTable turns idempotency on: default off.
	IdempotencyTable *IdempotencyTable
	// IdempotencyKey names the business key the function registered with
	// fromenv.IdempotencyKey (SLUICE_IDEMPOTENCY_KEY): default the
	// message id. Needs IdempotencyTable.
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
	// AttemptsTable (FIFO only) counts each message's failures
	// (SLUICE_ATTEMPTS_TABLE): a FIFO message's ApproximateReceiveCount also
	// counts the deliveries in which it waited, unrun, behind a failing
	// message of its group, so the handler counts runs instead. Default a
	// table of its own for a FIFO source; refused for a standard one, whose
	// receive count is its attempts.
	AttemptsTable *AttemptsTable
	Alarms        *AlarmOptions
	// Dashboard false leaves out the consumer's CloudWatch dashboard and its
	// lines on the stack's: default true.
	Dashboard *bool
}

// QueueConsumer deploys a function consuming an SQS queue, standard or
// FIFO.
type QueueConsumer struct {
	Consumer
	// Queue is the source queue.
	Queue awssqs.IQueue
	// Redrive is the source queue's dead-letter queue (redrive policy):
	// messages the function failed MaxReceiveCount times and the
	// quarantine could not take. Nil when the props gave the queue.
	Redrive awssqs.Queue
	// AttemptsTable counts a FIFO message's failed runs; nil for a
	// standard queue.
	AttemptsTable *AttemptsTable
}

func queueSettings(props *QueueConsumerProps, timeout int) (mappingSettings, []string) {
	var p []string
	s := mappingSettings{
		source:         sourceSQS,
		timeout:        timeout,
		batchSize:      whole("BatchSize", props.BatchSize, DefaultQueueBatchSize, &p),
		window:         seconds("MaxBatchingWindow", props.MaxBatchingWindow, 0, &p),
		report:         boolOr(props.ReportBatchItemFailures, true),
		maxAttempts:    whole("MaxAttempts", props.MaxAttempts, DefaultMaxAttempts, &p),
		maxReceive:     whole("MaxReceiveCount", props.MaxReceiveCount, DefaultMaxReceiveCount, &p),
		maxConcurrency: whole("MaximumConcurrency", props.MaximumConcurrency, 0, &p),
		minPollers:     whole("MinimumPollers", props.MinimumPollers, 0, &p),
		maxPollers:     whole("MaximumPollers", props.MaximumPollers, 0, &p),
	}
	fifo := boolOr(props.Fifo, false)
	if props.Queue != nil {
		for name, set := range map[string]bool{
			"Fifo": props.Fifo != nil, "ContentBasedDeduplication": props.ContentBasedDeduplication != nil,
			"QueueName": props.QueueName != nil, "RetentionPeriod": props.RetentionPeriod != nil,
			"VisibilityTimeout": props.VisibilityTimeout != nil, "MaxReceiveCount": props.MaxReceiveCount != nil,
		} {
			if set {
				p = append(p, name+" shapes the queue the construct makes; with Queue given, set it on that queue instead")
			}
		}
		fifo = props.Queue.Fifo() != nil && *props.Queue.Fifo()
		// The given queue's redrive policy is not the construct's to check.
		s.maxReceive = max(s.maxAttempts, 1)
	}
	if fifo {
		s.source = sourceSQSFIFO
	}
	s.visibility = seconds("VisibilityTimeout", props.VisibilityTimeout, minVisibility(s.timeout, s.window), &p)
	if props.Queue != nil {
		s.visibility = minVisibility(s.timeout, s.window)
	}
	if !fifo && props.AttemptsTable != nil {
		p = append(p, "AttemptsTable is for FIFO queues: a standard queue's ApproximateReceiveCount counts its attempts")
	}
	if fifo && props.DeadLetters != nil && (props.DeadLetters.Queue.Fifo() == nil || !*props.DeadLetters.Queue.Fifo()) {
		p = append(p, "DeadLetters is a standard queue but the source is FIFO: order within a message group would not survive into a redrive; "+
			"pass a DeadLetterQueue with Fifo true")
	}
	return s, append(p, s.validate()...)
}

// NewQueueConsumer makes the source queue with its redrive queue (unless
// given one), the function, its event source mapping and dead-letter
// queue, the grants and the alarms.
func NewQueueConsumer(scope constructs.Construct, id *string, props *QueueConsumerProps) *QueueConsumer {
	c := &QueueConsumer{}
	c.Construct = constructs.NewConstruct(scope, id)
	path := *c.Node().Path()
	if props == nil {
		invalid(path, []string{"props are required: set Function.BootstrapDir"})
	}
	problems := functionProblems(&props.Function)
	s, sp := queueSettings(props, functionTimeout(&props.Function))
	problems = append(problems, keyProblems(props.IdempotencyKey, props.IdempotencyTable)...)
	problems = append(problems, prefixProblems(props.IdempotencyKeyPrefix, props.IdempotencyTable)...)
	invalid(path, append(problems, sp...))
	c.source = s.source

	fifo := s.source == sourceSQSFIFO
	if props.Queue != nil {
		c.Queue = props.Queue
		awscdk.Annotations_Of(c.Construct).AddWarningV2(jsii.String("sluice:GivenQueue"), jsii.String(fmt.Sprintf(
			"the source queue is given, so the construct cannot check it: give it a visibility timeout of at least %d s "+
				"(6 x the function timeout + the batching window) and a redrive policy with maxReceiveCount of at least MaxAttempts (%d)",
			s.visibility, s.maxAttempts)), nil)
	} else {
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
	}
	if fifo {
		c.AttemptsTable = props.AttemptsTable
		if c.AttemptsTable == nil {
			c.AttemptsTable = NewAttemptsTable(c.Construct, jsii.String("Attempts"), nil)
		}
	}
	a := c.build(commonProps{fn: &props.Function, deadLetters: props.DeadLetters, idempotency: props.IdempotencyTable,
		attempts: c.AttemptsTable, maxAttempts: s.maxAttempts, report: s.report, alarms: props.Alarms, fifo: fifo, key: props.IdempotencyKey, prefix: props.IdempotencyKeyPrefix})
	if c.Redrive != nil {
		a.deadLetterAge("RedriveOldestMessage", c.Redrive, "the source queue's redrive queue")
	}
	a.backlogAge(c.Queue)
	c.Queue.GrantConsumeMessages(c.Role)

	metrics := boolOr(props.MappingMetrics, true)
	mp := &awslambda.CfnEventSourceMappingProps{
		EventSourceArn:        c.Queue.QueueArn(),
		BatchSize:             jsii.Number(s.batchSize),
		FunctionResponseTypes: responseTypes(s.report),
		MetricsConfig:         metricsConfig(metrics, s.source),
	}
	if !fifo {
		mp.MaximumBatchingWindowInSeconds = jsii.Number(s.window)
	}
	if s.maxConcurrency > 0 {
		mp.ScalingConfig = &awslambda.CfnEventSourceMapping_ScalingConfigProperty{MaximumConcurrency: jsii.Number(s.maxConcurrency)}
	}
	if s.minPollers > 0 || s.maxPollers > 0 {
		mp.ProvisionedPollerConfig = &awslambda.CfnEventSourceMapping_ProvisionedPollerConfigProperty{
			MinimumPollers: props.MinimumPollers, MaximumPollers: props.MaximumPollers}
	}
	c.mapping(mp)
	var redrive awssqs.IQueue
	if c.Redrive != nil {
		redrive = c.Redrive
	}
	c.dashboard(props.Dashboard, board{mappingMetrics: metrics, redrive: redrive})
	return c
}

func orDuration(d, def awscdk.Duration) awscdk.Duration {
	if d == nil {
		return def
	}
	return d
}
