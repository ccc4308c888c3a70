package localtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
)

// SourceMismatchError stands in for handlers.SourceMismatchError: the
// in-process invoker reports its type as "*localtest.SourceMismatchError".
type SourceMismatchError struct{ Want, Got string }

func (e *SourceMismatchError) Error() string {
	return fmt.Sprintf("a %s handler was given a %s event", e.Want, e.Got)
}

// scripted is an Invoker answering from a list, then repeating the last.
type scripted struct {
	answers []invocation.Response
	calls   int
}

func (s *scripted) Invoke(context.Context, invocation.Invocation) (invocation.Response, error) {
	r := s.answers[min(s.calls, len(s.answers)-1)]
	s.calls++
	return r, nil
}
func (s *scripted) Close() error { return nil }

func initCrash() invocation.Response {
	return invocation.Response{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError", InitFailed: true,
		Payload: errorDocument("Runtime exited with error: exit status 1", "Runtime.ExitError"), Logs: []string{"fatal: no config"}}
}

func TestRunFailures(t *testing.T) {
	ok := invocation.Response{Payload: []byte(`{}`)}
	plainErr := invocation.Response{FunctionError: "Unhandled", ErrorType: "errorString", Payload: errorDocument("boom", "errorString")}
	timeout := invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Payload: errorDocument("Task timed out", "Sandbox.Timedout")}
	initHang := invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, InitFailed: true,
		Payload: errorDocument("init timeout", "Sandbox.Timedout")}
	crash := invocation.Response{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError", Payload: errorDocument("Runtime exited", "Runtime.ExitError")}
	retries := func(m *Mapping) { m.MaximumRetryAttempts = ptr(5) }
	tests := []struct {
		name        string
		answers     []invocation.Response
		kind        string // Failure.Kind, or "" for a run that tested the function
		invocations int
	}{
		{"crash at init stops after three", []invocation.Response{initCrash()}, FailureInit, maxInitFailures},
		{"a hang at init stops at once", []invocation.Response{initHang}, FailureInit, 1},
		{"init that fails twice then starts is fine", []invocation.Response{initCrash(), initCrash(), ok}, "", 3},
		{"init failures after a good start do not stop the run", []invocation.Response{plainErr, initCrash(), initCrash(), initCrash(), ok}, "", 5},
		{"never answered: every invocation timed out", []invocation.Response{timeout}, FailureNoAnswer, 6},
		{"never answered: every invocation crashed", []invocation.Response{crash}, FailureNoAnswer, 6},
		{"ordinary errors are a legitimate test", []invocation.Response{plainErr}, "", 6},
		{"one answer among timeouts is a legitimate test", []invocation.Response{timeout, timeout, plainErr, timeout}, "", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := &scripted{answers: tt.answers}
			rep, _ := run(t, Options{Mapping: kinesisMapping(10, retries), Records: kinesisRecords(3, oneKey), Invoker: inv})
			if rep.Totals.Invocations != tt.invocations {
				t.Fatalf("%d invocations, want %d: %+v", rep.Totals.Invocations, tt.invocations, rep.Totals)
			}
			if tt.kind == "" {
				if rep.Failure != nil {
					t.Fatalf("unexpected failure %+v", rep.Failure)
				}
				return
			}
			if rep.Failure == nil || rep.Failure.Kind != tt.kind || rep.Held() {
				t.Fatalf("failure %+v, held %v; want %s", rep.Failure, rep.Held(), tt.kind)
			}
			for _, inv := range rep.Invariants {
				if inv.Status == StatusHeld {
					t.Fatalf("a failed run holds nothing: %+v", rep.Invariants)
				}
			}
			if rep.LastFailedInvocation == nil || rep.LastFailedInvocation.ErrorType == "" {
				t.Fatalf("the last words are missing: %+v", rep.LastFailedInvocation)
			}
		})
	}
}

