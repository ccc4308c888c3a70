package invoke_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// An Invoke API endpoint (here a stand-in that reports one failed item)
// invoked once, as `sluice invoke --url` does.
func ExampleInvokeAPI() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		fmt.Fprint(w, `{"batchItemFailures":[{"itemIdentifier":"m2"}]}`)
	}))
	defer srv.Close()

	inv, err := invoke.InvokeAPI(srv.URL, "orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	resp, err := inv.Invoke(context.Background(), invocation.Invocation{Payload: []byte(`{"Records":[]}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("failed: %v, payload: %s\n", resp.Failed(), resp.Payload)
	// Output: failed: false, payload: {"batchItemFailures":[{"itemIdentifier":"m2"}]}
}

// A compiled handler run behind the Runtime API over a file of records, its
// output streamed with a prefix per invocation. (It needs a bootstrap
// binary, so it has no output here.)
func ExampleRuntimeAPI() {
	inv, err := invoke.RuntimeAPI("./bootstrap", []string{"SLUICE_SOURCE=sqs"}, invoke.RuntimeAPILogs(os.Stderr))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inv.Close()
	m := &localtest.Mapping{EventSource: events.SourceSQS, FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Invoker: inv,
		Records: []localtest.InputRecord{{Body: json.RawMessage(`"hello"`)}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Totals.Processed, "processed")
}
