//go:build linux

package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/invocation"
)

func newInvokeAPI(t *testing.T, endpoint, name string, opts ...InvokeAPIOption) invocation.Invoker {
	t.Helper()
	inv, err := InvokeAPI(endpoint, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inv.Close() })
	return inv
}

// Against the real Runtime Interface Emulator: function errors come back
// without X-Amz-Function-Error, as a 200 error document, a 502 after a
// crash, and plain text after a timeout.
func TestInvokeAPIAgainstRIE(t *testing.T) {
	t.Parallel()
	bin := rie.BuildHandler(t, conformancePkg)

	t.Run("partial batch response and handler error", func(t *testing.T) {
		t.Parallel()
		fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "sqs"), rie.Timeout(5*time.Second))
		inv := newInvokeAPI(t, fn.Endpoint(), "")
		raw, ids := conformanceEvent(t, "sqs", "ok", "fail")
		resp := invoke(t, inv, raw, 5*time.Second)
		if resp.Failed() || !slices.Equal(reportedIDs(t, resp.Payload), ids[1:]) {
			t.Fatalf("want a partial response reporting %v, got %+v (%s)", ids[1:], resp, resp.Payload)
		}
		raw, _ = conformanceEvent(t, "sqs", "fail", "transient:9")
		resp = invoke(t, inv, raw, 5*time.Second)
		if resp.FunctionError != "Unhandled" || resp.ErrorType == "" || resp.TimedOut {
			t.Fatalf("want a function error, got %+v (%s)", resp, resp.Payload)
		}
	})
	t.Run("crash at init", func(t *testing.T) {
		t.Parallel()
		fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "bogus"), rie.Timeout(5*time.Second))
		inv := newInvokeAPI(t, fn.Endpoint(), "function")
		raw, _ := conformanceEvent(t, "sqs", "ok")
		resp := invoke(t, inv, raw, 5*time.Second)
		if resp.FunctionError != "Unhandled" || resp.ErrorType != "Runtime.ExitError" {
			t.Fatalf("want Runtime.ExitError, got %+v (%s)", resp, resp.Payload)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		fn := rie.Start(t, testBinary(t), rie.Env(testFunctionEnv, "echo"), rie.Timeout(time.Second))
		inv := newInvokeAPI(t, fn.Endpoint(), "")
		resp := invoke(t, inv, []byte("hang"), time.Second)
		if !resp.TimedOut || resp.ErrorType != "Sandbox.Timedout" || resp.FunctionError != "Unhandled" {
			t.Fatalf("want a timeout, got %+v (%s)", resp, resp.Payload)
		}
		// RIE resets the sandbox after a timeout; an invoke that arrives
		// while it still does is refused with Sandbox.Failure
		// (ErrGateCanceled), so a few such answers are waited out.
		resp = invoke(t, inv, []byte(`"after"`), time.Second)
		for try := 0; try < 20 && resp.ErrorType == "Sandbox.Failure" && strings.Contains(string(resp.Payload), "ErrGateCanceled"); try++ {
			time.Sleep(100 * time.Millisecond)
			resp = invoke(t, inv, []byte(`"after"`), time.Second)
		}
		if resp.Failed() || string(resp.Payload) != `"after"` {
			t.Fatalf("after the timeout: %+v (%s)", resp, resp.Payload)
		}
	})
}

