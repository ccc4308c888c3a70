package localtest

import (
	"time"
)

// Options configure one run.
type Options struct {
	Mapping *Mapping
	// Records feed the emulated source. Ignored when Stream, Queue or Kafka
	// is set.
	Records []InputRecord
	// Real sources; at most one, matching Mapping.EventSource.
	Stream StreamSource
	Queue  Queue
	Kafka  KafkaSource

	Invoker Invoker
	// FunctionTimeout is the function's timeout. Default 3 s, Lambda's.
	FunctionTimeout time.Duration
	// Destination receives on-failure records. Default: the mapping's
	// DestinationConfig (file:// paths; SQS queue URLs need Destination set),
	// or none (records are still listed in the report).
	Destination Destination
	Faults      Faults
	// Trace is called after every invocation.
	Trace func(TraceEntry)
	// Progress is called after every invocation with the running totals.
	Progress func(Totals)
	// MaxInvocations stops a run that does not settle (a queue message that
	// always fails and has no redrive policy). Default 100,000 plus 10 per
	// record.
	MaxInvocations int
	// Effects, when set, returns the effects the function recorded, in the
	// order they happened, for the invariant checks (the conformance
	// handler's SLUICE_EFFECTS_FILE).
	Effects func() ([]Effect, error)
	// Seed makes fault injection and arrival jitter repeatable.
	Seed uint64
	// WallClock runs the emulated source on the wall clock instead of the
	// virtual clock (waits really wait).
	WallClock bool
	// RetryDelay is how long Lambda waits before retrying a failed stream
	// or Kafka batch. Default 1 s (virtual).
	RetryDelay time.Duration
	// DoNotCountPartialRetries makes a retry after a partial batch response
	// free, like a bisection. By default it consumes a retry, the
	// conservative reading of an undocumented rule.
	DoNotCountPartialRetries bool
}

// Faults are injected by the runner around the invoker.
type Faults struct {
	// ErrorRate is the share of invocations that fail with a function error
	// before the function runs.
	ErrorRate float64
	// CrashRate is the share of invocations after which the function's
	// answer is lost as if its process had crashed (Runtime.ExitError): the
	// function ran, its effects stay, Lambda sees a function error.
	CrashRate float64
	// TimeoutRate is the share of invocations that run into the timeout:
	// the function ran (and is killed, for a process), Lambda sees a timeout.
	TimeoutRate float64
	// DuplicateRate is the share of successful batches delivered again.
	DuplicateRate float64
}

// Effect is one side effect the function recorded: the record's payload id
// and its ordering key.
type Effect struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}
