package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// The envelope pairs: each envelope beside its plain path, the same
// payload type and number of records. Each iteration invokes both, one
// after the other, so that a change of the machine's load falls on both
// alike; the benchmark reports each side's ns/record and allocs/op and
// their ratio (envelope-x: the envelope's ns/record over the plain
// path's; bytes-x: the envelope's event over the plain one in bytes).
// ns/op and allocs/op are of the two together.

type invoker interface {
	Invoke(context.Context, []byte) ([]byte, error)
}

func benchPair(b *testing.B, records int, plain invoker, plainRaw []byte, env invoker, envRaw []byte) {
	call := func(h invoker, raw []byte) time.Duration {
		t := time.Now()
		if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
		return time.Since(t)
	}
	b.ReportAllocs()
	var tp, te time.Duration
	n := 0
	for b.Loop() {
		if n%2 == 0 { // alternate which goes first
			tp += call(plain, plainRaw)
			te += call(env, envRaw)
		} else {
			te += call(env, envRaw)
			tp += call(plain, plainRaw)
		}
		n++
	}
	b.StopTimer()
	p, e := float64(tp.Nanoseconds())/float64(n*records), float64(te.Nanoseconds())/float64(n*records)
	b.ReportMetric(p, "plain-ns/record")
	b.ReportMetric(e, "envelope-ns/record")
	b.ReportMetric(e/p, "envelope-x")
	// The envelope's event over the plain one in bytes: envelope-x over
	// bytes-x is the envelope's cost per byte of event against the plain
	// path's.
	b.ReportMetric(float64(len(envRaw))/float64(len(plainRaw)), "bytes-x")
	b.ReportMetric(testing.AllocsPerRun(3, func() { plain.Invoke(context.Background(), plainRaw) }), "plain-allocs/op")
	b.ReportMetric(testing.AllocsPerRun(3, func() { env.Invoke(context.Background(), envRaw) }), "envelope-allocs/op")
}

func pairSQS[T any](b *testing.B, fn func(SQSRecord[T])) invoker {
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[T]) error {
		fn(r)
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func pairKinesis[T any](b *testing.B, fn func(KinesisRecord[T])) invoker {
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[T]) error {
		fn(r)
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkEnvelopePairSNS: BenchmarkSQS1k beside BenchmarkSQS1kSNS.
func BenchmarkEnvelopePairSNS(b *testing.B) {
	sns := rewrapSQS(b, func(i int, body string) string {
		return awsevents.SNSNotification(fmt.Sprintf("%08x-d533-4a47-aef9-fcf5cf758c76", i), body)
	})
	benchPair(b, 1000,
		pairSQS(b, func(r SQSRecord[benchOrder]) { benchSink += r.Value.Amount }), sqsFixture(b, 1000),
		pairSQS(b, func(r SQSRecord[SNSMessage[benchOrder]]) { benchSink += r.Value.Message.Amount }), sns)
}

// BenchmarkEnvelopePairEventBridgeSQS: BenchmarkSQS1k beside
// BenchmarkSQS1kEventBridge.
func BenchmarkEnvelopePairEventBridgeSQS(b *testing.B) {
	eb := rewrapSQS(b, func(i int, body string) string {
		return awsevents.EventBridgeEvent(fmt.Sprintf("%08x-b491-4cf7-a9f1-bf3703467718", i), body)
	})
	benchPair(b, 1000,
		pairSQS(b, func(r SQSRecord[benchOrder]) { benchSink += r.Value.Amount }), sqsFixture(b, 1000),
		pairSQS(b, func(r SQSRecord[EventBridgeEvent[benchOrder]]) { benchSink += r.Value.Detail.Amount }), eb)
}

// BenchmarkEnvelopePairEventBridgeKinesis: BenchmarkKinesis10k beside
// BenchmarkKinesis10kEventBridge.
func BenchmarkEnvelopePairEventBridgeKinesis(b *testing.B) {
	eb := rewrapKinesis(b, func(i int, d []byte) []byte {
		return []byte(awsevents.EventBridgeEvent(fmt.Sprintf("%08x-b491-4cf7-a9f1-bf3703467718", i), string(d)))
	})
	benchPair(b, 10000,
		pairKinesis(b, func(r KinesisRecord[benchOrder]) { benchSink += r.Value.Amount }), kinesisFixture(b, 10000),
		pairKinesis(b, func(r KinesisRecord[EventBridgeEvent[benchOrder]]) { benchSink += r.Value.Detail.Amount }), eb)
}

// BenchmarkEnvelopePairDynamoDBChange: BenchmarkDynamoDB10k (the changes
// as DynamoDB Streams delivers them) beside
// BenchmarkKinesis10kDynamoDBChange (as Kinesis Data Streams for DynamoDB
// writes them).
func BenchmarkEnvelopePairDynamoDBChange(b *testing.B) {
	plain, err := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbOrder]) error {
		benchSink += r.New.Amount - r.Old.Amount
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	benchPair(b, 10000, plain, dynamodbFixture(b, 10000),
		pairKinesis(b, func(r KinesisRecord[DynamoDBChange[ddbOrder]]) { benchSink += r.Value.New.Amount - r.Value.Old.Amount }), ddbChangeFixture(b))
}

// snsByHand is what a function without the envelope decodes the same SQS
// bodies into: the notification's fields, then its Message by hand.
type snsByHand struct {
	Type, MessageID, TopicArn, Subject, Message, Timestamp string
	MessageAttributes                                      map[string]SNSMessageAttribute
}

// BenchmarkEnvelopePairSNSByHand: the SNS envelope beside the plain path
// on the same bytes, decoding the notification into a struct of its
// fields and then its Message with the same codec, as a function without
// the envelope would; BenchmarkEnvelopePairSNS compares with a plain body
// of less than half the bytes.
func BenchmarkEnvelopePairSNSByHand(b *testing.B) {
	sns := rewrapSQS(b, func(i int, body string) string {
		return awsevents.SNSNotification(fmt.Sprintf("%08x-d533-4a47-aef9-fcf5cf758c76", i), body)
	})
	codec := JSON()
	benchPair(b, 1000,
		pairSQS(b, func(r SQSRecord[snsByHand]) {
			var o benchOrder
			if err := DecodeValue(codec, []byte(r.Value.Message), &o); err != nil {
				b.Fatal(err)
			}
			benchSink += o.Amount
		}), sns,
		pairSQS(b, func(r SQSRecord[SNSMessage[benchOrder]]) { benchSink += r.Value.Message.Amount }), sns)
}
