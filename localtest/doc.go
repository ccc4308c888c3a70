// Package localtest emulates one AWS Lambda event source mapping on one
// machine: it reads records from a source, batches them as Lambda does,
// invokes a handler, reads its answer as Lambda reads it, and applies
// Lambda's rules for checkpoints, retries, bisection, record age, on-failure
// destinations, SQS visibility and redrive, FIFO group blocking and Kafka
// modes. A run ends with a Report (totals, on-failure records in AWS's
// shape, checkpoints, what is left in a queue) and a trace of every
// invocation, and checks invariants: no record lost, per-key order of
// first effects kept, every record ended as expected (processed, unless
// InputRecord.Expect or Options.Allow names another fate: Fates).
//
// The rules are those of docs/semantics.md (the event source mapping rules
// the project is correct against, with their AWS sources). Where AWS leaves
// a rule open the runner picks the conservative reading and offers the
// other as a named option of Options.
//
// Words for how things end: one word per thing, each with its constants
// (docs/architecture.md, "Words for how things end", has them all, with
// package batch's and package invocation's).
//
//   - A record has a fate (Fates: FateProcessed, FateSkipped,
//     FateQuarantined, FateDeadLettered, FateOnFailure, FateFiltered,
//     FateLeft): what became of it by the end of the run. A user record of
//     a KPL aggregate is a record of the run, named
//     "<sequenceNumber>:<subSequenceNumber>", with a fate of its own. Report.Fates, RecordFate.Fate,
//     InputRecord.Expect and Options.Allow speak of fates, and the fate
//     check passes when every record ended with one it was allowed.
//   - An invocation has a result (ResultSuccess, ResultPartial,
//     ResultFunctionError, ResultTimeout): how Lambda read the function's
//     answer. TraceEntry.Result and FailedInvocation.Result carry it; an
//     answer Lambda cannot read as a partial batch response is a
//     ResultFunctionError whose TraceEntry.Error says why. (Package
//     invocation's Verdict says the same of one event outside a run, as
//     sluice invoke and redrive print it; its OutcomeBatchFailure is that
//     unreadable answer.)
//   - A check has a status (StatusHeld, StatusViolated,
//     StatusNotEvaluated) in InvariantResult.Status.
//   - A run that could not test the function has a failure kind
//     (FailureInit, FailureNoAnswer, FailureSourceMismatch) in
//     Report.Failure.
//
// A run is a test verdict, so it never reports success it has not shown:
// an invariant that cannot be evaluated (no effects given, effects that
// cannot be read or matched to records, no effects at all although records
// were acknowledged, the function's dead letters unreadable) has Status
// StatusNotEvaluated; a run whose function never
// started, never answered or cannot handle the source has a Failure; a run
// that stopped early is Stopped. Report.Held is false in each case.
//
// Where things live: this package is the engine and what a Go test calls
// (Run, Options, Mapping, records and event files, filtering, the emulated
// sources, the in-process invoker, the file destinations, the report, trace
// and invariants), and the interfaces it needs from the rest: StreamSource,
// Queue, KafkaSource. It links no AWS SDK service client and no Kafka
// client. What it shares with the rooms beside it, and with the operations
// tools in dlq, lives below all of them:
//
//	invocation             Invoker, Invocation, Response; Lambda events
//	                       (ParseEvent) and how Lambda reads an answer
//	                       (Verdict); stream, queue and Kafka records
//	localtest/onfailure    the on-failure Destination contract
//
// The rooms beside it import those, never this package (their tests do):
//
//	localtest/source       real streams, queues and Kafka clusters
//	localtest/destination  on-failure destinations on SQS, S3 and Kafka
//	localtest/invoke       the Runtime API and Invoke API invokers
//
// Faults: injected function errors and duplicate deliveries work with every
// invoker; injected crashes and timeouts kill the function's process inside
// an invocation (see Faults), so they need an invoker that can (a Killer:
// localtest/invoke.RuntimeAPI), and Run refuses them for another.
//
// Time: sources read from files or memory run on a virtual clock that
// skips waits (visibility timeouts, retry back-off, batching windows), so a
// run that spans hours of Lambda time takes seconds; sources on real
// endpoints run on the wall clock.
package localtest
