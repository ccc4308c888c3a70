package localtest

import (
	sevents "github.com/sluicehq/sluice/events"
)

// Invocation results in a trace.
const (
	ResultSuccess       = "success"
	ResultPartial       = "partial"
	ResultFunctionError = "function_error"
	ResultTimeout       = "timeout"
)

// TraceEntry is one invocation, as written to trace.jsonl.
type TraceEntry struct {
	N        int      `json:"n"`
	Shard    string   `json:"shard"` // shard, topic-partition, or message group(s)
	IDs      []string `json:"ids"`
	Result   string   `json:"result"`
	Reported []string `json:"reported"`
	Bisect   bool     `json:"bisect"` // this batch is a half of a split
	Retry    int      `json:"retry"`  // retries consumed so far for these records
	// Duplicate marks an injected redelivery of a batch that had succeeded.
	Duplicate bool `json:"duplicate,omitempty"`
	// Final marks the final invoke of a tumbling window (no records).
	Final bool `json:"final,omitempty"`
	// Ignored marks a partial response that Lambda ignored because the
	// mapping lacks ReportBatchItemFailures.
	Ignored bool   `json:"ignored,omitempty"`
	Error   string `json:"error,omitempty"` // why the batch failed as a whole
	Ms      int64  `json:"ms"`              // wall-clock duration of the invocation
}

// Totals counts what a run did.
type Totals struct {
	Records         int `json:"records"`
	Invocations     int `json:"invocations"`
	Successes       int `json:"successes"`
	PartialFailures int `json:"partialFailures"`
	FunctionErrors  int `json:"functionErrors"`
	Timeouts        int `json:"timeouts"`
	Bisections      int `json:"bisections"`
	Retries         int `json:"retries"`
	Duplicates      int `json:"duplicates"`
	// Records that ended processed, sent to the on-failure destination,
	// moved to the queue's dead-letter queue, or still waiting.
	Processed    int `json:"processed"`
	OnFailure    int `json:"onFailure"`
	DeadLettered int `json:"deadLettered"`
	Left         int `json:"left"`
}

// Report is the outcome of a run, as written to report.json.
type Report struct {
	Mapping Mapping `json:"mapping"`
	Totals  Totals  `json:"totals"`
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
	// Fates says what became of each input record, by record id.
	Fates map[string]string `json:"fates,omitempty"`
	// Unprocessed lists, in source order, the records that did not end
	// processed, with the id their payload carries and their ordering key.
	Unprocessed []RecordFate `json:"unprocessed,omitempty"`
	// Invariants are the checks run at the end, and whether they held.
	Invariants []InvariantResult `json:"invariants,omitempty"`
	// Stopped is why the run ended before every record was resolved, if it
	// did.
	Stopped string `json:"stopped,omitempty"`
}

// RecordFate is what became of one record.
type RecordFate struct {
	ID        string `json:"id"`
	PayloadID string `json:"payloadId,omitempty"`
	Key       string `json:"key,omitempty"`
	Fate      string `json:"fate"`
}

// InvariantResult is one invariant check.
type InvariantResult struct {
	Name       string   `json:"name"`
	Held       bool     `json:"held"`
	Violations []string `json:"violations,omitempty"`
}

// Record fates in Report.Fates.
const (
	FateProcessed    = "processed"
	FateOnFailure    = "on-failure"
	FateDeadLettered = "dead-lettered"
	FateLeft         = "left"
)
