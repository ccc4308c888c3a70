package sqsdest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/sqsdest"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/deadletter"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// counting counts SendMessageBatch calls and the entries of the largest.
type counting struct {
	sqsdest.Client
	calls, maxEntries, maxBytes atomic.Int64
}

func (c *counting) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.calls.Add(1)
	n := 0
	for _, e := range in.Entries {
		n += len(aws.ToString(e.MessageBody))
	}
	for _, pair := range []struct {
		v *atomic.Int64
		n int64
	}{{&c.maxEntries, int64(len(in.Entries))}, {&c.maxBytes, int64(n)}} {
		for {
			cur := pair.v.Load()
			if pair.n <= cur || pair.v.CompareAndSwap(cur, pair.n) {
				break
			}
		}
	}
	return c.Client.SendMessageBatch(ctx, in, opts...)
}

func queue(t *testing.T, client *sqs.Client, fifo bool) string {
	t.Helper()
	name := servers.UniqueName(t, "dlq")
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := client.CreateQueue(testCtx(t), &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func drain(t *testing.T, client *sqs.Client, url string, want int) []types.Message {
	t.Helper()
	var got []types.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(testCtx(t), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.Messages...)
		for _, m := range out.Messages { // unblocks a FIFO group
			if _, err := client.DeleteMessage(testCtx(t), &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

func envelope(i int, record string) *dlq.Envelope {
	return &dlq.Envelope{
		Version: dlq.Version, Source: events.SourceKinesis, SourceARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
		Shard: "shardId-000000000001", RecordID: fmt.Sprintf("4960%04d", i), EventID: fmt.Sprintf("shardId-000000000001:4960%04d", i),
		SequenceNumber: fmt.Sprintf("4960%04d", i), PartitionKey: "pk", Attempts: 3,
		FirstFailure: time.Unix(1000, 0).UTC(), LastFailure: time.Unix(2000, 0).UTC(), Error: "boom", Class: "plain",
		Reason: dlq.ReasonAttempts, FunctionName: "orders", RequestID: "req-1", Record: json.RawMessage(record),
	}
}

// TestSendStandard sends 25 envelopes, three of them over SQS's former
// 256 KiB limit, to a standard queue on fauxqs with the defaults: each
// arrives whole, in at most ten per call and 1 MiB per call.
func TestSendStandard(t *testing.T) {
	t.Parallel()
	client := sqs.NewFromConfig(servers.SQS(t).AWSConfig())
	url := queue(t, client, false)
	c := &counting{Client: client}
	d, err := sqsdest.New(c, url)
	if err != nil {
		t.Fatal(err)
	}
	var envs []*dlq.Envelope
	want := map[string]string{}
	for i := range 25 {
		rec := fmt.Sprintf(`{"kinesis":{"data":"%d"}}`, i)
		if i%10 == 4 {
			rec = `{"kinesis":{"data":"` + strings.Repeat("A", 300_000) + `"}}`
		}
		envs = append(envs, envelope(i, rec))
		want[envs[i].RecordID] = rec
	}
	if err := d.Send(testCtx(t), envs); err != nil {
		t.Fatal(err)
	}
	if c.maxEntries.Load() > 10 || c.maxBytes.Load() > sqsdest.DefaultMaxMessageSize || c.calls.Load() < 3 {
		t.Fatalf("%d calls, largest %d entries, %d bytes", c.calls.Load(), c.maxEntries.Load(), c.maxBytes.Load())
	}
	msgs := drain(t, client, url, 25)
	if len(msgs) != 25 {
		t.Fatalf("received %d messages, want 25", len(msgs))
	}
	for _, m := range msgs {
		e, err := dlq.Unmarshal([]byte(aws.ToString(m.Body)))
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Record) != want[e.RecordID] || e.Truncated != nil || e.Attempts != 3 || e.Shard != "shardId-000000000001" {
			t.Fatalf("envelope %s came back as %.200s", e.RecordID, aws.ToString(m.Body))
		}
		delete(want, e.RecordID)
	}
}

// TestSendTruncates sends a record over the queue's maximum message size:
// it arrives cut, marked, with its coordinates.
func TestSendTruncates(t *testing.T) {
	t.Parallel()
	client := sqs.NewFromConfig(servers.SQS(t).AWSConfig())
	url := queue(t, client, false)
	d, err := sqsdest.New(client, url, sqsdest.WithMaxMessageSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	rec := `{"kinesis":{"data":"` + strings.Repeat("B", 10_000) + `"}}`
	if err := d.Send(testCtx(t), []*dlq.Envelope{envelope(1, rec)}); err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, client, url, 1)
	if len(msgs) != 1 {
		t.Fatalf("received %d messages", len(msgs))
	}
	body := aws.ToString(msgs[0].Body)
	e, err := dlq.Unmarshal([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var prefix string
	if len(body) > 4096 || e.Truncated == nil || e.Truncated.OriginalBytes != len(rec) || json.Unmarshal(e.Record, &prefix) != nil ||
		!strings.HasPrefix(rec, prefix) || len(prefix) < 2000 || e.SequenceNumber != "49600001" || e.SourceARN == "" {
		t.Fatalf("truncated envelope (%d bytes): %.300s", len(body), body)
	}
}

// TestSendUpToTheLimit sends, with the defaults, an envelope of exactly
// 1 MiB, SQS's largest message (the SendMessage and SendMessageBatch API
// references: "1 MiB or 1,048,576 bytes"; fauxqs checks a queue's
// MaximumMessageSize, 1 MiB by default, as SQS does): it arrives whole. One
// byte more and it arrives with its record cut to fit, marked, with its
// coordinates.
func TestSendUpToTheLimit(t *testing.T) {
	t.Parallel()
	client := sqs.NewFromConfig(servers.SQS(t).AWSConfig())
	url := queue(t, client, false)
	d, err := sqsdest.New(client, url)
	if err != nil {
		t.Fatal(err)
	}
	sized := func(i, n int) (*dlq.Envelope, string) {
		base, _ := envelope(i, `{"kinesis":{"data":""}}`).Marshal()
		rec := `{"kinesis":{"data":"` + strings.Repeat("C", n-len(base)) + `"}}`
		e := envelope(i, rec)
		if b, _ := e.Marshal(); len(b) != n {
			t.Fatalf("envelope of %d bytes, want %d", len(b), n)
		}
		return e, rec
	}
	const sqsMax = 1_048_576
	if sqsdest.DefaultMaxMessageSize != sqsMax {
		t.Fatalf("DefaultMaxMessageSize is %d, not SQS's %d", sqsdest.DefaultMaxMessageSize, sqsMax)
	}
	whole, wholeRec := sized(1, sqsMax)
	over, overRec := sized(2, sqsMax+1)
	if err := d.Send(testCtx(t), []*dlq.Envelope{whole, over}); err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, client, url, 2)
	if len(msgs) != 2 {
		t.Fatalf("received %d messages", len(msgs))
	}
	for _, m := range msgs {
		body := aws.ToString(m.Body)
		e, err := dlq.Unmarshal([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		switch e.RecordID {
		case whole.RecordID:
			if len(body) != sqsMax || e.Truncated != nil || string(e.Record) != wholeRec {
				t.Errorf("the 1 MiB envelope came back as %d bytes, truncated %+v", len(body), e.Truncated)
			}
		case over.RecordID:
			if len(body) > sqsMax || e.Truncated == nil || e.Truncated.OriginalBytes != len(overRec) || e.SequenceNumber != over.SequenceNumber {
				t.Errorf("the envelope over 1 MiB came back as %d bytes, truncated %+v", len(body), e.Truncated)
			}
		}
	}
}

// TestSendFIFODeduplicates sends the same quarantine twice to a FIFO queue:
// the queue keeps one; a later attempt of the record is a new message.
func TestSendFIFODeduplicates(t *testing.T) {
	t.Parallel()
	client := sqs.NewFromConfig(servers.SQS(t).AWSConfig())
	url := queue(t, client, true)
	d, err := sqsdest.New(client, url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	e := envelope(7, `{"x":1}`)
	for range 2 {
		if err := d.Send(ctx, []*dlq.Envelope{e}); err != nil {
			t.Fatal(err)
		}
	}
	later := *e
	later.Attempts = 4
	if err := d.Send(ctx, []*dlq.Envelope{&later}); err != nil {
		t.Fatal(err)
	}
	// The same ids failing at another time (a local runner's second run
	// with the same seed): another quarantine, not a repeat of the first.
	rerun := *e
	rerun.LastFailure = e.LastFailure.Add(time.Minute)
	if err := d.Send(ctx, []*dlq.Envelope{&rerun}); err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, client, url, 3)
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, out.Messages...)
	if len(msgs) != 3 {
		t.Fatalf("received %d messages, want 3 (the repeated send dropped)", len(msgs))
	}
	if g := msgs[0].Attributes["MessageGroupId"]; g != "shardId-000000000001" {
		t.Fatalf("MessageGroupId %q", g)
	}
}

// fake answers SendMessageBatch with a canned response: a rare error path,
// forced.
type fake struct {
	mu     sync.Mutex
	calls  int
	answer func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
}

func (f *fake) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.answer(f.calls, in)
}

func TestSendHalfSucceeds(t *testing.T) {
	// Entry 1 is refused as the sender's fault, entry 2 fails on SQS's side
	// once and then succeeds, entry 3 is in neither list.
	f := &fake{answer: func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		out := &sqs.SendMessageBatchOutput{}
		for _, e := range in.Entries {
			body := aws.ToString(e.MessageBody)
			switch {
			case strings.Contains(body, `"recordId":"49600001"`):
				out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InvalidMessageContents"), SenderFault: true, Message: aws.String("bad")})
			case strings.Contains(body, `"recordId":"49600002"`) && call == 1:
				out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again")})
			case strings.Contains(body, `"recordId":"49600003"`):
			default:
				out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
			}
		}
		return out, nil
	}}
	d, err := sqsdest.New(f, "https://sqs.us-east-1.amazonaws.com/1/dlq")
	if err != nil {
		t.Fatal(err)
	}
	envs := []*dlq.Envelope{envelope(0, `{}`), envelope(1, `{}`), envelope(2, `{}`), envelope(3, `{}`)}
	err = d.Send(context.Background(), envs)
	errs := deadletter.Rejected(err, 4)
	if errs[0] != nil || errs[1] == nil || errs[2] != nil || errs[3] == nil || f.calls != 2 {
		t.Fatalf("per envelope %v after %d calls", errs, f.calls)
	}
	if !strings.Contains(errs[1].Error(), "InvalidMessageContents") || !strings.Contains(errs[1].Error(), "49600001") {
		t.Fatalf("error %v", errs[1])
	}
}

func TestSendCallFails(t *testing.T) {
	boom := errors.New("connection refused")
	f := &fake{answer: func(int, *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) { return nil, boom }}
	d, _ := sqsdest.New(f, "https://sqs.us-east-1.amazonaws.com/1/dlq")
	var envs []*dlq.Envelope
	for i := range 12 {
		envs = append(envs, envelope(i, `{}`))
	}
	for i, err := range deadletter.Rejected(d.Send(context.Background(), envs), 12) {
		if !errors.Is(err, boom) {
			t.Fatalf("envelope %d: %v", i, err)
		}
	}
	if f.calls != 2 {
		t.Fatalf("%d calls for 12 envelopes, want 2", f.calls)
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    sqsdest.Client
		url  string
		opts []sqsdest.Option
	}{
		{"nil client", nil, "u", nil},
		{"no url", &fake{}, "", nil},
		{"tiny messages", &fake{}, "u", []sqsdest.Option{sqsdest.WithMaxMessageSize(10)}},
		{"messages over SQS's 1 MiB", &fake{}, "u", []sqsdest.Option{sqsdest.WithMaxMessageSize(1<<20 + 1)}},
		{"no concurrency", &fake{}, "u", []sqsdest.Option{sqsdest.WithConcurrency(0)}},
	} {
		if _, err := sqsdest.New(tc.c, tc.url, tc.opts...); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}
