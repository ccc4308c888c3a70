// Command sluice runs Lambda event source mappings on one machine.
//
//	sluice run --mapping mapping.json --records records.jsonl --handler ./bootstrap \
//	    [--trace trace.jsonl] [--report report.json] [--effects effects.jsonl] \
//	    [--timeout 30s] [--env KEY=VALUE]... [--faults error=0.01,crash=0.01,timeout=0.01,duplicate=0.05]
//
// run emulates the mapping over the records: it batches them as Lambda
// does, invokes the function, reads its answers as Lambda reads them and
// checks invariants at the end. The records file holds one record per line,
// or Lambda events (sam local generate-event output, a logged event) whose
// records are re-batched; the runner assigns their ids, sequence numbers
// and arrival times.
//
//	sluice invoke --event event.json --handler ./bootstrap \
//	    [--env KEY=VALUE]... [--timeout 30s] [--function-name NAME]
//
// invoke sends the file byte for byte (- for standard input), an event or
// anything else, as sam local invoke -e does; prints the function's
// response on stdout and its own output on stderr, then what the mapping
// makes of the answer: success, the items a partial batch response
// reports, or the function error.
//
//	sluice tables create [--idempotency NAME] [--attempts NAME]
//
// tables create makes the DynamoDB tables of handlers.WithIdempotency and of
// handlers.WithDeadLetters' attempts on the endpoint the standard AWS environment names (AWS_ENDPOINT_URL_DYNAMODB,
// AWS_REGION); running it again succeeds.
//
//	sluice redrive (--from-queue URL | --from-file FILE) --handler ./bootstrap \
//	    [--batch-size 1] [--rate 10/s] [--dry-run] [--env KEY=VALUE]... [--timeout 3s]
//
// redrive replays dead-lettered records (the envelopes of package dlq):
// it rebuilds each record's Lambda event byte for byte, invokes the
// function, and removes an envelope only once its record succeeded.
//
//	sluice fetch-failed (--from-queue URL | --from-file FILE) (--to-file FILE | --to-queue URL)
//
// fetch-failed reads Lambda's on-failure records of stream and Kafka
// mappings, which name records without carrying them, reads those records
// back from the stream, and writes envelopes that redrive replays.
//
//	eval "$(sluice local start)"   ...   sluice local stop
//
// local starts the local servers the project installs (DynamoDB Local,
// kinesalite, fauxqs for SQS, SNS and S3) on free ports of 127.0.0.1 in the background and
// prints the AWS_ENDPOINT_URL_* and dummy credential exports that point the
// other commands (and a function under sluice run) at them.
//
//	sluice replay (--kinesis-stream NAME | --dynamodb-stream ARN | --kafka-topic TOPIC --kafka-brokers HOSTS) \
//	    --from POSITION [--to POSITION] --handler ./bootstrap [--shadow] [--checkpoint FILE] [--dry-run]
//
// replay reads a range of a stream's retained history (from a time, a
// sequence number or an offset), sends it in Lambda's event shape, batched
// as the mapping batches it, and records its progress in a checkpoint of
// its own; --shadow runs the function as a shadow consumer.
//
// The handler is a compiled Lambda bootstrap (run behind a Lambda Runtime API
// that sluice hosts; a timeout kills and restarts it, as Lambda does) or an
// http(s):// Lambda Invoke API endpoint (SAM start-lambda, LocalStack, the
// Runtime Interface Emulator). The function inherits sluice's environment
// plus the --env flags, as a function inherits its configuration.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `sluice runs AWS Lambda event source mappings on one machine.

Usage:
  sluice run --mapping FILE --records FILE --handler TARGET [flags]
      emulate the mapping over the records (JSON lines, or Lambda events
      such as sam local generate-event writes)
  sluice invoke --event FILE --handler TARGET [flags]
      send FILE byte for byte, and say what Lambda makes of the answer
  sluice redrive (--from-queue URL | --from-file FILE) --handler TARGET [flags]
      replay dead-lettered records; remove each envelope once it succeeded
  sluice fetch-failed (--from-queue URL | --from-file FILE) (--to-file FILE | --to-queue URL)
      read back the records Lambda's on-failure records name, as envelopes
  sluice replay (--kinesis-stream NAME | --dynamodb-stream ARN | --kafka-topic T --kafka-brokers H)
               --from POSITION [--to POSITION] --handler TARGET [--shadow] [--checkpoint FILE]
      replay a range of a stream's history (not retry: production or shadow)
  sluice tables create [--idempotency NAME] [--attempts NAME]
      create the DynamoDB idempotency and dead-letter attempts tables
      (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION); running it again succeeds
  sluice local (start | stop | env | serve)
      run DynamoDB Local, kinesalite and fauxqs (SQS, SNS, S3) on 127.0.0.1
      for the commands above: eval "$(sluice local start)" exports their endpoints

TARGET is a compiled bootstrap, an http(s):// Lambda Invoke API endpoint
(SAM start-lambda, LocalStack, RIE) or aws:NAME.
Run "sluice COMMAND -h" for the flags.
`

// cli runs one command and returns the exit code: for run, 0 when the run
// finished and every invariant held, 1 when an invariant was violated or the
// run failed; for invoke, 0 when the function answered and nothing failed,
// 1 when it failed or reported records, 3 when it could not be started;
// for redrive and fetch-failed, 0 when nothing is left,
// 1 otherwise; for replay, 0 when the range was replayed, 1 otherwise; 2
// for a usage error.
func cli(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdout, stderr)
	case "invoke":
		return invokeCommand(args[1:], os.Stdin, stdout, stderr)
	case "redrive":
		return redriveCommand(args[1:], stdout, stderr)
	case "fetch-failed":
		return fetchFailedCommand(args[1:], stdout, stderr)
	case "replay":
		return replayCommand(args[1:], stdout, stderr)
	case "tables":
		return tablesCommand(args[1:], stdout, stderr)
	case "local":
		return localCommand(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
	return 2
}
