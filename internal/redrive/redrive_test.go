package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
)

type msg struct {
	ID string `json:"id"`
}

// calls counts the handler's calls per payload id.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
}

func (c *calls) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// kinesisHandler fails the records whose id starts with "bad".
func kinesisHandler(t *testing.T, c *calls) invocation.Invoker {
	h, err := handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[msg]) error {
		c.add(r.Value.ID)
		if strings.HasPrefix(r.Value.ID, "bad") {
			return errors.New("still broken")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return localtest.InProcess(h)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dlq.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func redriveFile(t *testing.T, path string, opts Options) *Summary {
	t.Helper()
	src, err := File(path)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), src, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// fileRecords returns the record ids of the envelopes in a file, and its
// lines that are not envelopes.
func fileRecords(t *testing.T, path string) (ids, other []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		if e, err := dlq.Unmarshal([]byte(l)); err == nil {
			ids = append(ids, e.RecordID)
		} else {
			other = append(other, l)
		}
	}
	return ids, other
}

// A file of envelopes: the records that succeed are removed, the rest
// stay (a record still failing, a line that is not an envelope, a
// truncated record), each with its reason; a duplicate envelope of a
// record that succeeded goes with it.
func TestRunFile(t *testing.T) {
	ev := kinesisEvent(6, func(i int) string {
		if i == 2 {
			return `{"id":"bad2"}`
		}
		return fmt.Sprintf(`{"id":"r%d"}`, i)
	})
	envs := envelopes(t, marshal(t, ev))
	truncated := *envs[5]
	truncated.RecordID, truncated.Record = "999", json.RawMessage(`"{\"kinesis\":{\"da"`)
	truncated.Truncated = &dlq.Truncation{OriginalBytes: 1 << 20, Marker: "truncated"}
	content := lines(t, envs) + "not an envelope\n" + lines(t, []*dlq.Envelope{envs[0], &truncated})

	for _, tt := range []struct {
		name      string
		batch     int
		replayed  int
		left      []string
		bad2Calls int
	}{
		// Each record alone: only the failing one stays.
		{"one per event", 1, 6, []string{envs[2].RecordID, "999"}, 1},
		// One event: Kinesis stops at the first failure and Lambda
		// restarts from it, so the records after it stay too.
		{"one event", 10, 3, []string{envs[2].RecordID, envs[3].RecordID, envs[4].RecordID, envs[5].RecordID, "999"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, content)
			var c calls
			var progress []Totals
			sum := redriveFile(t, path, Options{Invoker: kinesisHandler(t, &c), BatchSize: tt.batch,
				Progress: func(tot Totals) { progress = append(progress, tot) }})
			if sum.Read != 9 || sum.Replayed != tt.replayed || sum.Invalid != 1 || sum.Truncated != 1 || sum.Left() != 9-tt.replayed {
				t.Errorf("totals %+v", sum.Totals)
			}
			ids, other := fileRecords(t, path)
			if strings.Join(ids, " ") != strings.Join(tt.left, " ") || len(other) != 1 || other[0] != "not an envelope" {
				t.Errorf("file holds %v and %q, want %v and the bad line", ids, other, tt.left)
			}
			if c.get("r0") != 1 || c.get("bad2") != tt.bad2Calls {
				t.Errorf("calls: %v", c.n)
			}
			if len(progress) == 0 || progress[len(progress)-1] != sum.Totals {
				t.Errorf("progress %v, totals %+v", progress, sum.Totals)
			}
			for _, l := range sum.Leftovers {
				if l.Reason == "" || l.Message == "" {
					t.Errorf("leftover without reason: %+v", l)
				}
				if l.Record == "999" && !strings.Contains(l.Reason, "fetch-failed") {
					t.Errorf("truncated record's reason: %s", l.Reason)
				}
			}
		})
	}
}

func TestRunDryRun(t *testing.T) {
	envs := envelopes(t, marshal(t, sqsEvent(3, func(i int) string { return fmt.Sprintf(`{"id":"m%d"}`, i) })))
	content := lines(t, envs)
	path := writeFile(t, content)
	var out strings.Builder
	sum := redriveFile(t, path, Options{DryRun: true, DryRunOut: &out, BatchSize: 2})
	if sum.Invocations != 2 || sum.Records != 3 || sum.Replayed != 0 || sum.Left() != 0 {
		t.Errorf("totals %+v", sum.Totals)
	}
	if data, _ := os.ReadFile(path); string(data) != content {
		t.Errorf("a dry run changed the file")
	}
	if !strings.Contains(out.String(), "event 1: sqs, 2 records from arn:aws:sqs:") || !strings.Contains(out.String(), `{"Records":[{"messageId":"`+envs[0].RecordID) {
		t.Errorf("dry run output:\n%s", out.String())
	}
}

