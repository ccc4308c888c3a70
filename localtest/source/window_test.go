package source_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

type noop struct{}

func (noop) Invoke(context.Context, []byte) ([]byte, error) { return nil, nil }

// firstBatch runs opts and returns the size of the first invocation's batch.
func firstBatch(t *testing.T, opts localtest.Options, feed func()) int {
	t.Helper()
	var mu sync.Mutex
	first := -1
	opts.Invoker = localtest.InProcess(noop{})
	opts.Trace = func(e localtest.TraceEntry) {
		mu.Lock()
		defer mu.Unlock()
		if first < 0 {
			first = len(e.IDs)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := localtest.Run(awsCtx(t, 30*time.Second), opts)
		done <- err
	}()
	time.Sleep(400 * time.Millisecond)
	feed()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

// TestAWSBatchingWindowKinesis: on a real stream, a short batch waits up to
// MaximumBatchingWindowInSeconds for more records before the invocation.
func TestAWSBatchingWindowKinesis(t *testing.T) {
	t.Parallel()
	srv := servers.Kinesis(t)
	ctx := awsCtx(t, 30*time.Second)
	k := kinesis.NewFromConfig(srv.AWSConfig())
	name := servers.UniqueName(t, "window")
	if _, err := k.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := k.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatal(err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	put := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: aws.String("pk"), Data: []byte(fmt.Sprint(i))}); err != nil {
				t.Error(err)
			}
		}
	}
	put(3)
	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: aws.Int(10),
		MaximumBatchingWindowInSeconds: aws.Int(2)}
	got := firstBatch(t, localtest.Options{Mapping: m, Stream: source.KinesisStream(srv.AWSConfig(), name, "TRIM_HORIZON")}, func() { put(3) })
	if got != 6 {
		t.Fatalf("first batch held %d records, want the 3 there at the start and the 3 put within the window", got)
	}
}

// TestAWSBatchingWindowSQS: the same for a real queue.
func TestAWSBatchingWindowSQS(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 30*time.Second)
	c := sqs.NewFromConfig(srv.AWSConfig())
	url, _ := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "window"), nil)
	send := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
				t.Error(err)
			}
		}
	}
	send(2)
	m := &localtest.Mapping{EventSource: events.SourceSQS, BatchSize: aws.Int(10), MaximumBatchingWindowInSeconds: aws.Int(2)}
	got := firstBatch(t, localtest.Options{Mapping: m, Queue: source.SQSQueue(srv.AWSConfig(), url)}, func() { send(2) })
	if got != 4 {
		t.Fatalf("first batch held %d messages, want 4", got)
	}
}
