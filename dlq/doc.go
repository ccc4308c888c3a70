// Package dlq quarantines records that cannot be processed: the dead-letter
// envelope (the record exactly as Lambda delivered it, with its source
// coordinates, attempts, last error and who failed it), the Destination
// interface with a file destination (package sqsdest has the SQS one), and
// the counting of attempts across invocations, Lambda's bisection and
// whole-function crashes (AttemptsStore; Memory here,
// package dynamodbattempts for DynamoDB).
//
// handlers.WithDeadLetters wires it into a handler. The rules:
//
//   - A record that fails permanently (batch.Permanent, a decode error) is
//     quarantined at once.
//   - A record that fails otherwise is quarantined once it ran and failed
//     WithMaxAttempts times: a standard SQS queue counts them itself
//     (ApproximateReceiveCount); SQS FIFO queues (whose receive count also
//     counts deliveries spent waiting behind a failing message), streams
//     and Kafka count one per failure in the AttemptsStore.
//   - A stream or Kafka record alone in its batch is counted before it runs
//     (Begin). When an earlier lone delivery went unanswered (the function
//     crashed or timed out) and its attempts reached the limit, it is
//     quarantined without running (reason "crash"). Lambda's
//     BisectBatchOnFunctionError is what isolates such a record; a healthy
//     record that merely headed batches that crashed further on is never
//     counted for them.
//   - Quarantined records count as handled, so the stream moves on. On an
//     ordered source (FIFO group, shard, Kafka partition) each is sent on
//     its own before its lane goes on; on a standard queue they are sent in
//     one Destination.Send after the batch ran. A record whose envelope the
//     destination did not accept is reported as failed instead, and on an
//     ordered source its lane stops there.
//
// Cost: a healthy batch of more than one record makes no request to the
// store or the destination; a batch of one record makes one store request;
// each failed record one more; each quarantined record of an ordered
// source one SendMessageBatch, and on a standard queue each ten (at most
// 1 MiB) one.
//
// docs/dead-letters.md documents the envelope field by field.
package dlq
