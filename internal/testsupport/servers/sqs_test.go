package servers_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func createQueue(ctx context.Context, t *testing.T, c *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
}

func receive(ctx context.Context, t *testing.T, c *sqs.Client, url string, max int32, visibility int32) []sqstypes.Message {
	t.Helper()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    &url,
		MaxNumberOfMessages:         max,
		VisibilityTimeout:           visibility,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("ReceiveMessage %s: %v", url, err)
	}
	return out.Messages
}

func receiveCount(t *testing.T, m sqstypes.Message) int {
	t.Helper()
	n, err := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil {
		t.Fatalf("ApproximateReceiveCount %q: %v", m.Attributes["ApproximateReceiveCount"], err)
	}
	return n
}

// TestSQSStandardRedrive: send/receive/delete, ChangeMessageVisibility,
// ApproximateReceiveCount on redelivery, and redrive to a DLQ after
// maxReceiveCount receives.
func TestSQSStandardRedrive(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := ctxFor(t, 30*time.Second)
	c := sqs.NewFromConfig(srv.AWSConfig())

	dlqURL, dlqArn := createQueue(ctx, t, c, servers.UniqueName(t, "dlq"), nil)
	url, _ := createQueue(ctx, t, c, servers.UniqueName(t, "q"), map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqArn),
	})

	// Plain send / receive / delete.
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("done")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	msgs := receive(ctx, t, c, url, 10, 30)
	if len(msgs) != 1 || aws.ToString(msgs[0].Body) != "done" {
		t.Fatalf("receive: %+v, want the message", msgs)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: msgs[0].ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}

	// Redelivery through ChangeMessageVisibility(0): count goes 1, 2, then the
	// third receive moves the message to the DLQ (maxReceiveCount 2).
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("poison")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	for want := 1; want <= 2; want++ {
		msgs := receive(ctx, t, c, url, 1, 30)
		if len(msgs) != 1 {
			t.Fatalf("receive #%d: %d messages, want 1", want, len(msgs))
		}
		if got := receiveCount(t, msgs[0]); got != want {
			t.Errorf("receive #%d: ApproximateReceiveCount %d", want, got)
		}
		// In flight: invisible to another receive.
		if again := receive(ctx, t, c, url, 1, 30); len(again) != 0 {
			t.Fatalf("in-flight message delivered again: %+v", again)
		}
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: &url, ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 0,
		}); err != nil {
			t.Fatalf("ChangeMessageVisibility: %v", err)
		}
	}
	if msgs := receive(ctx, t, c, url, 1, 30); len(msgs) != 0 {
		t.Fatalf("third receive: got %+v, want none (moved to DLQ)", msgs)
	}
	dl := receive(ctx, t, c, dlqURL, 10, 30)
	if len(dl) != 1 || aws.ToString(dl[0].Body) != "poison" {
		t.Fatalf("DLQ: %+v, want the poison message", dl)
	}
	t.Logf("DLQ message attributes: %v", dl[0].Attributes)

	// Visibility timeout expiry (1 s): when does the message come back?
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("vis")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if msgs := receive(ctx, t, c, url, 1, 1); len(msgs) != 1 {
		t.Fatalf("receive vis: %d messages", len(msgs))
	}
	t0 := time.Now()
	for {
		if msgs := receive(ctx, t, c, url, 1, 30); len(msgs) == 1 {
			t.Logf("message visible again %v after a VisibilityTimeout=1 receive", time.Since(t0).Round(10*time.Millisecond))
			if d := time.Since(t0); d < 900*time.Millisecond {
				t.Errorf("visible again after %v, before the 1 s timeout", d)
			}
			break
		}
		if time.Since(t0) > 5*time.Second {
			t.Fatal("message not visible again 5 s after a 1 s visibility timeout")
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestSQSFIFO: per-group ordering, the group lock while a message is in
// flight, and content-based deduplication.
func TestSQSFIFO(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := ctxFor(t, 30*time.Second)
	c := sqs.NewFromConfig(srv.AWSConfig())

	url, _ := createQueue(ctx, t, c, servers.UniqueName(t, "fifo")+".fifo", map[string]string{
		"FifoQueue": "true", "ContentBasedDeduplication": "true",
	})
	send := func(group, body string) {
		t.Helper()
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body, MessageGroupId: &group}); err != nil {
			t.Fatalf("SendMessage %s/%s: %v", group, body, err)
		}
	}
	send("a", "a1")
	send("b", "b1")
	send("a", "a2")
	send("a", "a2") // same body: deduplicated
	send("b", "b2")
	send("a", "a3")

	// Drain the queue. While a message of a group is in flight no other
	// message of that group may be delivered; each group comes in send order;
	// a2 (sent twice with the same body) comes once. AWS may return several
	// messages of one group in one batch; fauxqs returns at most one per group
	// per ReceiveMessage.
	perGroup := map[string][]string{}
	inFlight := map[string]bool{}
	var batches [][]string
	first := receive(ctx, t, c, url, 1, 30)
	if len(first) != 1 || aws.ToString(first[0].Body) != "a1" {
		t.Fatalf("first receive: %+v, want a1", first)
	}
	pending := first
	perGroup["a"], inFlight["a"] = []string{"a1"}, true
	for round := 0; round < 10; round++ {
		msgs := receive(ctx, t, c, url, 10, 30)
		var batch []string
		for _, m := range msgs {
			g, body := m.Attributes["MessageGroupId"], aws.ToString(m.Body)
			batch = append(batch, body)
			if inFlight[g] {
				t.Errorf("got %s while an earlier message of group %s was in flight", body, g)
			}
			perGroup[g] = append(perGroup[g], body)
		}
		batches = append(batches, batch)
		if len(msgs) == 0 && len(pending) == 0 {
			break
		}
		// Delete what was in flight before this receive, so locked groups open up.
		for _, m := range pending {
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("DeleteMessage: %v", err)
			}
		}
		pending = msgs
		inFlight = map[string]bool{}
		for _, m := range msgs {
			inFlight[m.Attributes["MessageGroupId"]] = true
		}
	}
	t.Logf("FIFO receive batches after a1: %v", batches)
	if got := fmt.Sprint(perGroup); got != "map[a:[a1 a2 a3] b:[b1 b2]]" {
		t.Errorf("per-group delivery %s, want map[a:[a1 a2 a3] b:[b1 b2]]", got)
	}
}
