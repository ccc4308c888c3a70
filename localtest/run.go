package localtest

import (
	"time"

	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/onfailure"
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

	Invoker invocation.Invoker
	// FunctionTimeout is the function's timeout. Default 3 s, Lambda's.
	FunctionTimeout time.Duration
	// Destination receives on-failure records. Default: the mapping's
	// DestinationConfig (file:// paths; SQS queue URLs need Destination set),
	// or none (records are still listed in the report).
	Destination onfailure.Destination
	Faults      Faults
	// Trace is called after every invocation.
	Trace func(TraceEntry)
	// Progress is called after every invocation with the running totals.
	Progress func(Totals)
	// HTML, when set, is the path of a page written at the end of the run:
	// one self-contained HTML file with the run's invariants, counts, a
	// timeline per lane and every record's path (docs/localtest.md, "The
	// HTML report"). A path that cannot be created fails the run before
	// it starts.
	HTML string
	// MaxInvocations stops a run that does not settle (a queue message that
	// always fails and has no redrive policy). Default 100,000 plus 10 per
	// record.
	MaxInvocations int
	// Effects, when set, returns the effects the function recorded, in the
	// order they happened, for the invariant checks (the conformance
	// handler's SLUICE_EFFECTS_FILE; see ReadEffects). An error makes the
	// checks that need effects "not evaluated", never held.
	Effects func() ([]Effect, error)
	// EffectsKey, when set, matches effects to records by a payload field
	// instead of the record's identity: Effect.ID must equal the top-level
	// field EffectsKey of the record's payload (Kinesis data, SQS body,
	// Kafka value, DynamoDB image). Default: Effect.Record names the record.
	EffectsKey string
	// ExactlyOnce adds the invariant effect-once: no record took effect
	// more than once. Lambda delivers at least once, so it holds only for a
	// function that makes its effects idempotent (package idempotency).
	ExactlyOnce bool
	// AllowKillRepeats lets effect-once hold when a record's extra effects
	// each came from an invocation that was killed after the effect (an
	// injected crash or timeout, or an invocation that ran into its
	// deadline, whose process is killed as Lambda kills it): the process
	// died before the record's
	// completion was stored, so the record ran again. No idempotency store
	// closes that window, since the effect is outside it; allow it when the
	// effect's own destination drops repeats (the record's idempotency key
	// passed to it). The check then says how many it allowed. Any other
	// repeat still violates it.
	AllowKillRepeats bool
	// ExpectByID is the fate a record must end with, by its id in its
	// source (the ids of Report.Fates: a Kinesis or DynamoDB sequence
	// number, an SQS message id, a Kafka "<topic>-<partition>@<offset>"):
	// the way to expect one record's fate when it comes from a real source,
	// which has no records line (sluice run --expect id:ID=FATE). It wins
	// over the record's InputRecord.Expect. An id that names no record of
	// the run violates fate-as-expected: an expectation that could not be
	// checked is not a pass.
	ExpectByID map[string]string
	// Allow lists fates (Fates) that every record may end with besides its
	// expectation (InputRecord.Expect, by default processed): a run where
	// poison records are meant to end on-failure allows FateOnFailure. A
	// record whose fate is neither fails the check fate-as-expected.
	Allow []string
	// Quarantine, when set, is the function's own dead letters (the
	// destination its handlers.WithDeadLetters sends to, e.g.
	// QuarantineFile(path) for SLUICE_DLQ_FILE): records the function
	// parked there end FateQuarantined instead of FateProcessed. When it
	// cannot be read, a record that looks processed may have been
	// quarantined: the checks that this changes are not evaluated.
	// Without it a quarantined record looks processed, and, with effects,
	// lost: its effect never happened.
	Quarantine Quarantine
	// Skips, when set, returns what the function's handlers said of the
	// records they answered without running the function (ReadSkips of
	// the file the function's SLUICE_SKIPS_FILE names): those records end
	// FateSkipped, and each claim is checked (an s3:TestEvent's body, a
	// duplicate's idempotency key). Without it such a record looks
	// processed, and, with effects, lost. An error makes the checks it
	// changes not evaluated.
	Skips func() ([]Skip, error)
	// Idempotency, when set, is the function's idempotency store, read to
	// check the claim of a record skipped as a duplicate (see
	// IdempotencyKeys). Without it such a claim cannot be checked unless
	// the record's business key took effect in the run (EffectsKey).
	Idempotency IdempotencyKeys
	// Seed makes fault injection and arrival jitter repeatable.
	Seed uint64
	// WallClock runs the emulated source on the wall clock instead of the
	// virtual clock (waits really wait).
	WallClock bool
	// RetryDelay is how long Lambda waits before retrying a failed stream
	// or Kafka batch. Default 1 s (virtual).
	RetryDelay time.Duration
	// KafkaOnePartitionPerBatch sends one topic-partition per Kafka
	// invocation, the runner's behaviour before events held several.
	// Default false: as Lambda does, an event's records map holds the next
	// batch of several partitions, taken in turn, BatchSize and the 6 MB
	// limit counting across them.
	KafkaOnePartitionPerBatch bool
	// WindowFinalUntilSuccess retries a failing final invocation of a
	// tumbling window until it succeeds, past MaximumRetryAttempts and
	// MaximumRecordAgeInSeconds: the literal reading of "If invocation is
	// unsuccessful, your Lambda function suspends further processing until
	// a successful invocation" (services-kinesis-windows). Default false:
	// the final invocation obeys the mapping's retry limits, as the same
	// page says ("Tumbling windows fully support the existing retry
	// policies maxRetryAttempts and maxRecordAge"), and a window given up
	// sends its records to the on-failure destination.
	WindowFinalUntilSuccess bool
}