func TestRunStopsAtSourceMismatch(t *testing.T) {
	h := fn(func(context.Context, []byte) ([]byte, error) {
		return nil, &SourceMismatchError{Want: "kinesis", Got: "sqs"}
	})
	m := &Mapping{EventSource: events.SourceSQS, FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, tr := run(t, Options{Mapping: m, Records: sqsRecords(5, nil), Invoker: InProcess(h)})
	if rep.Failure == nil || rep.Failure.Kind != FailureSourceMismatch || rep.Held() || rep.Totals.Invocations != 1 {
		t.Fatalf("failure %+v, totals %+v", rep.Failure, rep.Totals)
	}
	f := rep.LastFailedInvocation
	if f == nil || f.ErrorType != "*localtest.SourceMismatchError" || f.ErrorMessage != "a kinesis handler was given a sqs event" ||
		!strings.Contains(rep.Failure.Reason, "cannot handle sqs events") {
		t.Fatalf("last failed invocation %+v, failure %+v", f, rep.Failure)
	}
	if len(tr.entries) != 1 || tr.entries[0].ErrorType != f.ErrorType || tr.entries[0].ErrorMessage != f.ErrorMessage {
		t.Fatalf("trace %+v", tr.entries)
	}
}

func TestIgnoredResponsesAreCounted(t *testing.T) {
	h := fn(func(_ context.Context, p []byte) ([]byte, error) {
		ids, _, _ := sqsIDs(t, p)
		return failuresJSON(ids[0], ids[2]), nil
	})
	m := &Mapping{EventSource: events.SourceSQS, BatchSize: ptr(5)}
	rep, tr := run(t, Options{Mapping: m, Records: sqsRecords(10, nil), Invoker: InProcess(h)})
	if rep.Totals.IgnoredResponses != 2 || rep.Totals.IgnoredRecords != 4 || rep.Totals.Processed != 10 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	for _, e := range tr.entries {
		if !e.Ignored || len(e.Reported) != 2 {
			t.Fatalf("trace %+v", e)
		}
	}
}

func TestRecordShapeIsCheckedAgainstTheSource(t *testing.T) {
	recs := []InputRecord{{Body: json.RawMessage(`"a"`), Line: 1}, {PartitionKey: "k", Data: json.RawMessage(`"b"`), Line: 4}}
	_, err := Run(context.Background(), Options{Mapping: &Mapping{EventSource: events.SourceSQS}, Records: recs, Invoker: InProcess(fn(nil))})
	if err == nil || !strings.Contains(err.Error(), `records line 4: "partitionKey", "data" belong to a Kinesis record`) {
		t.Fatalf("got %v", err)
	}
}

func TestUnprocessedRecordsCarryTheirLine(t *testing.T) {
	recs := kinesisRecords(3, oneKey)
	for i := range recs {
		recs[i].Line = 10 + i
	}
	m := kinesisMapping(10, func(m *Mapping) { m.MaximumRetryAttempts = ptr(0); m.BisectBatchOnFunctionError = ptr(true) })
	rep, _ := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(poisonAt(t, "2"))})
	if len(rep.Unprocessed) != 1 || rep.Unprocessed[0].Line != 11 || rep.Unprocessed[0].Input != 2 || rep.Unprocessed[0].PayloadID != "2" {
		t.Fatalf("unprocessed %+v", rep.Unprocessed)
	}
}

func TestEffectsReadErrorIsNotEvaluated(t *testing.T) {
	rep, _ := run(t, Options{Mapping: kinesisMapping(10, nil), Records: kinesisRecords(2, oneKey), Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil })),
		Effects: func() ([]Effect, error) { return nil, errors.New("effects.jsonl line 3: unexpected end of JSON input") }})
	if rep.Held() || rep.Invariants[0].Status != StatusNotEvaluated || !strings.Contains(rep.Invariants[0].Reason, "line 3") {
		t.Fatalf("%+v", rep.Invariants)
	}
}

func TestEventPayload(t *testing.T) {
	tests := []struct {
		source      events.Source
		event, want string
	}{
		{events.SourceKinesis, `{"kinesis":{"data":"eyJpZCI6MX0="}}`, `{"id":1}`},
		{events.SourceSQS, `{"body":"{\"id\":\"a\"}"}`, `{"id":"a"}`},
		{events.SourceKafka, `{"value":"eyJpZCI6MX0="}`, `{"id":1}`},
		{events.SourceDynamoDB, `{"dynamodb":{"NewImage":{"pk":{"S":"x"},"n":{"N":"5"},"m":{"M":{}}}}}`, `{"n":5,"pk":"x"}`},
		{events.SourceDynamoDB, `{"dynamodb":{"OldImage":{"payload":{"S":"{\"id\":\"d1\"}"}}}}`, `{"id":"d1"}`},
	}
	for _, tt := range tests {
		if got := string(eventPayload(tt.source, json.RawMessage(tt.event))); got != tt.want {
			t.Errorf("%s %s: %s, want %s", tt.source, tt.event, got, tt.want)
		}
	}
}
