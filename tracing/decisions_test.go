package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
)

type action struct {
	ID string `json:"id"`
	Do string `json:"do"`
}

// act is the function of these tests: each record says what it does.
func act(transient map[string]int) func(ctx context.Context, a action) error {
	return func(ctx context.Context, a action) error {
		switch a.Do {
		case "fail":
			return errors.New("charge declined")
		case "permanent":
			return batch.Permanent(errors.New("amount must be positive"))
		case "panic":
			panic("boom")
		case "transient":
			if transient[a.ID] > 0 {
				transient[a.ID]--
				return batch.Transient(errors.New("throttled"))
			}
		}
		return nil
	}
}

func sqsEvent(acts ...action) (sevents.SQSBuilder, []string) {
	b := sevents.SQSBuilder{}
	for _, a := range acts {
		m, _ := json.Marshal(a)
		b.Add(string(m))
	}
	var ids []string
	for _, r := range b.Event().Records {
		ids = append(ids, r.MessageId)
	}
	return b, ids
}

// What Sluice decided shows on each record's span: retries as events, a
// failure's error and class, a panic, success after retries.
func TestDecisionsSQS(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	f := act(map[string]int{"t": 2})
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error { return f(ctx, m.Value) },
		append(opts(r, logger), handlers.WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Millisecond)}), handlers.WithConcurrency(1))...)
	b, ids := sqsEvent(action{"ok", ""}, action{"t", "transient"}, action{"f", "fail"}, action{"p", "permanent"}, action{"x", "panic"})
	ev := b.Event()
	out, err := invoke(t, lambdaCtx("r"), h, ev)
	if err != nil {
		t.Fatal(err)
	}
	set := spansOf(t, r)
	ok, tr, fail, perm, pan := set.records[ids[0]], set.records[ids[1]], set.records[ids[2]], set.records[ids[3]], set.records[ids[4]]

	if n := len(eventsNamed(tr, "sluice.retry")); n != 2 {
		t.Errorf("transient record: %d retry events, want 2", n)
	}
	for _, e := range eventsNamed(tr, "sluice.retry") {
		var class string
		for _, kv := range e.Attributes {
			if kv.Key == "sluice.error.class" {
				class = kv.Value.AsString()
			}
		}
		if class != "transient" {
			t.Errorf("retry event class %q", class)
		}
	}
	if got := str(tr, "sluice.attempts"); got != "3" {
		t.Errorf("transient record: attempts %s, want 3", got)
	}
	if tr.Status().Code == codes.Error || str(tr, "sluice.outcome") != "succeeded" {
		t.Errorf("transient record that then succeeded: status %v outcome %s", tr.Status(), str(tr, "sluice.outcome"))
	}
	check := func(name string, s sdktrace.ReadOnlySpan, class, etype, msg string) {
		t.Helper()
		if s.Status().Code != codes.Error {
			t.Errorf("%s: status %v, want Error", name, s.Status())
		}
		if got := str(s, "sluice.error.class"); got != class {
			t.Errorf("%s: class %q, want %q", name, got, class)
		}
		if got := str(s, "error.type"); got != etype {
			t.Errorf("%s: error.type %q, want %q", name, got, etype)
		}
		if got := str(s, "sluice.outcome"); got != "failed" {
			t.Errorf("%s: outcome %q", name, got)
		}
		if got := str(s, "sluice.reported"); got != "true" {
			t.Errorf("%s: reported %q", name, got)
		}
		if len(eventsNamed(s, "exception")) != 1 {
			t.Errorf("%s: no exception event", name)
		}
		if msg != "" && !strings.Contains(s.Status().Description, msg) {
			t.Errorf("%s: status %q does not say %q", name, s.Status().Description, msg)
		}
	}
	check("plain failure", fail, "plain", "plain", "charge declined")
	check("permanent failure", perm, "permanent", "permanent", "amount must be positive")
	check("panic", pan, "plain", "panic", "boom")
	if ok.Status().Code != codes.Unset || str(ok, "sluice.outcome") != "succeeded" {
		t.Errorf("ok record: %v %s", ok.Status(), str(ok, "sluice.outcome"))
	}
	for k, want := range map[string]string{"sluice.succeeded": "2", "sluice.failed": "3", "sluice.reported": "3"} {
		if got := str(set.batch, k); got != want {
			t.Errorf("batch %s = %s, want %s (response %s)", k, got, want, out)
		}
	}
	if set.batch.Status().Code == codes.Error {
		t.Error("a partial batch response is no function error")
	}
}