// SQS reports each failed message; the others are acknowledged even when
// they come after it.
func TestRunSQSPartial(t *testing.T) {
	envs := envelopes(t, marshal(t, sqsEvent(4, func(i int) string { return fmt.Sprintf(`{"id":"%s"}`, []string{"a", "bad", "c", "d"}[i]) })))
	path := writeFile(t, lines(t, envs))
	var c calls
	h, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[msg]) error {
		c.add(r.Value.ID)
		if r.Value.ID == "bad" {
			return errors.New("no")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := redriveFile(t, path, Options{Invoker: localtest.InProcess(h), BatchSize: 10})
	if sum.Invocations != 1 || sum.Replayed != 3 || sum.Failed != 1 {
		t.Errorf("totals %+v", sum.Totals)
	}
	if ids, _ := fileRecords(t, path); len(ids) != 1 || ids[0] != envs[1].RecordID {
		t.Errorf("left %v", ids)
	}
}

// fakeInvoker answers from a list of errors (nil: success).
type fakeInvoker struct {
	errs  []error
	calls int
}

func (f *fakeInvoker) Invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
	f.calls++
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		if err != nil {
			return invocation.Response{}, err
		}
	}
	return invocation.Response{Payload: []byte(`{"batchItemFailures":[]}`)}, nil
}

func (f *fakeInvoker) Close() error { return nil }

type throttled struct{}

func (throttled) Error() string   { return "429 TooManyRequestsException" }
func (throttled) Throttled() bool { return true }

// A function that cannot be invoked stops the run; what succeeded before
// is removed, the rest stays. A throttled call is retried.
func TestRunInvokeFails(t *testing.T) {
	envs := envelopes(t, marshal(t, sqsEvent(3, func(i int) string { return "{}" })))
	path := writeFile(t, lines(t, envs))
	src, err := File(path)
	if err != nil {
		t.Fatal(err)
	}
	inv := &fakeInvoker{errs: []error{nil, throttled{}, throttled{}, errors.New("connection refused")}}
	var slept []time.Duration
	sum, err := Run(context.Background(), src, Options{Invoker: inv,
		sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err %v", err)
	}
	if inv.calls != 4 || len(slept) != 2 || slept[1] != 2*slept[0] {
		t.Errorf("calls %d, back-off %v", inv.calls, slept)
	}
	if sum.Replayed != 1 || sum.Failed != 1 {
		t.Errorf("totals %+v", sum.Totals)
	}
	if ids, _ := fileRecords(t, path); len(ids) != 2 || ids[0] != envs[1].RecordID {
		t.Errorf("left %v", ids)
	}
}

// --rate spaces events so that records per second stay under the rate.
func TestRunRate(t *testing.T) {
	envs := envelopes(t, marshal(t, sqsEvent(5, func(i int) string { return "{}" })))
	now := time.Unix(1000, 0)
	var slept time.Duration
	src, _ := File(writeFile(t, lines(t, envs)))
	_, err := Run(context.Background(), src, Options{Invoker: &fakeInvoker{}, Rate: 2, BatchSize: 2,
		now: func() time.Time { return now },
		sleep: func(_ context.Context, d time.Duration) error {
			slept += d
			now = now.Add(d)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Events of 2, 2 and 1 records at 2 records/s: the second waits 1 s,
	// the third 1 s more.
	if slept != 2*time.Second {
		t.Errorf("slept %v, want 2s", slept)
	}
}

// A record met again in the same run (the function quarantined it again
// into the queue being redriven) is not replayed twice.
func TestRunRepeated(t *testing.T) {
	// Thirteen records, then the first again: the repeat is in the second
	// window of ten.
	envs := envelopes(t, marshal(t, sqsEvent(13, func(i int) string { return "{}" })))
	path := writeFile(t, lines(t, envs)+lines(t, envs[:1]))
	inv := &fakeInvoker{}
	sum := redriveFile(t, path, Options{Invoker: inv})
	if sum.Repeated != 1 || sum.Replayed != 13 || inv.calls != 13 {
		t.Errorf("totals %+v, %d calls", sum.Totals, inv.calls)
	}
	if ids, _ := fileRecords(t, path); len(ids) != 1 || ids[0] != envs[0].RecordID {
		t.Errorf("left %v", ids)
	}
}
