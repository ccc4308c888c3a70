package redrive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/sqsdest"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
)

// A redrive replays into one function: the one named, else the one the
// first envelope names; envelopes of another function stay unless forced,
// since their idempotency keys name that function.
func TestRunFunctionName(t *testing.T) {
	for _, tc := range []struct {
		name          string
		opts          Options
		open          string // the function Open was asked for
		replayed, oth int
	}{
		{"from the envelopes", Options{}, "payments", 2, 1},
		{"named", Options{FunctionName: "refunds"}, "refunds", 1, 2},
		{"forced", Options{FunctionName: "refunds", Force: true}, "refunds", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := envelopes(t, marshal(t, sqsEvent(3, func(i int) string { return "{}" })))
			for i, fn := range []string{"payments", "refunds", "payments"} {
				envs[i].FunctionName = fn
			}
			path := writeFile(t, lines(t, envs))
			inv := &fakeInvoker{}
			var opened []string
			opts := tc.opts
			opts.Open = func(_ context.Context, fn string) (invocation.Invoker, error) {
				opened = append(opened, fn)
				return inv, nil
			}
			sum := redriveFile(t, path, opts)
			if sum.Replayed != tc.replayed || sum.OtherFunction != tc.oth || !slices.Equal(opened, []string{tc.open}) || sum.FunctionName != tc.open {
				t.Fatalf("totals %+v, opened %v, function %q", sum.Totals, opened, sum.FunctionName)
			}
			for _, l := range sum.Leftovers {
				if !strings.Contains(l.Reason, "--function-name") || !strings.Contains(l.Reason, "--force") {
					t.Errorf("leftover %+v does not say what to do", l)
				}
			}
			if sum.OK() != (tc.oth == 0) {
				t.Errorf("OK %v with %d of another function", sum.OK(), tc.oth)
			}
		})
	}
}

// requarantiner answers success, and first appends to file the envelope of
// every record whose id is in again, as a function that quarantined them
// again would.
type requarantiner struct {
	file  string
	again []*dlq.Envelope
}

func (q *requarantiner) Invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
	for _, e := range q.again {
		if !strings.Contains(string(inv.Payload), e.RecordID) {
			continue
		}
		n := *e
		n.LastFailure = time.Now().UTC()
		b, err := n.Marshal()
		if err != nil {
			return invocation.Response{}, err
		}
		f, err := os.OpenFile(q.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return invocation.Response{}, err
		}
		f.Write(append(b, '\n'))
		f.Close()
	}
	return invocation.Response{Payload: []byte(`{"batchItemFailures":[]}`)}, nil
}

func (q *requarantiner) Close() error { return nil }

// A record whose replay ended in quarantine (the function acknowledged it,
// and wrote it to its dead-letter file) is not replayed: it is counted
// apart, and the redrive is not OK.
func TestRunRequarantinedFile(t *testing.T) {
	envs := envelopes(t, marshal(t, sqsEvent(3, func(i int) string { return "{}" })))
	path := writeFile(t, lines(t, envs))
	next := filepath.Join(t.TempDir(), "next.jsonl")
	if err := os.WriteFile(next, []byte(lines(t, envs[2:])), 0o644); err != nil { // older envelopes are not news
		t.Fatal(err)
	}
	w, err := WatchFile(next)
	if err != nil {
		t.Fatal(err)
	}
	sum := redriveFile(t, path, Options{Invoker: &requarantiner{file: next, again: envs[1:2]}, Watch: w})
	if sum.Replayed != 2 || sum.Requarantined != 1 || sum.OK() || len(sum.Requarantines) != 1 ||
		sum.Requarantines[0].Record != envs[1].RecordID || sum.Requarantines[0].Message != next {
		t.Fatalf("totals %+v, requarantines %+v", sum.Totals, sum.Requarantines)
	}
}

// A function that quarantines into the queue being redriven: the new
// envelope is read back in the same run, counted as quarantined again, and
// stays in the queue; the old one is gone.
func TestRunRequarantinedQueue(t *testing.T) {
	srv := servers.SQS(t)
	ctx := testCtx(t)
	client := sqs.NewFromConfig(srv.AWSConfig())
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	envs := envelopes(t, marshal(t, sqsEvent(3, func(i int) string {
		if i == 1 {
			return `{"id":"bad"}`
		}
		return `{"id":"ok"}`
	})))
	for _, e := range envs {
		b, _ := e.Marshal()
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(string(b))}); err != nil {
			t.Fatal(err)
		}
	}
	dest, err := sqsdest.New(client, url)
	if err != nil {
		t.Fatal(err)
	}
	h, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[msg]) error {
		if r.Value.ID == "bad" {
			return batch.Permanent(errors.New("still broken"))
		}
		return nil
	}, handlers.WithDeadLetters(dest))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(ctx, Queue(client, url, time.Minute, time.Second), Options{Invoker: localtest.InProcess(h)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Replayed != 2 || sum.Requarantined != 1 || sum.Repeated != 0 || sum.OK() {
		t.Fatalf("totals %+v", sum.Totals)
	}
	left := drain(t, client, url)
	if len(left) != 1 || !strings.Contains(left[0], envs[1].RecordID) || !strings.Contains(left[0], "still broken") {
		t.Fatalf("left in the queue: %q", left)
	}
}
