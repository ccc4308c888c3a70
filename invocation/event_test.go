package invocation

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseEvent(t *testing.T) {
	ev, err := ParseEvent(readFile(t, "../events/testdata/sqs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Source != events.SourceSQS || len(ev.Records) != 2 || !bytes.Equal(ev.Payload, bytes.TrimSpace(readFile(t, "../events/testdata/sqs.json"))) {
		t.Fatalf("%+v", ev)
	}
	if got := strings.Join(ev.Items(), ","); got != "059f36b4-87a3-44ab-83d2-661975830a7d,2e1424d4-f796-459a-8184-9c92662be6da" {
		t.Fatalf("items %s", got)
	}
	ev, err = ParseEvent(readFile(t, "../events/testdata/msk.json"))
	if err != nil || ev.Source != events.SourceKafka || strings.Join(ev.Items(), ",") != "mytopic-0@15" {
		t.Fatalf("%v %+v", err, ev)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"an array", `[{"Records":[]}]`, "a JSON array of 1 events"},
		{"two events", `{"Records":[]}{"Records":[]}`, "2 events one after another"},
		{"records", `{"body":"x"}`, "not a Lambda event"},
		{"empty", ``, "not a Lambda event"},
		{"an S3 event", `{"Records":[{"eventSource":"aws:s3"}]}`, `eventSource "aws:s3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvent([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEventVerdict(t *testing.T) {
	sqs, err := ParseEvent(readFile(t, "../events/testdata/sqs.json"))
	if err != nil {
		t.Fatal(err)
	}
	kin, err := ParseEvent(readFile(t, "../events/testdata/kinesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	msk, err := ParseEvent(readFile(t, "../events/testdata/msk.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ev   *Event
		resp Response
		want string
	}{
		{"empty body", sqs, Response{}, "success"},
		{"empty list", sqs, Response{Payload: []byte(`{"batchItemFailures":[]}`)}, "success"},
		{"sqs partial", sqs, Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":"2e1424d4-f796-459a-8184-9c92662be6da"}]}`)},
			"partial: 1 item reported: 2e1424d4-f796-459a-8184-9c92662be6da"},
		{"kinesis partial, reported out of order", kin, Response{Payload: []byte(`{"batchItemFailures":[
			{"itemIdentifier":"49590338271490256608559692540925702759324208523137515618"},
			{"itemIdentifier":"49590338271490256608559692538361571095921575989136588898"}]}`)},
			"partial: 2 items reported: 49590338271490256608559692538361571095921575989136588898, 49590338271490256608559692540925702759324208523137515618"},
		{"unknown id", sqs, Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":"nope"}]}`)},
			`batch failure: batchItemFailures[0].itemIdentifier "nope" is not in the batch`},
		{"not JSON", kin, Response{Payload: []byte(`oops`)}, "batch failure: the response is not valid JSON"},
		{"kafka partial", msk, Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"mytopic-0","offset":15}}]}`)},
			"partial: 1 item reported: mytopic-0@15"},
		{"kafka wrong offset", msk, Response{Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"mytopic-0","offset":16}}]}`)},
			"batch failure: batchItemFailures[0].itemIdentifier mytopic-0@16 is not in the batch"},
		{"function error", sqs, Response{FunctionError: "Unhandled", ErrorType: "x", Payload: []byte(`{"errorType":"errorString","errorMessage":"boom"}`)},
			"function error: errorString: boom"},
		{"exit without a document", sqs, Response{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError"}, "function error: Runtime.ExitError"},
		{"timeout", kin, Response{FunctionError: "Unhandled", TimedOut: true, ErrorType: "Sandbox.Timedout", Payload: []byte("Task timed out after 3.00 seconds")},
			"function error: Sandbox.Timedout: Task timed out after 3.00 seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.ev.Verdict(tc.resp)
			if v.String() != tc.want {
				t.Fatalf("%q, want %q", v.String(), tc.want)
			}
			if v.Failed() != (strings.HasPrefix(tc.want, "batch failure") || strings.HasPrefix(tc.want, "function error")) {
				t.Fatalf("Failed() = %v", v.Failed())
			}
		})
	}
}
