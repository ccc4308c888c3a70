package infra

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// Defaults the constructs apply when a prop is left unset. docs/deploy.md
// ("Defaults, and why") gives the reason for each.
const (
	DefaultFunctionTimeoutSeconds = 30
	DefaultMemorySize             = 256
	DefaultStreamBatchSize        = 100
	DefaultQueueBatchSize         = 10
	DefaultMaximumRetryAttempts   = 5
	DefaultMaximumRecordAge       = 6 * 60 * 60 // seconds
	DefaultMaxAttempts            = 3
	DefaultMaxReceiveCount        = 5
	DefaultStartingPosition       = "TRIM_HORIZON"
	DefaultIteratorAgeAlarm       = 5 * 60  // seconds
	DefaultDeadLetterAgeAlarm     = 60 * 60 // seconds
	DefaultDeadLetterRetention    = 14      // days: SQS's maximum
	// DefaultBacklogAgeAlarm is the age of the oldest message of a
	// consumed SQS queue that raises its alarm, in seconds: above the 6 min
	// a message the defaults retry takes to be quarantined (MaxAttempts 3
	// at a visibility timeout of 180 s), so it fires on a queue that falls
	// behind, not on one record being retried.
	DefaultBacklogAgeAlarm = 15 * 60
	// DefaultOffsetLagAlarm is the Kafka offset lag (records the consumer
	// group has not committed, the highest partition's) that raises the
	// alarm: 100 batches at the default BatchSize.
	DefaultOffsetLagAlarm = 10000
	// DefaultDroppedEventsAlarm and DefaultOnFailureEventsAlarm: one record
	// in 5 minutes that Lambda dropped, or sent to the on-failure
	// destination, raises the alarm.
	DefaultDroppedEventsAlarm   = 1
	DefaultOnFailureEventsAlarm = 1
	// VisibilityTimeoutFactor: an SQS source queue's visibility timeout is
	// at least this many function timeouts plus the batching window.
	VisibilityTimeoutFactor = 6
)

// Event source kinds, as the local runner names them.
const (
	sourceKinesis  = "kinesis"
	sourceDynamoDB = "dynamodb"
	sourceSQS      = "sqs"
	sourceSQSFIFO  = "sqs-fifo"
	sourceKafka    = "kafka"
)

// mappingSettings is a consumer's event source mapping and function
// settings with defaults applied: what validate checks, free of CDK types
// so that the decisions are plain table-tested code.
type mappingSettings struct {
	source           string
	timeout          int // function timeout, seconds
	batchSize        int
	window           int // MaximumBatchingWindowInSeconds
	retries          int // MaximumRetryAttempts; -1 unbounded
	maxAge           int // MaximumRecordAgeInSeconds; -1 unbounded
	parallelization  int
	bisect           bool
	report           bool // ReportBatchItemFailures
	maxAttempts      int  // SLUICE_MAX_ATTEMPTS
	startingPosition string
	visibility       int // SQS source queue visibility timeout, seconds
	maxReceive       int // SQS redrive maxReceiveCount
	onDemand         bool
	maxConcurrency   int  // SQS ScalingConfig.MaximumConcurrency; 0 unset
	timestamp        bool // StartingPositionTimestamp set
	queueMode        bool // Kafka ConsumptionMode Queue
	minPollers       int  // ProvisionedPollerConfig; 0 unset
	maxPollers       int
}

func (s mappingSettings) stream() bool {
	return s.source == sourceKinesis || s.source == sourceDynamoDB
}
func (s mappingSettings) sqs() bool { return s.source == sourceSQS || s.source == sourceSQSFIFO }

// minVisibility is the smallest visibility timeout the defaults allow: six
// function timeouts plus the batching window, as the Lambda guide for SQS
// advises, so that a batch retried by Lambda is not handed out twice.
func minVisibility(timeout, window int) int { return VisibilityTimeoutFactor*timeout + window }

