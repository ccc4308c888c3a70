// Package batch is the engine behind every Sluice handler: it runs a
// per-record function over a batch under the ordering policy of the source,
// classifies what went wrong, and decides which records to report back to
// Lambda as failed.
//
// The engine works on non-generic Items (an identifier, an ordering key and an
// arrival time); the typed Record handling lives at the edge, in package
// handlers. Handler, HandlerFunc and Middleware are the typed vocabulary the
// edge uses, shaped like net/http's Handler, HandlerFunc and middleware.
//
// # Policies
//
// A Policy says which records may run concurrently, what an earlier failure
// does to later records, and which records are reported (see Report):
//
//   - Independent (SQS standard): records are independent and run with bounded
//     concurrency; every record that did not succeed is reported.
//   - Ordered (SQS FIFO): records run in batch order; after a failure nothing
//     later runs, and the failed record and every later one are reported, as
//     Lambda requires for FIFO queues.
//   - OrderedPerGroup (SQS FIFO, skip-group mode): as Ordered, but a failure
//     stops and reports only the later records of the same message group;
//     other groups go on.
//   - Stream (Kinesis, DynamoDB Streams): records run in sequence order and the
//     batch stops at the first failure, which alone is reported: Lambda
//     restarts the shard from the lowest reported sequence number, so work
//     after it would be wasted and run twice.
//   - StreamPerKey: as Stream, but different ordering keys (partition keys) run
//     concurrently, each key in order; the lowest record that did not succeed
//     is reported, and records after it are not started.
//   - PerPartition (Kafka): each ordering key (topic-partition) runs in order,
//     partitions concurrently; a partition stops at its first failure, and the
//     failed record and every later record of that partition are reported.
//     Reporting the later ones too is correct whether Lambda restarts the
//     partition at the lowest reported offset or retries only what is listed.
//
// # Failures
//
// An error from the per-record function is classified (see Classify):
// permanent errors (Permanent, decode errors) are never retried in process;
// transient errors (Transient) are retried by the Retry middleware with capped
// exponential backoff and full jitter, never past the deadline; any other
// error is a plain failure. A panic becomes a *PanicError for that record.
//
// Before each record the deadline guard compares the time left before the
// Lambda deadline with a margin; when too little is left, that record and all
// records not yet started are reported as not attempted, so the function
// answers before Lambda times it out.
//
// When no record of a non-empty batch made progress, Run returns a function
// error (ErrNoProgress) instead of a partial response, so that Lambda's
// BisectBatchOnFunctionError can split the batch and isolate a poison record.
// Config.ReportNoProgress turns this off.
package batch
