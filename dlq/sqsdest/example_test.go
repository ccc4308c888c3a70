package sqsdest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/sqsdest"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

// printingSQS stands in for *sqs.Client (sqs.NewFromConfig(cfg) in a
// deployed function): it accepts every entry and prints what it was sent.
type printingSQS struct{}

func (printingSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		env, err := dlq.Unmarshal([]byte(aws.ToString(e.MessageBody)))
		if err != nil {
			return nil, err
		}
		fmt.Printf("to %s: %s record %s, reason %s: %s\n", aws.ToString(in.QueueUrl), env.Source, env.RecordID, env.Reason, env.Error)
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// A handler whose poison messages go to an SQS dead-letter queue, one
// envelope per message; the batch succeeds and the source queue moves on.
func ExampleNew() {
	dest, err := sqsdest.New(printingSQS{}, "https://sqs.us-east-1.amazonaws.com/123456789012/payments-dlq")
	if err != nil {
		panic(err)
	}
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[struct{ PaymentID string }]) error {
		if r.Value.PaymentID == "pay-002" {
			return batch.Permanent(errors.New("card number fails its checksum"))
		}
		return nil
	}, handlers.WithDeadLetters(dest), handlers.WithLogger(slog.New(slog.DiscardHandler)))

	b := &sevents.SQSBuilder{}
	b.Add(`{"PaymentID":"pay-001"}`).Add(`{"PaymentID":"pay-002"}`)
	event, _ := sevents.MarshalEvent(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)
	// Output:
	// to https://sqs.us-east-1.amazonaws.com/123456789012/payments-dlq: sqs record 00000002-0000-4000-8000-000000000002, reason permanent: card number fails its checksum
	// {"batchItemFailures":[]} <nil>
}

// Send as a handler calls it, here with a FIFO queue: each message gets the
// record's shard as its group and a deduplication id, so a repeated send of
// the same quarantine is dropped by the queue.
func ExampleDestination_Send() {
	dest, err := sqsdest.New(fifoSQS{}, "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq.fifo", sqsdest.WithConcurrency(1))
	if err != nil {
		panic(err)
	}
	env := &dlq.Envelope{Version: dlq.Version, Source: sevents.SourceKinesis, SourceARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
		Shard: "shardId-000000000000", RecordID: "49590338271490256608559692538361571095921575989136588898", Attempts: 3,
		Reason: dlq.ReasonAttempts, Class: "plain", Error: "inventory service: 503", Record: []byte(`{"data":"eyJpZCI6NDJ9"}`)}
	fmt.Println(dest.Send(context.Background(), []*dlq.Envelope{env}))
	// Output:
	// group shardId-000000000000, deduplication id of 64 hex digits
	// <nil>
}

type fifoSQS struct{}

func (fifoSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		fmt.Printf("group %s, deduplication id of %d hex digits\n", aws.ToString(e.MessageGroupId), len(aws.ToString(e.MessageDeduplicationId)))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}