// On a stream, records after a failure are not attempted: their spans say
// so (an earlier failure), and so do those cut by the deadline guard.
func TestNotAttempted(t *testing.T) {
	t.Run("earlier failure", func(t *testing.T) {
		r := newRecorder(t)
		logger, _ := quiet()
		f := act(nil)
		h := handlers.MustKinesis(func(ctx context.Context, k handlers.KinesisRecord[action]) error { return f(ctx, k.Value) }, opts(r, logger)...)
		b := &sevents.KinesisBuilder{}
		for _, a := range []action{{"1", ""}, {"2", "fail"}, {"3", ""}} {
			m, _ := json.Marshal(a)
			b.Add("pk", m)
		}
		ev := b.Event()
		if _, err := invoke(t, lambdaCtx("r"), h, ev); err != nil {
			t.Fatal(err)
		}
		set := spansOf(t, r)
		third := set.records[ev.Records[2].Kinesis.SequenceNumber]
		if third == nil {
			t.Fatal("the record not attempted has no span")
		}
		if got := str(third, "sluice.outcome"); got != "not-attempted" {
			t.Errorf("outcome %q", got)
		}
		if got := str(third, "sluice.not_attempted.reason"); got != "earlier-failure" {
			t.Errorf("reason %q, want earlier-failure", got)
		}
		if got := str(third, "sluice.attempts"); got != "0" {
			t.Errorf("attempts %q", got)
		}
		if got := str(set.batch, "sluice.not_attempted"); got != "1" {
			t.Errorf("batch not_attempted %q", got)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		r := newRecorder(t)
		logger, _ := quiet()
		h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error { return nil },
			append(opts(r, logger), handlers.WithDeadlineMargin(time.Hour), handlers.WithPartialResponseWhenNoneSucceed())...)
		b, ids := sqsEvent(action{"1", ""}, action{"2", ""})
		ctx, cancel := context.WithTimeout(lambdaCtx("r"), time.Minute)
		defer cancel()
		if _, err := invoke(t, ctx, h, b.Event()); err != nil {
			t.Fatal(err)
		}
		set := spansOf(t, r)
		for _, id := range ids {
			s := set.records[id]
			if s == nil {
				t.Fatalf("record %s has no span", id)
			}
			if got := str(s, "sluice.not_attempted.reason"); got != "deadline" {
				t.Errorf("record %s: reason %q, want deadline", id, got)
			}
			if got := str(s, "sluice.reported"); got != "true" {
				t.Errorf("record %s: reported %q", id, got)
			}
		}
	})
}

// A batch in which nothing succeeded answers with a function error: the
// batch and invocation spans say so.
func TestFunctionError(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	f := act(nil)
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error { return f(ctx, m.Value) }, opts(r, logger)...)
	b, _ := sqsEvent(action{"1", "fail"})
	if _, err := invoke(t, lambdaCtx("r"), h, b.Event()); err == nil {
		t.Fatal("no function error")
	}
	set := spansOf(t, r)
	if set.batch.Status().Code != codes.Error || str(set.batch, "sluice.function_error") != "true" || str(set.batch, "error.type") != "no_progress" {
		t.Errorf("batch span: %v function_error=%s error.type=%s", set.batch.Status(), str(set.batch, "sluice.function_error"), str(set.batch, "error.type"))
	}
	if set.invocation.Status().Code != codes.Error {
		t.Errorf("invocation span: %v", set.invocation.Status())
	}
}

// With idempotency, a record whose effect already completed is skipped:
// its span says duplicate.
func TestDuplicateSkipped(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	runs := 0
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error { runs++; return nil },
		append(opts(r, logger), handlers.WithIdempotency(idempotency.NewMemoryStore()))...)
	b, ids := sqsEvent(action{"1", ""})
	for range 2 {
		if _, err := invoke(t, lambdaCtx("r"), h, b.Event()); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Fatalf("the function ran %d times, want 1", runs)
	}
	var dup, first int
	for _, s := range r.Ended() {
		if str(s, "messaging.message.id") != ids[0] {
			continue
		}
		if str(s, "sluice.duplicate") == "true" {
			dup++
			if str(s, "sluice.skipped") != handlers.SkipDuplicate {
				t.Errorf("sluice.skipped %q on a duplicate", str(s, "sluice.skipped"))
			}
			if len(eventsNamed(s, "sluice.duplicate")) != 1 {
				t.Error("no duplicate event")
			}
		} else {
			first++
		}
	}
	if dup != 1 || first != 1 {
		t.Errorf("%d duplicate spans and %d others, want 1 and 1", dup, first)
	}
}

