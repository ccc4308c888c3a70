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
//	SLUICE_SOURCE        kinesis | dynamodb | sqs | sqs-fifo | kafka (required)
//	SLUICE_EFFECTS_FILE  if set, one JSON line {"id":...,"key":...} is appended
//	                     for every record processed successfully
//
// Each record's payload (Kinesis data, SQS body, Kafka value, or the
// DynamoDB image attribute "payload" of type S) is {"id":"...","action":"..."}:
//
//	ok             succeed
//	fail           return a plain error
//	permanent      return a permanent error (batch.Permanent)
//	panic          panic
//	sleep:<ms>     sleep that long, honouring ctx, then succeed
//	transient:<n>  return a transient error on the first n calls for this id
//	               in this process, then succeed
//
// A payload that is not such JSON is a decode error.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	h, err := newHandler(os.Getenv("SLUICE_SOURCE"), os.Getenv("SLUICE_EFFECTS_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	lambda.Start(h)
}