// Faults are injected by the runner around the invoker. Which invocations
// get a fault, and where inside it a crash or a timeout lands, are drawn
// from Options.Seed in invocation order, so a run repeats; where in a
// batch a mid-batch kill falls depends on how fast the function runs.
type Faults struct {
	// ErrorRate is the share of invocations that fail with a function error
	// before the function runs (Injected.Error).
	ErrorRate float64
	// CrashRate is the share of invocations whose process is killed
	// (SIGKILL) inside the invocation, as a crash (out of memory, a fatal
	// runtime error) kills it on Lambda: at the hand-over (before the first
	// record, one in five), mid-batch (three in five) or after the
	// function's last effect, before its answer reaches the runner (one in
	// five). A mid-batch moment is drawn uniformly over the invocation's
	// expected duration: its payload's size at the pace (time per byte) of
	// the last 8 invocations the function answered, at most the timeout
	// (none answered yet: at once after the hand-over); one that comes
	// after the function answered lands before the answer. Lambda sees
	// Runtime.ExitError ("signal: killed"); the next invocation in that
	// execution environment starts a new process (a new init, the
	// function's memory gone; other environments run on). Effects done
	// before the kill stay, claims the function took stay in progress.
	//
	// Crash and timeout faults need an invoker that can kill the
	// function's process (a Killer: localtest/invoke.RuntimeAPI); Run
	// refuses them for another.
	CrashRate float64
	// TimeoutRate is the share of invocations that time out: the process
	// is frozen (SIGSTOP) at a moment drawn as a mid-batch crash's, as a
	// function stuck in a call that never returns, and killed (SIGKILL)
	// when the invocation's deadline (Options.FunctionTimeout) passes, as
	// Lambda kills it. Lambda sees Sandbox.Timedout; the next invocation
	// starts a new process. Each one takes the function's timeout in wall
	// time.
	TimeoutRate float64
	// DuplicateRate is the share of successful batches delivered again.
	DuplicateRate float64
}

// Effect is one side effect the function recorded, naming the record it
// came from. Record is the record's identity in its source, which the
// function knows: the SQS messageId, the Kinesis or DynamoDB Streams
// sequence number, or for Kafka "<topic>-<partition>@<offset>" (as
// partial batch responses and Report.Fates name records). ID is the
// payload's id when matching by Options.EffectsKey. Key is the ordering
// key, for people reading the file (the checks take keys from the
// records).
type Effect struct {
	Record string `json:"record,omitempty"`
	// Request is the request id of the invocation that did the effect,
	// when the function writes it (the conformance function does): the
	// report then counts the effects a killed invocation left behind.
	Request string `json:"request,omitempty"`
	ID      string `json:"id,omitempty"`
	Key     string `json:"key,omitempty"`
}
