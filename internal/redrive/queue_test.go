package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// drain receives every visible message of a queue (hiding them) and
// returns their bodies.
func drain(t *testing.T, client *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := client.ReceiveMessage(testCtx(t), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return bodies
		}
		for _, m := range out.Messages {
			bodies = append(bodies, aws.ToString(m.Body))
		}
	}
}

// A redrive from a real queue (fauxqs): the envelopes whose records
// succeed are deleted; the one still failing and the message that is not
// an envelope are visible again at once for the next run.
func TestRunQueue(t *testing.T) {
	srv := servers.SQS(t)
	ctx := testCtx(t)
	client := sqs.NewFromConfig(srv.AWSConfig())
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	envs := envelopes(t, marshal(t, sqsEvent(23, func(i int) string {
		if i == 7 {
			return `{"id":"bad"}`
		}
		return fmt.Sprintf(`{"id":"m%d"}`, i)
	})))
	bodies := []string{"not an envelope"}
	for _, e := range envs {
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	for _, b := range bodies {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}

	var c calls
	h, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[msg]) error {
		c.add(r.Value.ID)
		if r.Value.ID == "bad" {
			return errors.New("still broken")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(ctx, Queue(client, url, time.Minute, time.Second), Options{Invoker: localtest.InProcess(h), BatchSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 24 || sum.Replayed != 22 || sum.Failed != 1 || sum.Invalid != 1 {
		t.Errorf("totals %+v", sum.Totals)
	}
	for i := range 23 {
		if id := fmt.Sprint("m", i); i != 7 && c.get(id) != 1 {
			t.Errorf("%s ran %d times", id, c.get(id))
		}
	}
	left := drain(t, client, url)
	slices.Sort(left)
	if len(left) != 2 || left[0] != "not an envelope" || !strings.Contains(left[1], `"recordId":"`+envs[7].RecordID) {
		t.Fatalf("left in the queue: %q", left)
	}
}

// A dry run over a queue deletes nothing and leaves every message visible.
func TestRunQueueDryRun(t *testing.T) {
	srv := servers.SQS(t)
	ctx := testCtx(t)
	client := sqs.NewFromConfig(srv.AWSConfig())
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	envs := envelopes(t, marshal(t, sqsEvent(3, func(i int) string { return "{}" })))
	for _, e := range envs {
		b, _ := e.Marshal()
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(string(b))}); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	sum, err := Run(ctx, Queue(client, url, time.Minute, time.Second), Options{DryRun: true, DryRunOut: &out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Invocations != 3 || sum.Replayed != 0 {
		t.Errorf("totals %+v", sum.Totals)
	}
	if left := drain(t, client, url); len(left) != 3 {
		t.Fatalf("%d messages visible after a dry run, want 3", len(left))
	}
}
