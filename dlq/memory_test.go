package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/attemptstest"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/deadletter"
)

func TestMemory(t *testing.T) {
	attemptstest.Run(t, func(*testing.T) dlq.AttemptsStore { return dlq.NewMemory(0) })
}

func TestMemoryForgets(t *testing.T) {
	m := dlq.NewMemory(time.Minute)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	m.Begin(ctx, "k", now)
	if a, _ := m.Begin(ctx, "k", now.Add(59*time.Second)); a.Count != 2 {
		t.Fatalf("within the TTL: %+v", a)
	}
	if a, _ := m.Begin(ctx, "k", now.Add(59*time.Second+time.Minute)); a.Count != 1 {
		t.Fatalf("a TTL after the last update: %+v, want a fresh count", a)
	}
}

func TestAttemptsKeyOf(t *testing.T) {
	arn := "arn:aws:kinesis:us-east-1:123456789012:stream/s"
	for _, tc := range []struct {
		name     string
		e        dlq.Envelope
		key, old string
	}{
		{"kinesis by eventID", dlq.Envelope{Source: events.SourceKinesis, SourceARN: arn, FunctionName: "f", RecordID: "49", EventID: "shardId-000000000001:49", Shard: "shardId-000000000001"},
			"f#" + arn + "#shardId-000000000001:49", "f#" + arn + "#49"},
		{"kinesis without eventID", dlq.Envelope{Source: events.SourceKinesis, SourceARN: arn, FunctionName: "f", RecordID: "49", Shard: "shardId-000000000002", SequenceNumber: "49"},
			"f#" + arn + "#shardId-000000000002:49", "f#" + arn + "#49"},
		{"sqs by message id", dlq.Envelope{Source: events.SourceSQS, SourceARN: "q", FunctionName: "f", RecordID: "m1", EventID: "m1"}, "f#q#m1", ""},
		{"dynamodb by sequence number", dlq.Envelope{Source: events.SourceDynamoDB, SourceARN: "d", FunctionName: "f", RecordID: "7", EventID: "e7"}, "f#d#7", ""},
	} {
		if got, old := dlq.AttemptsKeyOf(&tc.e), deadletter.KinesisLegacyAttemptsKey(&tc.e); got != tc.key || old != tc.old {
			t.Errorf("%s: key %q, legacy %q; want %q, %q", tc.name, got, old, tc.key, tc.old)
		}
	}
}
