package eventscan

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func TestResources(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"kinesis", KinesisShard([]events.KinesisEventRecord{{EventID: "shardId-000000000003:4959"}, {EventID: "other:1"}}), "shardId-000000000003"},
		{"kinesis without a colon", KinesisShard([]events.KinesisEventRecord{{EventID: "shardId-1"}}), "shardId-1"},
		{"kinesis empty", KinesisShard(nil), ""},
		{"sqs", SQSQueue([]events.SQSMessage{{EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}}), "orders.fifo"},
		{"sqs without an arn", SQSQueue([]events.SQSMessage{{}}), ""},
		{"sqs empty", SQSQueue(nil), ""},
		{"kafka", KafkaTopic([]string{"orders-eu-3", "other-1"}), "orders-eu"},
		{"kafka without a partition", KafkaTopic([]string{"orders"}), "orders"},
		{"kafka leading dash", KafkaTopic([]string{"-3"}), "-3"},
		{"kafka empty", KafkaTopic(nil), ""},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestUnixMilli(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"1762162200000", time.UnixMilli(1762162200000)},
		{"0", time.UnixMilli(0)},
		{"999999999999999999", time.UnixMilli(999999999999999999)},
		{"1000000000000000000", time.UnixMilli(1000000000000000000)},
		{"-5", time.UnixMilli(-5)},
		{"+5", time.UnixMilli(5)},
		{"", time.Time{}},
		{"12a", time.Time{}},
		{"1.5", time.Time{}},
		{"99999999999999999999", time.Time{}}, // overflows int64
	} {
		if got := UnixMilli(c.in); !got.Equal(c.want) {
			t.Errorf("UnixMilli(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
