package localtest

import (
	"fmt"

	sevents "github.com/sluicehq/sluice/events"
)

// Invocation results: how Lambda read an answer, in TraceEntry.Result
// (the package doc lists every word for how things end).
const (
	ResultSuccess       = "success"
	ResultPartial       = "partial"
	ResultFunctionError = "function_error"
	ResultTimeout       = "timeout"
)

// TraceEntry is one invocation, as written to trace.jsonl. Each source
// names its lane in its own field: Shard (Kinesis, DynamoDB Streams),
// Partition (Kafka) or Groups (SQS FIFO); an SQS standard batch has none.
type TraceEntry struct {
	N         int    `json:"n"`
	RequestID string `json:"requestId,omitempty"`
	Shard     string `json:"shard,omitempty"` // Kinesis / DynamoDB Streams shard id
	// Partition is, for Kafka, the batch's "<topic>-<partition>", or its
	// partitions joined by commas when the event holds several
	// ("orders-0,orders-1"; topic names hold no comma).
	Partition string   `json:"partition,omitempty"`
	Groups    []string `json:"groups,omitempty"` // SQS FIFO message groups in the batch, in order
	IDs       []string `json:"ids"`
	Result    string   `json:"result"`
	Reported  []string `json:"reported"`
	Bisect    bool     `json:"bisect"` // this batch is a half of a split
	// Retry is, for streams and Kafka, the retries consumed so far by the
	// batch's first record (for a window's final invoke, by that final
	// invoke; for a Kafka event of several partitions, the
	// most any of its partitions' first records consumed); for SQS, how often the batch's first message
	// was received before (ApproximateReceiveCount - 1).
	Retry int `json:"retry"`
	// Duplicate marks an injected redelivery of a batch that had succeeded.
	Duplicate bool `json:"duplicate,omitempty"`
	// Final marks the final invoke of a tumbling window (no records).
	Final bool `json:"final,omitempty"`
	// Ignored marks a partial response that Lambda ignored because the
	// mapping lacks ReportBatchItemFailures (or, for Kafka, runs in
	// on-demand mode): Reported then lists records acknowledged although
	// the function said they failed.
	Ignored bool   `json:"ignored,omitempty"`
	Error   string `json:"error,omitempty"` // why the batch failed as a whole
	// ErrorType and ErrorMessage are the function's error document (its
	// Runtime API /error body or the Invoke API error body) when the
	// invocation failed.
	ErrorType    string `json:"errorType,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Killed says, for an injected crash or timeout, how the runner killed
	// the function's process and where ("crashed: the process was killed
	// mid-batch, 14ms after the hand-over; ...").
	Killed string `json:"killed,omitempty"`
	// Env and PID say where the invocation ran, when the invoker tells
	// (a bootstrap run behind the Runtime API does): the execution
	// environment (1, 2, ...; several run at once under
	// ScalingConfig.MaximumConcurrency, several shards or a
	// ParallelizationFactor), and the process id of the function there.
	// A process that was killed, or exited, is replaced in its
	// environment by a new one (a new PID, a new init).
	Env int   `json:"env,omitempty"`
	PID int   `json:"pid,omitempty"`
	Ms  int64 `json:"ms"` // wall-clock duration of the invocation
}

// Totals counts what a run did.
type Totals struct {
	// Records counts the records of the run: each user record of a KPL
	// aggregate is one (UserRecords of them, from Aggregates Kinesis
	// records), as every fate below counts them.
	Records         int `json:"records"`
	UserRecords     int `json:"userRecords,omitempty"`
	Aggregates      int `json:"aggregates,omitempty"`
	Invocations     int `json:"invocations"`
	Successes       int `json:"successes"`
	PartialFailures int `json:"partialFailures"`
	FunctionErrors  int `json:"functionErrors"`
	Timeouts        int `json:"timeouts"`
	// Crashes counts injected crashes: invocations whose process the
	// runner killed (they count as function errors too). Injected
	// timeouts count in Timeouts. Report.Kills lists both.
	Crashes int `json:"crashes"`
	// InitFailures counts invocations that failed because the function
	// could not start (its process exited, posted /runtime/init/error or
	// timed out before asking for its first invocation).
	InitFailures int `json:"initFailures"`
	Bisections   int `json:"bisections"`
	// Retries counts stream and Kafka batch retries (each consumes one of
	// MaximumRetryAttempts). Redeliveries counts SQS messages received
	// again after a failure (each raises ApproximateReceiveCount).
	Retries      int `json:"retries"`
	Redeliveries int `json:"redeliveries"`
	Duplicates   int `json:"duplicates"`
	// IgnoredResponses counts partial batch responses that Lambda ignored
	// (no ReportBatchItemFailures, or Kafka on-demand mode);
	// IgnoredRecords the records they reported failed, which Lambda
	// acknowledged as processed anyway.
	IgnoredResponses int `json:"ignoredResponses"`
	IgnoredRecords   int `json:"ignoredRecords"`
	// Records by fate: processed; skipped (acknowledged by its handler
	// without running the function: Report.Skipped); quarantined by the
	// function in its own dead letters (Options.Quarantine); sent to the
	// on-failure destination; moved to the queue's dead-letter queue;
	// still waiting; Filtered those that matched none of the mapping's
	// FilterCriteria, which Lambda discarded without invoking the
	// function.
	Processed    int `json:"processed"`
	Skipped      int `json:"skipped"`
	Quarantined  int `json:"quarantined"`
	OnFailure    int `json:"onFailure"`
	DeadLettered int `json:"deadLettered"`
	Left         int `json:"left"`
	Filtered     int `json:"filtered"`
}

// Report is the outcome of a run, as written to report.json.
type Report struct {
	Mapping Mapping `json:"mapping"`
	Totals  Totals  `json:"totals"`
	// Failure is set when the run could not test the function at all: it
	// never started, never answered, or cannot handle this source. Such a
	// run never counts as held.
	Failure *RunFailure `json:"failure,omitempty"`
	// LastFailedInvocation is the last invocation the function failed,
	// with what it said (its error document and its last output lines).
	LastFailedInvocation *FailedInvocation `json:"lastFailedInvocation,omitempty"`
	// Kills lists the invocations whose process the runner killed as an
	// injected crash or timeout, in order.
	Kills []KilledInvocation `json:"kills,omitempty"`
	// OnFailureRecords are the on-failure records sent, exactly in AWS's
	// shape.
	OnFailureRecords []sevents.OnFailureRecord `json:"onFailureRecords"`
	// Checkpoints is, per shard or topic-partition, the last sequence
	// number or offset checkpointed (committed).
	Checkpoints map[string]string `json:"checkpoints,omitempty"`
	// QueueLeft and DeadLettered are SQS messages still in the queue and
	// moved to the queue's dead-letter queue.
	QueueLeft    int `json:"queueLeft"`
	DeadLettered int `json:"deadLettered"`
	// Fates says what became of each record of the run, by record id (a
	// KPL user record's is "<sequenceNumber>:<subSequenceNumber>").
	Fates map[string]string `json:"fates,omitempty"`
	// Skipped lists, in source order, the records their handler
	// acknowledged without running the function, with why and how the
	// runner checked it.
	Skipped []SkippedRecord `json:"skipped,omitempty"`
	// Unprocessed lists, in source order, the records that did not end
	// processed (filtered records aside: Fates names them), with the line they came from, the id their payload
	// carries and their ordering key.
	Unprocessed []RecordFate `json:"unprocessed,omitempty"`
	// Unexpected lists, in source order, the records whose fate is not one
	// they were expected to end with (InputRecord.Expect, Options.Allow):
	// each makes the check fate-as-expected fail.
	Unexpected []RecordFate `json:"unexpected,omitempty"`
	// Invariants are the checks run at the end, and whether they held.
	Invariants []InvariantResult `json:"invariants,omitempty"`
	// Stopped is why the run ended before every record was resolved, if it
	// did (MaxInvocations, a queue that never settles, a Failure). A
	// stopped run does not hold.
	Stopped string `json:"stopped,omitempty"`
}

// RunFailure says why a run could not test the function.
type RunFailure struct {
	// Kind is FailureInit, FailureNoAnswer or FailureSourceMismatch.
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
}

// Run failure kinds.
const (
	// FailureInit: every invocation failed at init; the function never
	// started.
	FailureInit = "init"
	// FailureNoAnswer: the function's code never answered (every
	// invocation timed out or crashed without an answer).
	FailureNoAnswer = "no-answer"
	// FailureSourceMismatch: the function answered that it cannot handle
	// this source (an errorType ending in SourceMismatchError).
	FailureSourceMismatch = "source-mismatch"
)

// FailedInvocation is one failed invocation and the function's last words.
type FailedInvocation struct {
	N            int    `json:"n"`
	RequestID    string `json:"requestId"`
	Result       string `json:"result"`
	ErrorType    string `json:"errorType,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// Logs are the last lines (at most LogLines) the function wrote to
	// stdout and stderr during the invocation, its init included when it
	// started cold. Only invokers that see the output fill them (the
	// Runtime API invoker; an Invoke API endpoint that returns a log tail).
	Logs []string `json:"logs,omitempty"`
}

