package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// The envelopes' benchmarks: the same orders as BenchmarkSQS1k,
// BenchmarkKinesis10k and BenchmarkDynamoDB10k, each wrapped as its
// service wraps it, through the whole handler path.

// rewrapSQS returns the 1,000-message SQS fixture with each body wrapped
// by wrap.
func rewrapSQS(tb testing.TB, wrap func(i int, body string) string) []byte {
	tb.Helper()
	var ev events.SQSEvent
	if err := json.Unmarshal(sqsFixture(tb, 1000), &ev); err != nil {
		tb.Fatal(err)
	}
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	for i, r := range ev.Records {
		b.Add(wrap(i, r.Body))
	}
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func benchSQS[T any](b *testing.B, raw []byte, fn func(SQSRecord[T])) {
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[T]) error {
		fn(r)
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	reportPerRecord(b, 1000)
}

// BenchmarkSQS1kSNS: each order published to an SNS topic that the queue
// subscribes to (raw message delivery off).
func BenchmarkSQS1kSNS(b *testing.B) {
	raw := rewrapSQS(b, func(i int, body string) string {
		return awsevents.SNSNotification(fmt.Sprintf("%08x-d533-4a47-aef9-fcf5cf758c76", i), body)
	})
	benchSQS(b, raw, func(r SQSRecord[SNSMessage[benchOrder]]) { benchSink += r.Value.Message.Amount })
}

// BenchmarkSQS1kEventBridge: each order the detail of an EventBridge event
// that a rule sends to the queue.
func BenchmarkSQS1kEventBridge(b *testing.B) {
	raw := rewrapSQS(b, func(i int, body string) string {
		return awsevents.EventBridgeEvent(fmt.Sprintf("%08x-b491-4cf7-a9f1-bf3703467718", i), body)
	})
	benchSQS(b, raw, func(r SQSRecord[EventBridgeEvent[benchOrder]]) { benchSink += r.Value.Detail.Amount })
}

// BenchmarkSQS1kS3: 1,000 S3 event notifications, one record each (no
// plain path to compare with: it is its own payload).
func BenchmarkSQS1kS3(b *testing.B) {
	raw := rewrapSQS(b, func(i int, _ string) string {
		return s3Notification(s3Record(fmt.Sprintf("orders/2025/11/03/ord-s-%08d.json", i), fmt.Sprintf("0055AED6DCD9%06X", i)))
	})
	benchSQS(b, raw, func(r SQSRecord[S3Notification]) { benchSink += float64(r.Value.Records[0].S3.Object.Size) })
}

// BenchmarkSQS1kString: the order bodies as plain text.
func BenchmarkSQS1kString(b *testing.B) {
	benchSQS(b, sqsFixture(b, 1000), func(r SQSRecord[string]) { benchSink += float64(len(r.Value)) })
}

func benchKinesis[T any](b *testing.B, raw []byte, n int, fn func(KinesisRecord[T])) {
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[T]) error {
		fn(r)
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	reportPerRecord(b, n)
}

// rewrapKinesis returns the 10,000-record Kinesis fixture with each
// record's data wrapped by wrap.
func rewrapKinesis(tb testing.TB, wrap func(i int, data []byte) []byte) []byte {
	tb.Helper()
	var ev events.KinesisEvent
	if err := json.Unmarshal(kinesisFixture(tb, 10000), &ev); err != nil {
		tb.Fatal(err)
	}
	for i := range ev.Records {
		ev.Records[i].Kinesis.Data = wrap(i, ev.Records[i].Kinesis.Data)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkKinesis10kEventBridge: each order the detail of an EventBridge
// event that a rule sends to the stream.
func BenchmarkKinesis10kEventBridge(b *testing.B) {
	raw := rewrapKinesis(b, func(i int, d []byte) []byte {
		return []byte(awsevents.EventBridgeEvent(fmt.Sprintf("%08x-b491-4cf7-a9f1-bf3703467718", i), string(d)))
	})
	benchKinesis(b, raw, 10000, func(r KinesisRecord[EventBridgeEvent[benchOrder]]) { benchSink += r.Value.Detail.Amount })
}

// BenchmarkKinesis10kString: the order data as plain text.
func BenchmarkKinesis10kString(b *testing.B) {
	benchKinesis(b, kinesisFixture(b, 10000), 10000, func(r KinesisRecord[string]) { benchSink += float64(len(r.Value)) })
}

// BenchmarkKinesis10kDynamoDBChange: the MODIFY records of
// BenchmarkDynamoDB10k as Kinesis Data Streams for DynamoDB writes them:
// its plain path to compare with.
func BenchmarkKinesis10kDynamoDBChange(b *testing.B) {
	benchKinesis(b, ddbChangeFixture(b), 10000, func(r KinesisRecord[DynamoDBChange[ddbOrder]]) { benchSink += r.Value.New.Amount - r.Value.Old.Amount })
}

// ddbChangeFixture is the MODIFY records of dynamodbFixture(10000) as
// Kinesis Data Streams for DynamoDB writes them.
func ddbChangeFixture(b *testing.B) []byte {
	var ddb events.DynamoDBEvent
	if err := json.Unmarshal(dynamodbFixture(b, 10000), &ddb); err != nil {
		b.Fatal(err)
	}
	kb := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders-cdc"}
	for i, r := range ddb.Records {
		keys, _ := json.Marshal(r.Change.Keys)
		nw, _ := json.Marshal(r.Change.NewImage)
		old, _ := json.Marshal(r.Change.OldImage)
		change := fmt.Sprintf(`{"awsRegion":"us-east-1","dynamodb":{"ApproximateCreationDateTime":%d,"Keys":%s,"NewImage":%s,"OldImage":%s,"SizeBytes":%d,`+
			`"ApproximateCreationDateTimePrecision":"MILLISECOND"},"eventID":"%08x-0c1b-4c8a-9f6e-3d2c1b0a9f8e","eventName":"MODIFY","userIdentity":null,`+
			`"recordFormat":"application/json","tableName":"orders","eventSource":"aws:dynamodb"}`, 1762162200000+int64(i), keys, nw, old, r.Change.SizeBytes, i)
		kb.Add(fmt.Sprintf("%032X", i*7919), []byte(change)) // DynamoDB writes a hash of the key
	}
	raw, err := json.Marshal(kb.Event())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkFirehose1k: a transformation of 1,000 orders that answers each
// with its data.
func BenchmarkFirehose1k(b *testing.B) {
	var ev events.SQSEvent
	if err := json.Unmarshal(sqsFixture(b, 1000), &ev); err != nil {
		b.Fatal(err)
	}
	var datas []string
	for _, r := range ev.Records {
		datas = append(datas, r.Body)
	}
	raw := firehoseEventOf(datas...)
	h, err := NewFirehose(func(ctx context.Context, r FirehoseRecord[benchOrder]) (FirehoseResult, error) {
		benchSink += r.Value.Amount
		return Transformed(r.Data()), nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Invoke(context.Background(), raw); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, 1000)
}
