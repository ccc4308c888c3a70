package source_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest/source"
)

// A dead-letter queue on the SQS emulator read as a run's Quarantine: the
// envelopes sent since it was opened count, earlier ones do not, the
// messages stay in the queue, and a message that is not an envelope is an
// error, never skipped.
func TestSQSQuarantine(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 45*time.Second)
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)
	url, _ := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "dlq"), nil)
	send := func(body string) {
		t.Helper()
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	envelope := func(id string) string {
		e := &dlq.Envelope{Version: dlq.Version, Source: events.SourceSQS, RecordID: id, Record: []byte(`{"messageId":"` + id + `"}`)}
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	send(envelope("earlier-run"))
	time.Sleep(5 * time.Millisecond) // SentTimestamp has milliseconds: the next message is sent after the queue is opened
	q := source.SQSQuarantine(cfg, url)
	if ids, err := q.Quarantined(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("nothing sent since it was opened: %v %v", ids, err)
	}
	for i := range 12 {
		send(envelope("m" + string(rune('a'+i))))
	}
	// A user record of a KPL aggregate is named by its record key: its
	// aggregate's sequence number and its sub-sequence number.
	sub := int64(2)
	kplEnv, err := (&dlq.Envelope{Version: dlq.Version, Source: events.SourceKinesis, RecordID: "49", SubSequenceNumber: &sub, Record: []byte(`{}`)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	send(string(kplEnv))
	ids, err := q.Quarantined(ctx)
	slices.Sort(ids)
	if err != nil || len(ids) != 13 || ids[0] != "49:2" || ids[1] != "ma" || ids[12] != "ml" {
		t.Fatalf("got %v %v, want the 13 envelopes sent during the run", ids, err)
	}
	// The dead letters are still there, visible, to be redriven.
	again, err := q.Quarantined(ctx)
	if err != nil || len(again) != 13 {
		t.Fatalf("a second read: %v %v", again, err)
	}
	send(`{"not":"an envelope"}`)
	if _, err := q.Quarantined(ctx); err == nil || !strings.Contains(err.Error(), "sent during the run") {
		t.Fatalf("a message that is not an envelope: %v", err)
	}
}

// A FIFO dead-letter queue hides a group's later messages while one is in
// flight, so it cannot be read without consuming it: when the runner cannot
// receive every message, it says so instead of returning part of them.
func TestSQSQuarantineFIFO(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 45*time.Second)
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)
	url, _ := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "dlq")+".fifo", map[string]string{"FifoQueue": "true"})
	q := source.SQSQuarantine(cfg, url)
	for i, group := range []string{"g1", "g1", "g2"} {
		e := &dlq.Envelope{Version: dlq.Version, Source: events.SourceSQS, RecordID: fmt.Sprint("m", i), Record: []byte(`{}`)}
		b, _ := e.Marshal()
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(string(b)),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(fmt.Sprint("d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	// fauxqs returns one message per group per receive (AWS up to ten):
	// g1's second envelope stays hidden behind its first.
	if ids, err := q.Quarantined(ctx); err == nil || !strings.Contains(err.Error(), "received 2 of its 3 messages") {
		t.Fatalf("got %v %v: want an error saying not every message could be received", ids, err)
	}
}
