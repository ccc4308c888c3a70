// Package batch is the vocabulary a Sluice function author uses: how a
// record's error is classified, what became of a record, and the typed
// Handler, HandlerFunc and Middleware (shaped like net/http's) with the retry
// middleware and its backoffs. The engine that runs a batch under a source's
// ordering policy lives inside the module; package handlers wires it up.
//
// # Errors and their classes
//
// An error returned for a record is classified (see Classify):
//
//   - permanent (Permanent, *DecodeError): the record fails at once and is
//     never retried in process; retrying cannot help.
//   - transient (Transient): the record is retried in process by Retry, with
//     capped exponential backoff and full jitter, never past the deadline,
//     and fails if the retries do not help.
//   - plain (any other error): the record fails; Lambda's own retries apply.
//
// Classify looks for the marker interfaces interface{ Permanent() bool } and
// interface{ Transient() bool } with errors.As, so any error type can declare
// its class without importing batch. Permanent wins over transient.
//
// A panic fails its record with a *PanicError carrying the value and stack.
//
// # Outcomes
//
// Each record of an invocation ends Succeeded, Failed, or NotAttempted. A
// record is not attempted when too little time was left before the Lambda
// deadline (ErrDeadline) or when an earlier record it must follow failed
// (ErrStopped). When no record of a batch succeeded, the handler returns the
// function error ErrNoProgress, so that Lambda's BisectBatchOnFunctionError
// can split the batch and isolate a poison record. Which records are
// reported to Lambda after a failure depends on the source; package
// handlers documents it per source.
package batch
