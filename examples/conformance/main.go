// Command conformance is a Lambda function whose every record says what the
// function should do with it. Tests and the local runner drive it to check
// how Sluice (and Lambda) handle each outcome.
//
// Build it as Lambda runs Go (provided.al2023, binary named bootstrap):
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./examples/conformance
//
// Environment:
//
//	SLUICE_SOURCE        kinesis | dynamodb | sqs | sqs-fifo | kafka, or
//	                     sqs-sns | firehose | sqs-s3 (see PayloadSources)
//	                     (required)
//	SLUICE_EFFECTS_FILE  if set, one JSON line {"record":...,"id":...,"key":...}
//	                     is appended for every record processed successfully:
//	                     record is the record's identity in its source (SQS
//	                     messageId, Kinesis or DynamoDB sequence number, a
//	                     KPL user record's "<sequenceNumber>:<subSequenceNumber>",
//	                     Kafka "<topic>-<partition>@<offset>", an S3
//	                     notification's object "<messageId>#<i>"), id the payload's id
//	                     (left out when it has none), key its ordering key;
//	                     request the invocation's request id, pid the
//	                     process id, invocation the number of invocations
//	                     this process has served (counted in memory: 1 in a
//	                     new process), and "shadow":true for an effect made
//	                     in a shadow replay (handlers.Shadow: the shadow sink)
//	SLUICE_SHADOW        1: the function runs a shadow replay (sluice replay
//	                     --shadow sets it); its effects carry "shadow":true
//	                     and its idempotency keys the prefix shadow#
//	SLUICE_RETRY_BACKOFF if set (a Go duration such as 5ms), the base of the
//	                     in-process retry back-off instead of 50ms, so tests
//	                     with many transient failures run fast
//	SLUICE_IDEMPOTENCY_TABLE
//	                     if set, the DynamoDB table (sluice tables create
//	                     --idempotency NAME) that turns idempotency on, keyed
//	                     by each record's default key; the endpoint and region
//	                     come from the standard AWS environment
//	                     (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION)
//	SLUICE_METRICS_NAMESPACE
//	                     the CloudWatch namespace of the per-batch metrics
//	                     (one Embedded Metric Format line on standard output
//	                     per batch); default Sluice/Conformance: this function
//	                     always writes them
//	SLUICE_DLQ_URL       if set, the SQS queue that quarantined records go to
//	                     (handlers.WithDeadLetters; endpoint from the
//	                     standard AWS environment, AWS_ENDPOINT_URL_SQS)
//	SLUICE_DLQ_FILE      if set (and SLUICE_DLQ_URL is not), the file that
//	                     quarantined records are appended to, one envelope a
//	                     line
//	SLUICE_MAX_ATTEMPTS  with a dead-letter destination: quarantine a record
//	                     once its attempts reach this (default: only
//	                     permanent failures)
//	SLUICE_ATTEMPTS_TABLE
//	                     the DynamoDB table (sluice tables create --attempts
//	                     NAME) where streams, Kafka and SQS FIFO count attempts; in
//	                     memory when unset (which cannot count a crash)
//	SLUICE_IDEMPOTENCY_LEASE
//	                     with SLUICE_IDEMPOTENCY_TABLE, a fixed in-progress lease
//	                     (a Go duration such as 1s), never renewed, instead of
//	                     the renewed 5 s lease, so tests can let a claim expire
//	                     mid-record
//	CONFORMANCE_IDEMPOTENCY
//	                     memory: idempotency on, keyed by each record's
//	                     default key, in this process's memory
//	                     (idempotency.NewMemoryStore): the store a crash
//	                     loses, for tests that show why a deployed function
//	                     needs SLUICE_IDEMPOTENCY_TABLE
//	CONFORMANCE_INIT     fatal: exit at start with log.Fatal; hang: never
//	                     start (for tests of functions that cannot start)
//	CONFORMANCE_IDEMPOTENCY_KEY
//	                     id: with SLUICE_IDEMPOTENCY_TABLE, key idempotency by
//	                     the payload's id (a business key: a producer's
//	                     duplicate takes effect once) instead of the
//	                     record's id in its source
//	SLUICE_SKIPS_FILE    read by the handlers (handlers.EnvSkipsFile): the file
//	                     they tell the local runner in of the records they
//	                     answered without the function (sluice run sets it)
//	CONFORMANCE_DROP     user-records: acknowledge every KPL user record after
//	                     the first of its aggregate without doing its work
//	                     (no effect): the bug a run must catch
//	CONFORMANCE_FIXED    a comma-separated list of actions that succeed
//	                     instead (e.g. exit,fail): the fix deployed before a
//	                     sluice redrive
//	OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//	                     if either is set, the function traces (package
//	                     tracing, tracing.FromEnv): a batch span and a span
//	                     per record, exported over OTLP (http/protobuf) and
//	                     flushed before each answer; OTEL_SERVICE_NAME,
//	                     OTEL_TRACES_SAMPLER (always_on traces a run whose
//	                     trace header says Sampled=0, as sluice run's does)
//	                     and the rest of OpenTelemetry's variables apply
//
// Each record's payload (Kinesis data, SQS body, Kafka value, or the
// DynamoDB image attribute "payload" of type S) is {"id":"...","action":"..."};
// both are optional (no action is "ok"):
//
//	ok             succeed
//	fail           return a plain error
//	permanent      return a permanent error (batch.Permanent)
//	panic          panic
//	exit           exit the process at once (os.Exit(3)): a crash
//	exitafter      take effect (the effects file line), then exit the
//	               process: a crash after the effect, before the record's
//	               outcome (and its idempotency record) is written
//	sleep:<ms>     sleep that long, honouring ctx, then succeed
//	await:<path>   wait until the file path exists, honouring ctx, then
//	               succeed (a test holds a record mid-effect with it)
//	transient:<n>  return a transient error on the first n calls for this id
//	               in this process, then succeed
//	drop           succeed without the effect: a record acknowledged with
//	               its work never done, which a run must report lost
//	claim-skipped:<reason>
//	               succeed without the effect, and tell the runner falsely
//	               (a line in SLUICE_SKIPS_FILE) that the handler answered
//	               it without the function for reason (duplicate,
//	               s3-test-event), which a run must report
//
// A payload that is not such JSON is a decode error.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/fromenv"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/tracing"
)

