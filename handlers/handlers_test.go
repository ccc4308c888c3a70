package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
)

// msg is the test payload: {"id":..., "action":...}.
type msg struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

func payload(id, action string) []byte {
	b, _ := json.Marshal(msg{id, action})
	return b
}

// act performs a test action.
func act(action string) error {
	switch action {
	case "ok":
		return nil
	case "fail":
		return errors.New("asked to fail")
	case "permanent":
		return batch.Permanent(errors.New("asked to fail permanently"))
	case "panic":
		panic("asked to panic")
	}
	return fmt.Errorf("unknown action %q", action)
}

func quiet() []Option {
	return []Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithoutRetry()}
}

func opts(extra ...Option) []Option { return append(quiet(), extra...) }

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "events", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failures parses a string-identifier partial batch response.
func failures(t *testing.T, out []byte) []string {
	t.Helper()
	var r events.KinesisEventResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	ids := []string{}
	for _, f := range r.BatchItemFailures {
		if f.ItemIdentifier == "" {
			t.Fatalf("empty itemIdentifier in %s: Lambda would fail the whole batch", out)
		}
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func kinesisTestEvent(actions ...string) ([]byte, []string) {
	b := &sevents.KinesisBuilder{}
	for i, a := range actions {
		b.Add(fmt.Sprintf("pk-%d", i%3), payload(fmt.Sprint(i), a))
	}
	ev := b.Event()
	raw, _ := json.Marshal(ev)
	seqs := make([]string, len(ev.Records))
	for i, r := range ev.Records {
		seqs[i] = r.Kinesis.SequenceNumber
	}
	return raw, seqs
}

type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(id string) {
	r.mu.Lock()
	r.seen = append(r.seen, id)
	r.mu.Unlock()
}

func TestKinesisReportsFirstFailureAndStops(t *testing.T) {
	tests := []struct {
		name    string
		actions []string
		ran     int // records the function saw
		report  []int
		fnErr   bool
	}{
		{"all ok", []string{"ok", "ok", "ok"}, 3, nil, false},
		{"plain failure in the middle", []string{"ok", "fail", "ok", "ok"}, 2, []int{1}, false},
		{"permanent failure", []string{"ok", "ok", "permanent", "ok"}, 3, []int{2}, false},
		{"panic fails its record", []string{"ok", "panic", "ok"}, 2, []int{1}, false},
		{"bad JSON payload fails only that record", []string{"ok", "!notjson", "ok"}, 1, []int{1}, false},
		{"first record fails: function error for bisect", []string{"fail", "ok"}, 1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, seqs := kinesisTestEvent(tt.actions...)
			if strings.HasPrefix(tt.actions[1], "!") {
				raw = bytes.Replace(raw, []byte(`"data":"`+b64(payload("1", tt.actions[1]))), []byte(`"data":"`+b64([]byte("{not json"))), 1)
			}
			rec := &recorder{}
			h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
				rec.add(r.Value.ID)
				return act(r.Value.Action)
			}, quiet()...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if tt.fnErr {
				if err == nil || out != nil {
					t.Fatalf("want a function error and no body, got %s %v", out, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected function error: %v", err)
			}
			var want []string
			for _, i := range tt.report {
				want = append(want, seqs[i])
			}
			if got := failures(t, out); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("reported %v, want %v", got, want)
			}
			if len(rec.seen) != tt.ran {
				t.Fatalf("function saw %v, want %d records", rec.seen, tt.ran)
			}
		})
	}
}

func b64(b []byte) string {
	out, _ := json.Marshal(b)
	return strings.Trim(string(out), `"`)
}

func TestKinesisGoldenEventRawBytes(t *testing.T) {
	var got []string
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[[]byte]) error {
		got = append(got, string(r.Value)+"|"+r.ShardID()+"|"+r.PartitionKey()+"|"+r.ArrivalTime().UTC().Format(time.RFC3339Nano))
		return nil
	}, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), golden(t, "kinesis.json"))
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	want := []string{
		"Hello, this is a test.|shardId-000000000006|1|2018-12-17T22:10:50.987Z",
		"This is only a test.|shardId-000000000006|1|2018-12-17T22:11:51.166Z",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestKinesisBadBase64FailsOnlyThatRecord(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "ok", "ok")
	raw = bytes.Replace(raw, []byte(`"data":"`+b64(payload("1", "ok"))+`"`), []byte(`"data":"%%%not-base64"`), 1)
	var seen []string
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		seen = append(seen, r.Value.ID)
		return nil
	}, quiet()...)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); !slices.Equal(got, []string{seqs[1]}) || !slices.Equal(seen, []string{"0"}) {
		t.Fatalf("reported %v seen %v", got, seen)
	}
}

func TestKinesisMalformedEventIsFunctionError(t *testing.T) {
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return nil }, quiet()...)
	for _, in := range []string{`{"Records":[`, `[]`, `{"Records":"x"}`, ``} {
		out, err := h.Invoke(context.Background(), []byte(in))
		if err == nil || out != nil || !strings.Contains(err.Error(), "kinesis") {
			t.Errorf("%q: want a function error naming the source, got %s %v", in, out, err)
		}
	}
	out, err := h.Invoke(context.Background(), []byte(`{"Records":[]}`))
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Errorf("empty event: %s %v", out, err)
	}
}

func TestTransientErrorsRetriedInProcess(t *testing.T) {
	raw, _ := kinesisTestEvent("ok", "ok")
	calls := map[string]int{}
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		calls[r.Value.ID]++
		if calls[r.Value.ID] <= 2 {
			return batch.Transient(errors.New("throttled"))
		}
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv),
		WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Millisecond)}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || string(out) != `{"batchItemFailures":[]}` || calls["0"] != 3 || calls["1"] != 3 {
		t.Fatalf("%s %v calls %v", out, err, calls)
	}
}