// validate returns every problem with s, each naming the prop, the value and
// what to do. AWS's limits are those of CreateEventSourceMapping; the rest
// keep the handler's promises (quarantine before Lambda gives up).
func (s mappingSettings) validate() []string {
	var p []string
	bad := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	in := func(name string, v, lo, hi int) {
		if v < lo || v > hi {
			bad("%s %d is outside %d..%d", name, v, lo, hi)
		}
	}
	in("Function.Timeout (seconds)", s.timeout, 1, 900)
	in("MaxBatchingWindow (seconds)", s.window, 0, 300)
	if s.maxAttempts < 1 {
		bad("MaxAttempts %d: the attempt limit must be at least 1", s.maxAttempts)
	}
	switch {
	case s.stream(), s.source == sourceKafka:
		in("BatchSize", s.batchSize, 1, 10000)
		if s.source == sourceKafka && s.onDemand {
			break
		}
		in("MaximumRetryAttempts", s.retries, -1, 10000)
		if s.maxAge != -1 && (s.maxAge < 60 || s.maxAge > 604800) {
			bad("MaxRecordAge %d s: Lambda accepts 60 s..7 days (or no limit: NoRecordAgeLimit); 1-59 s is rejected", s.maxAge)
		}
		// A record fails at most MaximumRetryAttempts+1 times as the head
		// of its batch before Lambda sends the on-failure record and moves on:
		// a higher limit would never quarantine it.
		if s.retries >= 0 && s.maxAttempts > s.retries+1 {
			bad("MaxAttempts %d exceeds MaximumRetryAttempts %d + 1: Lambda gives up on the batch before the record is quarantined; "+
				"lower MaxAttempts or raise MaximumRetryAttempts", s.maxAttempts, s.retries)
		}
		if s.stream() {
			in("ParallelizationFactor", s.parallelization, 1, 10)
		}
		// AT_TIMESTAMP: Kinesis, Amazon MSK and self-managed Kafka
		// (CreateEventSourceMapping's StartingPosition); not DynamoDB Streams.
		valid := []string{"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"}
		if s.source == sourceDynamoDB {
			valid = valid[:2]
		}
		switch {
		case s.queueMode:
			// Queue mode (share groups) has no starting position.
		case !slices.Contains(valid, s.startingPosition):
			bad("StartingPosition %q is not valid for %s: use one of %s", s.startingPosition, s.source, strings.Join(valid, ", "))
		case (s.startingPosition == "AT_TIMESTAMP") != s.timestamp:
			bad("StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP, and only with it (StartingPosition %s)", s.startingPosition)
		}
		if s.source == sourceKafka {
			s.pollers(1, &p)
		}
	case s.sqs():
		if s.source == sourceSQSFIFO {
			if s.batchSize < 1 || s.batchSize > 10 {
				bad("BatchSize %d: a FIFO queue's mapping takes 1..10 messages per batch", s.batchSize)
			}
			if s.window > 0 {
				bad("MaxBatchingWindow %d s: Lambda has no batching window for FIFO queues; leave it unset or 0", s.window)
			}
		} else {
			in("BatchSize", s.batchSize, 1, 10000)
			if s.batchSize > 10 && s.window < 1 {
				bad("BatchSize %d needs a MaxBatchingWindow of at least 1 s (Lambda: maximum batch window must be greater than 0 if maximum batch size is greater than 10)", s.batchSize)
			}
		}
		in("MaxReceiveCount", s.maxReceive, 1, 1000)
		if s.maxAttempts > s.maxReceive {
			bad("MaxAttempts %d exceeds MaxReceiveCount %d: the queue moves the message to its redrive queue before it is quarantined; "+
				"lower MaxAttempts or raise MaxReceiveCount", s.maxAttempts, s.maxReceive)
		}
		in("VisibilityTimeout (seconds)", s.visibility, 0, 43200)
		if s.visibility < s.timeout+s.window {
			bad("VisibilityTimeout %d s is below the function timeout %d s plus the batching window %d s: a message would be handed out again while it is processed; "+
				"leave it unset for %d s (6 x timeout + window)", s.visibility, s.timeout, s.window, minVisibility(s.timeout, s.window))
		}
		if s.maxConcurrency != 0 {
			in("MaximumConcurrency", s.maxConcurrency, 2, 1000)
		}
		s.pollers(2, &p)
	}
	return p
}

// pollers checks ProvisionedPollerConfig: Lambda's smallest poller count
// is least (SQS 2, Kafka 1), and the minimum may not exceed the maximum.
func (s mappingSettings) pollers(least int, p *[]string) {
	if s.minPollers != 0 && s.minPollers < least {
		*p = append(*p, fmt.Sprintf("MinimumPollers %d: %s takes at least %d", s.minPollers, s.source, least))
	}
	if s.maxPollers != 0 && s.maxPollers < least {
		*p = append(*p, fmt.Sprintf("MaximumPollers %d: %s takes at least %d", s.maxPollers, s.source, least))
	}
	if s.minPollers != 0 && s.maxPollers != 0 && s.minPollers > s.maxPollers {
		*p = append(*p, fmt.Sprintf("MinimumPollers %d exceeds MaximumPollers %d", s.minPollers, s.maxPollers))
	}
}

// seconds reads an optional duration prop in whole seconds, def when
// unset; a fraction of a second is a problem (Lambda and SQS take whole
// seconds).
func seconds(name string, d awscdk.Duration, def int, problems *[]string) int {
	if d == nil {
		return def
	}
	ms := *d.ToMilliseconds(nil)
	if math.Mod(ms, 1000) != 0 {
		*problems = append(*problems, fmt.Sprintf("%s %s is not a whole number of seconds", name, *d.ToHumanString()))
		return def
	}
	return int(ms / 1000)
}

// whole reads an optional whole-number prop, def when unset; a fraction is
// a problem.
func whole(name string, v *float64, def int, problems *[]string) int {
	if v == nil {
		return def
	}
	if *v != math.Trunc(*v) || math.IsInf(*v, 0) || math.IsNaN(*v) {
		*problems = append(*problems, fmt.Sprintf("%s %v is not a whole number", name, *v))
		return def
	}
	return int(*v)
}

func boolOr(v *bool, def bool) bool {
	if v == nil {
		return def
	}
	return *v
}

// invalid panics with every problem of the construct at path, the way a
// CDK construct rejects its props, so synth stops before anything deploys.
func invalid(path string, problems []string) {
	if len(problems) == 0 {
		return
	}
	panic(fmt.Sprintf("sluice/infra: %s: invalid props:\n  - %s", path, strings.Join(problems, "\n  - ")))
}
