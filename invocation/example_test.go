package invocation_test

import (
	"fmt"
	"log"

	"github.com/sluicehq/sluice/invocation"
)

// An SQS event of two messages, and three answers to it read as an event
// source mapping with ReportBatchItemFailures reads them: a partial batch
// response naming one message, an answer that is not a partial batch
// response (the whole batch fails), and a function error.
func ExampleEvent_Verdict() {
	ev, err := invocation.ParseEvent([]byte(`{"Records": [
		{"messageId": "m1", "eventSource": "aws:sqs", "body": "a"},
		{"messageId": "m2", "eventSource": "aws:sqs", "body": "b"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Source, ev.Items())
	for _, resp := range []invocation.Response{
		{Payload: []byte(`{"batchItemFailures": [{"itemIdentifier": "m2"}]}`)},
		{Payload: []byte(`{"batchItemFailures": [{"itemIdentifier": "m9"}]}`)},
		{Payload: []byte(`{"errorType": "TimeoutError", "errorMessage": "db down"}`), FunctionError: "Unhandled"},
	} {
		v := ev.Verdict(resp)
		fmt.Printf("%s (retry the whole batch: %v)\n", v, v.Failed())
	}
	// Output:
	// sqs [m1 m2]
	// partial: 1 item reported: m2 (retry the whole batch: false)
	// batch failure: batchItemFailures[0].itemIdentifier "m9" is not in the batch (retry the whole batch: true)
	// function error: TimeoutError: db down (retry the whole batch: true)
}
