// Package tracing traces Sluice handlers with OpenTelemetry: one option,
// On, makes a handler emit, per invocation, a batch span and a span per
// record, each record's span linked to the span of the producer that sent
// it. It is a package of its own so that a function that does not trace
// links no OpenTelemetry: package handlers only declares the hook
// (handlers.Tracer) this package implements.
//
//	lambda.Start(handlers.MustSQS(process, tracing.On()))
//
// # Spans
//
// The spans follow OpenTelemetry's semantic conventions for messaging and
// for FaaS (AWS Lambda):
//
//   - The invocation's span (kind SERVER, named after the function): the
//     span already in the handler's context when there is one (as
//     otellambda puts it there), else one Sluice starts under Lambda's
//     trace header (_X_AMZN_TRACE_ID, or the header aws-lambda-go keeps in
//     the context), with faas.trigger, faas.invocation_id, faas.coldstart,
//     cloud.account.id and aws.lambda.invoked_arn.
//   - The batch span (kind CONSUMER, "process <queue|stream|table|topic>"),
//     its child: messaging.system (aws_sqs, kafka; aws_kinesis and
//     aws_dynamodb_streams, which the conventions do not name),
//     messaging.operation.name and .type "process",
//     messaging.destination.name, messaging.destination.partition.id (the
//     shard), messaging.batch.message_count, faas.trigger, and at its end
//     how many records succeeded, failed, were not attempted, duplicates,
//     quarantined and reported. A function error sets its status to Error.
//     It links to every record's producer (up to the SDK's link limit).
//   - A span per record (kind CONSUMER, the same name), the batch span's
//     child, under which the user's function runs: messaging.message.id
//     (the record's one identity: a KPL user record is
//     "<sequenceNumber>:<subSequenceNumber>", a span of its own),
//     sluice.key, the partition and Kafka offset, and links to its
//     producer.
//
// What Sluice decided shows on the record's span: sluice.outcome,
// sluice.attempts and sluice.reported; an event per in-process retry
// (sluice.retry, with the attempt, error, class and wait); a failed
// record's error (an exception event, status Error, error.type and
// sluice.error.class); sluice.duplicate for a record idempotency skipped;
// sluice.quarantined with the destination, reason, class and attempts;
// sluice.not_attempted.reason "deadline" or "earlier-failure" for a record
// that did not run. A record's span ends when its run returned; spans of
// records that never started start and end with the batch.
//
// # Links to producers
//
// An SQS message links to the span context in its AWSTraceHeader system
// attribute (X-Ray's format: what SQS, SNS and EventBridge pass on) and in
// its traceparent/tracestate message attributes; an SNS notification in
// the body (raw message delivery off) to those in its MessageAttributes.
// A Kafka record links to its traceparent/tracestate headers. Kinesis and
// DynamoDB Streams carry no headers: WithCarrier names where the context
// sits in the payload (JSONCarrier for a JSON payload, AttributeCarrier
// for an item's attributes). WithPropagator changes how attributes,
// headers and carriers are read (W3C Trace Context by default).
//
// # Logs and flushing
//
// The handler's own log lines carry trace_id and span_id of the record (or
// batch) they are about; IDs and NewLogHandler give the user's logger the
// same from the record's context. End flushes the provider (ForceFlush)
// before the handler answers, since Lambda freezes the process after the
// answer: docs/handlers.md has what it costs.
//
// FromEnv builds the provider from OpenTelemetry's standard environment
// variables, for a function's main.
package tracing
