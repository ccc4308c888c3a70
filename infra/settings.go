package infra

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Defaults the constructs apply when a prop is left unset. The README's
// Deploy section gives the reason for each.
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
	maxConcurrency   int // SQS ScalingConfig.MaximumConcurrency; 0 unset
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
	in("MaximumBatchingWindowInSeconds", s.window, 0, 300)
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
			bad("MaximumRecordAgeInSeconds %d: Lambda accepts -1 (no limit) or 60..604800; 1-59 is rejected", s.maxAge)
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
		valid := []string{"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"}
		if s.source != sourceKinesis {
			valid = valid[:2]
		}
		if !slices.Contains(valid, s.startingPosition) {
			bad("StartingPosition %q is not valid for %s: use one of %s", s.startingPosition, s.source, strings.Join(valid, ", "))
		}
	case s.sqs():
		if s.source == sourceSQSFIFO {
			if s.batchSize < 1 || s.batchSize > 10 {
				bad("BatchSize %d: a FIFO queue's mapping takes 1..10 messages per batch", s.batchSize)
			}
			if s.window > 0 {
				bad("MaximumBatchingWindowInSeconds %d: Lambda has no batching window for FIFO queues; leave it unset or 0", s.window)
			}
		} else {
			in("BatchSize", s.batchSize, 1, 10000)
			if s.batchSize > 10 && s.window < 1 {
				bad("BatchSize %d needs MaximumBatchingWindowInSeconds of at least 1 (Lambda: maximum batch window must be greater than 0 if maximum batch size is greater than 10)", s.batchSize)
			}
		}
		in("MaxReceiveCount", s.maxReceive, 1, 1000)
		if s.maxAttempts > s.maxReceive {
			bad("MaxAttempts %d exceeds MaxReceiveCount %d: the queue moves the message to its redrive queue before it is quarantined; "+
				"lower MaxAttempts or raise MaxReceiveCount", s.maxAttempts, s.maxReceive)
		}
		in("VisibilityTimeoutInSeconds", s.visibility, 0, 43200)
		if s.visibility < s.timeout+s.window {
			bad("VisibilityTimeoutInSeconds %d is below the function timeout %d s plus the batching window %d s: a message would be handed out again while it is processed; "+
				"leave it unset for %d s (6 x timeout + window)", s.visibility, s.timeout, s.window, minVisibility(s.timeout, s.window))
		}
		if s.maxConcurrency != 0 {
			in("MaximumConcurrency", s.maxConcurrency, 2, 1000)
		}
	}
	return p
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