// A record the handler answers without the function (the s3:TestEvent
// message) says so, and why, on its span.
func TestSkippedShows(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	runs := 0
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[handlers.S3Notification]) error { runs++; return nil }, opts(r, logger)...)
	b := sevents.SQSBuilder{}
	b.Add(`{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-12-06T07:00:00.000Z","Bucket":"orders","RequestId":"R","HostId":"H"}`)
	if _, err := invoke(t, lambdaCtx("r"), h, b.Event()); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Fatalf("the function ran %d times for a test event", runs)
	}
	var skipped int
	for _, s := range r.Ended() {
		if str(s, "sluice.skipped") == handlers.SkipS3TestEvent && len(eventsNamed(s, "sluice.skipped")) == 1 {
			skipped++
		}
	}
	if skipped != 1 {
		t.Errorf("%d spans say the test event was skipped, want 1", skipped)
	}
}

// A record quarantined in the dead-letter destination says where, why and
// after how many attempts; on an ordered source and on a standard queue.
func TestQuarantined(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		name := "standard"
		if fifo {
			name = "fifo"
		}
		t.Run(name, func(t *testing.T) {
			r := newRecorder(t)
			logger, _ := quiet()
			path := filepath.Join(t.TempDir(), "dead.jsonl")
			dest, err := dlq.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer dest.Close()
			f := act(nil)
			h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error { return f(ctx, m.Value) },
				append(opts(r, logger), handlers.WithDeadLetters(dest))...)
			b, ids := sqsEvent(action{"1", ""}, action{"2", "permanent"})
			if fifo {
				b.QueueARN = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
				b2, _ := sqsEvent()
				b2.QueueARN = b.QueueARN
				for _, a := range []action{{"1", ""}, {"2", "permanent"}} {
					m, _ := json.Marshal(a)
					b2.AddFIFO(string(m), "g", "")
				}
				b = b2
				ids = nil
				for _, m := range b.Event().Records {
					ids = append(ids, m.MessageId)
				}
			}
			out, err := invoke(t, lambdaCtx("r"), h, b.Event())
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != `{"batchItemFailures":[]}` {
				t.Errorf("response %s: a quarantined record is handled", out)
			}
			s := spansOf(t, r).records[ids[1]]
			for k, want := range map[string]string{"sluice.quarantined": "true", "sluice.quarantine.destination": path,
				"sluice.quarantine.reason": dlq.ReasonPermanent, "sluice.error.class": "permanent", "sluice.quarantine.attempts": "1",
				"sluice.outcome": "succeeded", "sluice.reported": "false"} {
				if got := str(s, k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if len(eventsNamed(s, "sluice.quarantined")) != 1 {
				t.Error("no quarantined event")
			}
		})
	}
}

// refusing is a dead-letter destination that accepts nothing.
type refusing struct{}

func (refusing) Send(context.Context, []*dlq.Envelope) error { return errors.New("queue unavailable") }

// A quarantine the destination did not accept is no quarantine: the span
// shows the record failed and reported, with the send's error.
func TestQuarantineRevoked(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	f := act(nil)
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[action]) error { return f(ctx, m.Value) },
		append(opts(r, logger), handlers.WithDeadLetters(refusing{}))...)
	b, ids := sqsEvent(action{"1", ""}, action{"2", "permanent"})
	if _, err := invoke(t, lambdaCtx("r"), h, b.Event()); err != nil {
		t.Fatal(err)
	}
	s := spansOf(t, r).records[ids[1]]
	if str(s, "sluice.quarantined") != "" || str(s, "sluice.outcome") != "failed" || str(s, "sluice.reported") != "true" {
		t.Errorf("quarantined=%q outcome=%q reported=%q", str(s, "sluice.quarantined"), str(s, "sluice.outcome"), str(s, "sluice.reported"))
	}
	if !strings.Contains(s.Status().Description, "queue unavailable") {
		t.Errorf("status %q does not say why the quarantine failed", s.Status().Description)
	}
}