// RecordFate is what became of one record.
type RecordFate struct {
	ID string `json:"id"`
	// Line is the records-file line; Input the 1-based position among
	// Options.Records (both 0 for a record read from a real source).
	Line  int `json:"line,omitempty"`
	Input int `json:"input,omitempty"`
	// SubSequenceNumber is, for a user record of a KPL aggregate, its
	// index in the aggregate (from 0).
	SubSequenceNumber *int   `json:"subSequenceNumber,omitempty"`
	PayloadID         string `json:"payloadId,omitempty"`
	Key               string `json:"key,omitempty"`
	Fate              string `json:"fate"`
	// Expected is, in Report.Unexpected, the fate the record was expected
	// to end with (its InputRecord.Expect, by default processed).
	Expected string `json:"expected,omitempty"`
}

// InvariantResult is one invariant check.
type InvariantResult struct {
	Name string `json:"name"`
	// Status is StatusHeld, StatusViolated or StatusNotEvaluated.
	Status string `json:"status"`
	// Reason says why the check could not be evaluated; on a check that
	// held, what it allowed (effect-once with AllowKillRepeats).
	Reason     string   `json:"reason,omitempty"`
	Violations []string `json:"violations,omitempty"`
}

// Invariant statuses (see the package doc). A check that could not be
// evaluated is not held.
const (
	StatusHeld         = "held"
	StatusViolated     = "violated"
	StatusNotEvaluated = "not-evaluated"
)

