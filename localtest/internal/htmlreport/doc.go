// Package htmlreport writes a run of the local runner as one
// self-contained HTML page (sluice run --html, localtest.Options.HTML):
// the invariants at the top, each violation linked to the records it
// names; counts of invocations by result and of records by fate; a
// timeline per lane (shard, partition, message group or the queue) with
// each invocation a bar, and the bisection splits, retries, checkpoint
// advances, on-failure records, quarantines, filtered records, duplicates
// and kills marked on it; a table of the records, each of which opens its
// path (every invocation it was in, its fate and why).
//
// The page reads nothing from the network: its script and style are
// embedded in it, and its Content-Security-Policy allows no fetch, so it
// opens from a CI artifact as it is. Its data is one JSON document inside
// it, columnar and with record ids front-coded, so a run of 100,000 records
// and 10,000 invocations stays a file of a few megabytes; the timeline
// aggregates invocations into buckets when a view holds more than fit, and
// the records table pages, so what the browser draws stays small whatever
// the run.
//
// The page is built from what a run already says about itself: its
// report (report.json), its trace entries (trace.jsonl, read as JSON, so a
// field a trace entry gains shows in the invocation's details without an
// edit here) and its records in source order with their lanes. What the
// trace does not say outright (where a checkpoint moved, which failure was
// split, after which invocation a record was given up on) is derived by
// small pure functions (derive.go), each with its rule in its comment.
package htmlreport
