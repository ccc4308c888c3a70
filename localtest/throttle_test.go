package localtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// TestThrottledInvokeIsRetried: an Invoke API that answers 429 twice and
// then succeeds costs no retry and no function error.
func TestThrottledInvokeIsRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"message":"Rate exceeded"}`))
			return
		}
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.Write([]byte(`{"batchItemFailures":[]}`))
	}))
	defer srv.Close()
	inv, err := invoke.InvokeAPI(srv.URL, "fn")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: localtest.KinesisMapping(10, nil), Records: localtest.KinesisRecords(3, localtest.OneKey), Invoker: inv})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || rep.Totals.Invocations != 1 || rep.Totals.Successes != 1 || rep.Totals.Retries != 0 || rep.Totals.Processed != 3 {
		t.Fatalf("calls %d, totals %+v", calls.Load(), rep.Totals)
	}
}