func main() {
	switch os.Getenv("CONFORMANCE_INIT") {
	case "fatal":
		log.Print("conformance: loading configuration")
		log.Fatal("conformance: asked to fail at init (CONFORMANCE_INIT=fatal)")
	case "hang":
		fmt.Println("conformance: starting, and never finishing (CONFORMANCE_INIT=hang)")
		for {
			time.Sleep(time.Hour) // not select{}: the runtime would call that a deadlock and exit
		}
	}
	// Metrics are always on here: SLUICE_METRICS_NAMESPACE, when set, names
	// the namespace instead of this default.
	opts := []handlers.Option{handlers.WithMetrics(handlers.Metrics{Namespace: "Sluice/Conformance"})}
	if v := os.Getenv("SLUICE_RETRY_BACKOFF"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "conformance: SLUICE_RETRY_BACKOFF=%q is not a positive duration\n", v)
			os.Exit(2)
		}
		opts = append(opts, handlers.WithRetry(batch.RetryPolicy{Retries: 2,
			Backoff: batch.FullJitter(batch.Capped(batch.Exponential(d), 40*d), nil)}))
	}
	// Idempotency and dead letters, as the CDK constructs configure a
	// deployed function: package fromenv reads SLUICE_IDEMPOTENCY_TABLE,
	// SLUICE_DLQ_URL and the rest.
	if src, ok := envSource(os.Getenv("SLUICE_SOURCE")); ok {
		o, err := fromenv.Options(context.Background(), src)
		if err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			os.Exit(2)
		}
		opts = append(opts, o...)
	}
	switch v := os.Getenv("CONFORMANCE_IDEMPOTENCY"); v {
	case "":
	case "memory":
		opts = append(opts, handlers.WithIdempotency(idempotency.NewMemoryStore()))
	default:
		fmt.Fprintf(os.Stderr, "conformance: CONFORMANCE_IDEMPOTENCY=%q: want memory\n", v)
		os.Exit(2)
	}
	switch k := os.Getenv("CONFORMANCE_IDEMPOTENCY_KEY"); k {
	case "":
	case "id":
		o, err := idKey(os.Getenv("SLUICE_SOURCE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "conformance:", err)
			os.Exit(2)
		}
		opts = append(opts, o)
	default:
		fmt.Fprintf(os.Stderr, "conformance: CONFORMANCE_IDEMPOTENCY_KEY=%q: want id (or unset)\n", k)
		os.Exit(2)
	}
	tr, err := tracing.FromEnv(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	opts = append(opts, tr.Options()...)
	h, err := newHandler(os.Getenv("SLUICE_SOURCE"), os.Getenv("SLUICE_EFFECTS_FILE"), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	lambda.Start(h)
}

// envSource is the fromenv source of a SLUICE_SOURCE value; ok is false for
// an unknown one, which newHandler reports.
func envSource(source string) (fromenv.Source, bool) {
	switch source {
	case "sqs", "sqs-fifo", "sqs-sns", "sqs-s3":
		return events.SourceSQS, true
	case "kinesis", "dynamodb", "kafka":
		return fromenv.Source(source), true
	}
	return "", false
}