// Record fates in Report.Fates (with FateFiltered); Fates lists them all.
const (
	// FateProcessed: the function processed the record, and Lambda
	// acknowledged it (deleted the message, checkpointed past it).
	FateProcessed = "processed"
	// FateQuarantined: the function parked the record in its own dead
	// letters (handlers.WithDeadLetters) and reported it handled.
	FateQuarantined = "quarantined"
	// FateOnFailure: Lambda gave up on the record's batch and sent the
	// on-failure record to the mapping's destination (streams, Kafka).
	FateOnFailure = "on-failure"
	// FateDeadLettered: the queue's redrive policy moved the message to its
	// dead-letter queue (SQS).
	FateDeadLettered = "dead-lettered"
	// FateLeft: the record was still in the source when the run ended.
	FateLeft = "left"
	// FateSkipped: the record's handler acknowledged it without running
	// the function, and said so (an s3:TestEvent message, a duplicate
	// whose idempotency key had completed, a CloudWatch Logs control
	// message); the no-record-lost check verifies each such claim.
	FateSkipped = "skipped"
)

// SkippedRecord is a record its handler acknowledged without running the
// function (FateSkipped): why (Reason: "duplicate", "s3-test-event",
// "control-message"), the idempotency key of a duplicate (and, when its
// ordered lane's checkpoint answered it, the lane's key and the record's
// position there), and how the runner checked the claim (Checked), or
// why it could not (Problem).
type SkippedRecord struct {
	RecordFate
	Reason          string `json:"reason"`
	IdempotencyKey  string `json:"idempotencyKey,omitempty"`
	IdempotencyLane string `json:"idempotencyLane,omitempty"`
	LanePosition    string `json:"lanePosition,omitempty"`
	Checked         string `json:"checked,omitempty"`
	Problem         string `json:"problem,omitempty"`
}

// Name names the record for people: by its records-file line (or its
// position among Options.Records), else by its id in the source; with the
// id its payload carries, e.g. "line 5 (id o5)". A KPL user record is
// named by its aggregate's line and its sub-sequence number, "line 5:1".
func (f RecordFate) Name() string {
	var s string
	switch {
	case f.Line > 0:
		s = fmt.Sprintf("line %d", f.Line)
	case f.Input > 0:
		s = fmt.Sprintf("record %d", f.Input)
	default:
		s = f.ID
	}
	if f.SubSequenceNumber != nil && (f.Line > 0 || f.Input > 0) {
		s += fmt.Sprintf(":%d", *f.SubSequenceNumber)
	}
	if f.PayloadID != "" {
		s += " (id " + f.PayloadID + ")"
	}
	return s
}
