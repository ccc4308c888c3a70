package localtest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

func str(s string) *string { return &s }

// SQS itself (fauxqs, a real SQS server) returns for a message the MD5 of
// its attributes that md5OfMessageAttributes computes; and a real queue as
// the source delivers the attributes and that MD5 as the server gives them.
func TestSQSMessageAttributesMatchServer(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)
	name := servers.UniqueName(t, "attrs")
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name})
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]localtest.MessageAttribute{
		"color":    {DataType: "String", StringValue: str("red")},
		"count":    {DataType: "Number", StringValue: str("42")},
		"raw":      {DataType: "Binary", BinaryValue: []byte{0, 1, 0xff}},
		"label":    {DataType: "String.custom", StringValue: str("héllo")},
		"Category": {DataType: "String", StringValue: str("")},
	}
	api := map[string]sqstypes.MessageAttributeValue{}
	for k, a := range attrs {
		api[k] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	delete(api, "Category") // SQS rejects an empty value
	delete(attrs, "Category")
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("body"), MessageAttributes: api})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	want := localtest.MD5OfMessageAttributes(attrs)
	if got := aws.ToString(sent.MD5OfMessageAttributes); got != want {
		t.Fatalf("server's MD5OfMessageAttributes %s, ours %s", got, want)
	}
	msgs, err := source.SQSQueue(cfg, aws.ToString(q.QueueUrl)).Receive(ctx, 1, 30*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Receive: %d messages, %v", len(msgs), err)
	}
	var ev events.SQSMessage
	if err := json.Unmarshal(msgs[0].Event, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Md5OfMessageAttributes != want || len(ev.MessageAttributes) != 4 ||
		aws.ToString(ev.MessageAttributes["label"].StringValue) != "héllo" || string(ev.MessageAttributes["raw"].BinaryValue) != "\x00\x01\xff" ||
		ev.MessageAttributes["count"].DataType != "Number" {
		t.Errorf("event from the real queue: md5 %s, attributes %+v", ev.Md5OfMessageAttributes, ev.MessageAttributes)
	}
}
