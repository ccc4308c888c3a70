package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/destination"
	"github.com/sluicehq/sluice/localtest/source"
)

func awsCreateQueue(ctx context.Context, t *testing.T, c *sqs.Client, name string, attrs map[string]string) (url, arn string) {
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

func awsCounts(ctx context.Context, t *testing.T, q localtest.Queue) (int, int) {
	t.Helper()
	left, dl, err := q.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	return left, dl
}

func awsBodies(msgs []invocation.QueueMessage) []string {
	var out []string
	for _, m := range msgs {
		var ev events.SQSMessage
		if err := json.Unmarshal(m.Event, &ev); err != nil {
			out = append(out, "undecodable: "+err.Error())
			continue
		}
		out = append(out, ev.Body)
	}
	return out
}

func TestAWSSQSQueueStandard(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 45*time.Second)
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)

	_, dlqARN := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "dlq"), nil)
	url, arn := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "q"), map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqARN),
	})
	q := source.SQSQueue(cfg, url)
	if left, dl := awsCounts(ctx, t, q); left != 0 || dl != 0 {
		t.Fatalf("empty queue: Counts %d, %d", left, dl)
	}

	t0 := time.Now().Add(-time.Second)
	var sent []string
	for i := range 12 {
		body := fmt.Sprintf(`{"n":%d}`, i)
		in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}
		if i == 11 {
			in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
				"colour": {DataType: aws.String("String"), StringValue: aws.String("red")},
				"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 0xff}},
			}
		}
		if _, err := c.SendMessage(ctx, in); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		sent = append(sent, body)
	}

	// More than 10: several ReceiveMessage calls.
	msgs, err := q.Receive(ctx, 25, 1*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := awsBodies(msgs)
	sort.Strings(got)
	want := slices.Clone(sent)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	if left, dl := awsCounts(ctx, t, q); left != 12 || dl != 0 {
		t.Errorf("12 in flight: Counts %d, %d", left, dl)
	}
	if again, err := q.Receive(ctx, 10, time.Second); err != nil || len(again) != 0 {
		t.Fatalf("in-flight messages received again: %v, %v", awsBodies(again), err)
	}

	golden := awsShape(t, awsGolden(t, "sqs.json"))
	var poison invocation.QueueMessage
	var rest []string
	var raws []json.RawMessage
	for _, m := range msgs {
		var ev events.SQSMessage
		if err := json.Unmarshal(m.Event, &ev); err != nil {
			t.Fatalf("message does not decode as events.SQSMessage: %v\n%s", err, m.Event)
		}
		raws = append(raws, m.Event)
		if ev.MessageId != m.MessageID || ev.ReceiptHandle != m.ReceiptHandle || m.ReceiveCount != 1 ||
			ev.Attributes["ApproximateReceiveCount"] != "1" || ev.EventSource != "aws:sqs" || ev.EventSourceARN != arn ||
			ev.AWSRegion != servers.Region || ev.Md5OfBody == "" || m.GroupID != "" || m.Sent.Before(t0) || m.Sent.After(time.Now()) {
			t.Errorf("message %s: %+v\n%s", m.MessageID, m, m.Event)
		}
		if ev.Body == `{"n":11}` {
			// Message attributes in Lambda's lower-camel shape.
			col, blob := ev.MessageAttributes["colour"], ev.MessageAttributes["blob"]
			if aws.ToString(col.StringValue) != "red" || col.DataType != "String" ||
				!slices.Equal(blob.BinaryValue, []byte{1, 2, 0xff}) || blob.DataType != "Binary" || ev.Md5OfMessageAttributes == "" {
				t.Errorf("message attributes: %s", m.Event)
			}
			if !strings.Contains(string(m.Event), `"stringListValues":[],"binaryListValues":[]`) {
				t.Errorf("attribute lists not sent as []: %s", m.Event)
			}
			t.Logf("message with attributes: %s", m.Event)
		} else {
			awsSameShape(t, awsRecordsEvent(t, m.Event), golden)
		}
		if ev.Body == `{"n":3}` {
			poison = m
		} else {
			rest = append(rest, m.ReceiptHandle)
		}
	}

	// A Sluice handler takes the messages as Lambda would deliver them.
	var (
		mu   sync.Mutex
		seen []int
	)
	h, err := handlers.NewSQS(func(_ context.Context, r handlers.SQSRecord[struct{ N int }]) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Value.N)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Invoke(ctx, awsRecordsEvent(t, raws...))
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	var sr events.SQSEventResponse
	if err := json.Unmarshal(resp, &sr); err != nil || len(sr.BatchItemFailures) != 0 {
		t.Fatalf("handler response %s (%v)", resp, err)
	}
	if slices.Sort(seen); !slices.Equal(seen, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
		t.Errorf("handler saw %v", seen)
	}

	if err := q.Delete(ctx, rest); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if left, dl := awsCounts(ctx, t, q); left != 1 || dl != 0 {
		t.Errorf("after deleting 11: Counts %d, %d, want 1, 0", left, dl)
	}

	// The poison message comes back after its 1 s visibility with a higher
	// receive count; past maxReceiveCount 2 it moves to the DLQ.
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, err := q.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 1 {
			if msgs[0].MessageID != poison.MessageID || msgs[0].ReceiveCount != 2 {
				t.Fatalf("redelivered %+v, want %s with ReceiveCount 2", msgs[0], poison.MessageID)
			}
			var ev events.SQSMessage
			if err := json.Unmarshal(msgs[0].Event, &ev); err != nil || ev.Attributes["ApproximateReceiveCount"] != "2" {
				t.Fatalf("redelivered event %s (%v)", msgs[0].Event, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("poison message not redelivered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if msgs, err := q.Receive(ctx, 10, time.Second); err != nil || len(msgs) != 0 {
			t.Fatalf("third receive: %v, %v; want none (moved to the DLQ)", awsBodies(msgs), err)
		}
		if left, dl := awsCounts(ctx, t, q); left == 0 && dl == 1 {
			break
		}
		if time.Now().After(deadline) {
			left, dl := awsCounts(ctx, t, q)
			t.Fatalf("poison message not dead-lettered: Counts %d, %d", left, dl)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// AWS fails a malformed receipt handle (ReceiptHandleIsInvalid);
	// fauxqs 2.4.1 reports success.
	t.Logf("Delete of a bogus receipt handle: %v", q.Delete(ctx, []string{"not-a-receipt-handle"}))
}

func TestAWSSQSQueueFIFO(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 30*time.Second)
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)
	url, arn := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "fifo")+".fifo", map[string]string{
		"FifoQueue": "true", "ContentBasedDeduplication": "true",
	})
	for _, m := range [][2]string{{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"b", "b2"}, {"a", "a3"}} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageGroupId: &m[0], MessageBody: &m[1]}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	q := source.SQSQueue(cfg, url)
	golden := awsShape(t, awsGolden(t, "sqs-fifo.json"))

	delivered := map[string][]string{}
	for round := 0; ; round++ {
		if round > 10 {
			t.Fatal("FIFO queue not drained in 10 rounds")
		}
		msgs, err := q.Receive(ctx, 10, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		t.Logf("round %d: %v", round, awsBodies(msgs))
		groups := map[string]int{}
		for i, m := range msgs {
			var ev events.SQSMessage
			if err := json.Unmarshal(m.Event, &ev); err != nil {
				t.Fatal(err)
			}
			awsSameShape(t, awsRecordsEvent(t, m.Event), golden)
			if m.GroupID == "" || ev.Attributes["MessageGroupId"] != m.GroupID || ev.Attributes["SequenceNumber"] == "" ||
				ev.Attributes["MessageDeduplicationId"] == "" || ev.EventSourceARN != arn {
				t.Errorf("FIFO message: %s", m.Event)
			}
			groups[m.GroupID]++
			delivered[m.GroupID] = append(delivered[m.GroupID], awsBodies(msgs[i:i+1])...)
		}
		// While the batch is in flight, its groups are blocked.
		if more, err := q.Receive(ctx, 10, 30*time.Second); err != nil {
			t.Fatal(err)
		} else {
			for _, m := range more {
				if groups[m.GroupID] > 0 {
					t.Fatalf("got %s of group %s while the group had a message in flight", awsBodies([]invocation.QueueMessage{m}), m.GroupID)
				}
			}
			msgs = append(msgs, more...)
			for _, m := range more {
				delivered[m.GroupID] = append(delivered[m.GroupID], awsBodies([]invocation.QueueMessage{m})...)
			}
		}
		var handles []string
		for _, m := range msgs {
			handles = append(handles, m.ReceiptHandle)
		}
		if err := q.Delete(ctx, handles); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(delivered); got != "map[a:[a1 a2 a3] b:[b1 b2]]" {
		t.Errorf("per-group delivery %s", got)
	}
	if left, dl := awsCounts(ctx, t, q); left != 0 || dl != 0 {
		t.Errorf("drained FIFO queue: Counts %d, %d", left, dl)
	}
}

func TestAWSSQSDestination(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 30*time.Second)
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)
	url, _ := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "onfailure"), nil)

	rec := sevents.OnFailureRecord{
		RequestContext: sevents.OnFailureRequestContext{RequestID: "r1", FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:f",
			Condition: sevents.ConditionRetryAttemptsExhausted, ApproximateInvokeCount: 3},
		ResponseContext: &sevents.OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: aws.String(sevents.FunctionErrorUnhandled)},
		Version:         "1.0",
		Timestamp:       "2019-11-14T00:38:06.021Z",
		KinesisBatchInfo: &sevents.StreamBatchInfo{ShardID: "shardId-000000000001", StartSequenceNumber: "1", EndSequenceNumber: "2",
			BatchSize: 2, StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/s"},
	}
	if err := destination.SQS(cfg, url).Send(ctx, rec); err != nil {
		t.Fatal(err)
	}
	msgs, err := source.SQSQueue(cfg, url).Receive(ctx, 10, 30*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %d messages, %v", len(msgs), err)
	}
	var ev events.SQSMessage
	if err := json.Unmarshal(msgs[0].Event, &ev); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(rec)
	if ev.Body != string(want) {
		t.Errorf("body %s, want %s", ev.Body, want)
	}
	awsSameShape(t, []byte(ev.Body), awsShape(t, awsGolden(t, "kinesis-on-failure.json")))
}