func TestDeadlineGuardReportsUnprocessed(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "ok", "ok", "ok")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var n int
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		n++
		time.Sleep(120 * time.Millisecond)
		return nil
	}, opts(WithDeadlineMargin(100*time.Millisecond))...)
	out, err := h.Invoke(ctx, raw)
	if err != nil {
		t.Fatalf("function error: %v", err)
	}
	got := failures(t, out)
	if n != 2 || !slices.Equal(got, []string{seqs[2]}) {
		t.Fatalf("ran %d records, reported %v; want 2 and [%s]", n, got, seqs[2])
	}
	if ctx.Err() != nil {
		t.Fatal("the handler answered after the deadline")
	}
}

func TestHandlerSeesDeadlineMinusMargin(t *testing.T) {
	raw, _ := kinesisTestEvent("ok")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lambdaDeadline, _ := ctx.Deadline()
	var seen time.Time
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		seen, _ = ctx.Deadline()
		return nil
	}, opts(WithDeadlineMargin(2*time.Second))...)
	if _, err := h.Invoke(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if !seen.Equal(lambdaDeadline.Add(-2 * time.Second)) {
		t.Fatalf("record deadline %v, want %v", seen, lambdaDeadline.Add(-2*time.Second))
	}
}

func TestKeyConcurrencyKeepsOrderPerKey(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	for i := range 300 {
		b.Add(fmt.Sprintf("k%d", i%5), payload(fmt.Sprint(i), "ok"))
	}
	raw, _ := json.Marshal(b.Event())
	var mu sync.Mutex
	last := map[string]string{}
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := last[r.PartitionKey()]; ok && p >= r.SequenceNumber() {
			return fmt.Errorf("key %s out of order", r.PartitionKey())
		}
		last[r.PartitionKey()] = r.SequenceNumber()
		return nil
	}, opts(WithKeyConcurrency(4))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
}

func TestContractCheck(t *testing.T) {
	fn := func(ctx context.Context, r KinesisRecord[msg]) error { return nil }
	env := func(v string) Option {
		return withLookupEnv(func(k string) (string, bool) {
			if k == EnvReportBatchItemFailures {
				return v, true
			}
			return "", false
		})
	}
	if _, err := NewKinesis(fn, env("false")); err == nil || !strings.Contains(err.Error(), "ReportBatchItemFailures") {
		t.Fatalf("RBIF off must refuse to build: %v", err)
	}
	if _, err := NewKinesis(fn, env("maybe")); err == nil {
		t.Fatal("a non-boolean must be rejected")
	}
	if _, err := NewKinesis(fn, env("true")); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("MustKinesis must panic at init when the contract cannot be honoured")
		}
	}()
	MustKinesis(fn, env("false"))
}

func TestWholeBatchMode(t *testing.T) {
	raw, _ := kinesisTestEvent("ok", "fail", "ok")
	env := withLookupEnv(func(k string) (string, bool) { return "false", k == EnvReportBatchItemFailures })
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) },
		WithLogger(slog.New(slog.DiscardHandler)), env, WithWholeBatchFailures())
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err == nil || out != nil || !strings.Contains(err.Error(), "asked to fail") {
		t.Fatalf("want a function error carrying the cause, got %s %v", out, err)
	}
	raw, _ = kinesisTestEvent("ok", "ok")
	if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
}

func TestBadOptions(t *testing.T) {
	fn := func(ctx context.Context, r SQSRecord[msg]) error { return nil }
	kfn := func(ctx context.Context, r KinesisRecord[msg]) error { return nil }
	for name, err := range map[string]error{
		"negative margin":         second(NewSQS(fn, WithDeadlineMargin(-1))),
		"zero concurrency":        second(NewSQS(fn, WithConcurrency(0))),
		"skip group on kinesis":   second(NewKinesis(kfn, WithSkipGroupOnFailure())),
		"key concurrency on sqs":  second(NewSQS(fn, WithKeyConcurrency(2))),
		"concurrency on a stream": second(NewKinesis(kfn, WithConcurrency(2))),
		"negative retries":        second(NewSQS(fn, WithRetry(batch.RetryPolicy{Retries: -1}))),
		"nil function":            second(NewSQS[msg](nil)),
		"nil codec":               second(NewSQS(fn, WithCodec(nil))),
		"nil logger":              second(NewSQS(fn, WithLogger(nil))),
	} {
		if err == nil {
			t.Errorf("%s: want an error", name)
		} else if !strings.Contains(err.Error(), "sluice") {
			t.Errorf("%s: error should say it comes from sluice: %v", name, err)
		}
	}
}

func second[A any](_ A, err error) error { return err }

func TestLogsSummaryAndFailures(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "panic")
	var buf bytes.Buffer
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) },
		WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))), withLookupEnv(noEnv))
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one failure line and one summary line, got %d:\n%s", len(lines), buf.String())
	}
	var fail, sum map[string]any
	json.Unmarshal([]byte(lines[0]), &fail)
	json.Unmarshal([]byte(lines[1]), &sum)
	if fail["record"] != seqs[1] || !strings.Contains(fmt.Sprint(fail["stack"]), "handlers_test.go") || !strings.Contains(fmt.Sprint(fail["error"]), "asked to panic") {
		t.Fatalf("failure line: %v", fail)
	}
	if sum["source"] != "kinesis" || sum["records"] != 2.0 || sum["succeeded"] != 1.0 || sum["failed"] != 1.0 || sum["oldest_record_age_ms"] == nil {
		t.Fatalf("summary line: %v", sum)
	}
}