// A server that answers as AWS Lambda's Invoke API does.
func TestInvokeAPIAWSStyle(t *testing.T) {
	t.Parallel()
	var signed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "test-signature" {
			signed.Add(1)
		}
		if r.URL.EscapedPath() == "/2015-03-31/functions/missing/invocations" {
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException:http://internal.amazon.com/coral/com.amazonaws.awsgirlambda/")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"Type":"User","message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:missing"}`)
			return
		}
		if r.URL.EscapedPath() != "/2015-03-31/functions/orders%2Fv2/invocations" || r.Method != http.MethodPost {
			t.Errorf("unexpected %s %s", r.Method, r.URL.EscapedPath())
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		switch string(body) {
		case "fail":
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			io.WriteString(w, `{"errorMessage":"boom","errorType":"errorString"}`)
		case "timeout":
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			io.WriteString(w, `{"errorMessage":"2024-05-01T10:00:00.000Z 0c5d Task timed out after 3.00 seconds"}`)
		case "slow":
			time.Sleep(700 * time.Millisecond)
		case "looks-like-error":
			io.WriteString(w, `{"errorMessage":"not an error: a result"}`)
		default:
			w.Write(body)
		}
	}))
	defer srv.Close()
	inv := newInvokeAPI(t, srv.URL+"/", "orders/v2", InvokeAPIGrace(100*time.Millisecond), InvokeAPIConcurrency(4),
		InvokeAPISigner(func(r *http.Request, body []byte) error {
			r.Header.Set("Authorization", "test-signature")
			return nil
		}))

	for _, tc := range []struct {
		payload string
		want    invocation.Response
	}{
		{`{"ok":1}`, invocation.Response{Payload: []byte(`{"ok":1}`)}},
		{"fail", invocation.Response{FunctionError: "Unhandled", ErrorType: "errorString"}},
		{"timeout", invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true}},
		{"looks-like-error", invocation.Response{Payload: []byte(`{"errorMessage":"not an error: a result"}`)}},
		{"slow", invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true}},
	} {
		t.Run(tc.payload, func(t *testing.T) {
			resp := invoke(t, inv, []byte(tc.payload), 500*time.Millisecond)
			if resp.FunctionError != tc.want.FunctionError || resp.ErrorType != tc.want.ErrorType || resp.TimedOut != tc.want.TimedOut ||
				(tc.want.Payload != nil && string(resp.Payload) != string(tc.want.Payload)) {
				t.Fatalf("got %+v (%s), want %+v", resp, resp.Payload, tc.want)
			}
		})
	}
	if n := signed.Load(); n != 5 {
		t.Errorf("%d signed requests, want 5", n)
	}

	missing := newInvokeAPI(t, srv.URL, "missing")
	_, err := missing.Invoke(context.Background(), invocation.Invocation{Payload: []byte("{}")})
	var ae *InvokeAPIError
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type != "ResourceNotFoundException" {
		t.Fatalf("want an *InvokeAPIError 404 ResourceNotFoundException, got %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := inv.Invoke(ctx, invocation.Invocation{Payload: []byte("{}")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestInvokeAPIRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	inv := newInvokeAPI(t, url, "")
	if _, err := inv.Invoke(context.Background(), invocation.Invocation{Payload: []byte("{}"), Timeout: time.Second}); err == nil {
		t.Fatal("want an error from a closed endpoint")
	}
}

func TestInvokeAPIOptions(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		opts     []InvokeAPIOption
	}{
		{"127.0.0.1:9000", nil},
		{"ftp://host", nil},
		{"http://h", []InvokeAPIOption{InvokeAPIGrace(-1)}},
		{"http://h", []InvokeAPIOption{InvokeAPIConcurrency(0)}},
		{"http://h", []InvokeAPIOption{InvokeAPIHTTPClient(nil)}},
	} {
		if _, err := InvokeAPI(tc.endpoint, "", tc.opts...); err == nil {
			t.Errorf("InvokeAPI(%q, %d options): want an error", tc.endpoint, len(tc.opts))
		}
	}
}

func TestInvokeAPIClassify(t *testing.T) {
	h := func(kv ...string) http.Header {
		m := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			m.Set(kv[i], kv[i+1])
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		status   int
		header   http.Header
		body     string
		fnErr    string
		errType  string
		timedOut bool
		apiErr   bool
	}{
		{"success", 200, h(), `{"batchItemFailures":[]}`, "", "", false, false},
		{"empty success", 200, h(), ``, "", "", false, false},
		{"null", 200, h(), `null`, "", "", false, false},
		{"header error", 200, h("X-Amz-Function-Error", "Unhandled"), `{"errorType":"MyErr","errorMessage":"x"}`, "Unhandled", "MyErr", false, false},
		{"header handled", 200, h("X-Amz-Function-Error", "Handled"), `{"errorMessage":"x"}`, "Handled", "", false, false},
		{"aws timeout", 200, h("X-Amz-Function-Error", "Unhandled"), `{"errorMessage":"2024-01-01T00:00:00Z id Task timed out after 3.00 seconds"}`, "Unhandled", "Sandbox.Timedout", true, false},
		{"aws typed timeout", 200, h("X-Amz-Function-Error", "Unhandled"), `{"errorType":"Sandbox.Timedout","errorMessage":"RequestId: x Error: Task timed out after 3.00 seconds"}`, "Unhandled", "Sandbox.Timedout", true, false},
		{"rie error", 200, h(), `{"errorMessage":"boom","errorType":"errorString"}`, "Unhandled", "errorString", false, false},
		{"rie error with stack", 200, h(), `{"errorMessage":"boom","errorType":"string","stackTrace":[]}`, "Unhandled", "string", false, false},
		{"rie timeout", 200, h(), `Task timed out after 1.00 seconds`, "Unhandled", "Sandbox.Timedout", true, false},
		{"rie crash", 502, h(), `{"errorMessage":"RequestId: x Error: Runtime exited with error: exit status 2","errorType":"Runtime.ExitError"}`, "Unhandled", "Runtime.ExitError", false, false},
		{"error-shaped with more keys", 200, h(), `{"errorMessage":"x","other":1}`, "", "", false, false},
		{"error-shaped but trusted", 200, h("X-Amz-Executed-Version", "$LATEST"), `{"errorMessage":"x"}`, "", "", false, false},
		{"throttled", 429, h("X-Amzn-ErrorType", "TooManyRequestsException"), `{"message":"Rate exceeded"}`, "", "", false, true},
		{"service 502", 502, h("X-Amzn-ErrorType", "EC2ThrottledException"), `{"message":"x"}`, "", "", false, true},
		{"rie init crash", 502, h(), ``, "Unhandled", "Runtime.ExitError", false, false},
		{"502 text", 502, h(), `Bad Gateway`, "Unhandled", "Runtime.ExitError", false, false},
		{"500 typed body", 500, h(), `{"__type":"ServiceException","message":"x"}`, "", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := classifyInvokeResponse(tc.status, tc.header, []byte(tc.body), time.Millisecond)
			if tc.apiErr {
				var ae *InvokeAPIError
				if !errors.As(err, &ae) || ae.StatusCode != tc.status || ae.Type == "" {
					t.Fatalf("want an *InvokeAPIError, got %v (%+v)", err, resp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.FunctionError != tc.fnErr || resp.ErrorType != tc.errType || resp.TimedOut != tc.timedOut {
				t.Fatalf("got %+v (%s)", resp, resp.Payload)
			}
			if resp.Failed() && !json.Valid(resp.Payload) {
				t.Fatalf("error payload is not JSON: %s", resp.Payload)
			}
		})
	}
}

func FuzzInvokeAPIClassify(f *testing.F) {
	f.Add(200, "", `{"errorMessage":"boom","errorType":"errorString"}`)
	f.Add(200, "Unhandled", `Task timed out after 1.00 seconds`)
	f.Add(502, "", `{"errorType":"Runtime.ExitError"}`)
	f.Add(404, "", `{"Type":"User"}`)
	f.Fuzz(func(t *testing.T, status int, fnErr, body string) {
		hdr := http.Header{}
		if fnErr != "" {
			hdr.Set("X-Amz-Function-Error", fnErr)
		}
		resp, err := classifyInvokeResponse(status, hdr, []byte(body), 0)
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprint(status)) {
				t.Fatalf("error does not name the status: %v", err)
			}
			return
		}
		if resp.TimedOut && !resp.Failed() {
			t.Fatal("a timeout that is not a failure")
		}
	})
}
