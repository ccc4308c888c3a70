package source

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/localtest/internal/remote"
)

// sqsPeekAPI is the part of the SQS client SQSQuarantineQueue uses.
type sqsPeekAPI interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// SQSQuarantineQueue is a function's dead-letter queue of Sluice envelopes
// (dlq/sqsdest, SLUICE_DLQ_URL) as a localtest.Quarantine. It leaves the
// queue as it found it: it receives every message, reads the envelopes sent
// since it was opened, and makes every message visible again, so the dead
// letters stay there to be redriven.
//
// A FIFO queue hides a group's later messages while earlier ones are in
// flight (AWS returns up to ten of a group per receive, fauxqs one), so a
// FIFO dead-letter queue holding more of a group than one receive returns
// cannot be read without consuming it: Quarantined then fails, and the run
// says the fates it depends on are not evaluated.
type SQSQuarantineQueue struct {
	api   sqsPeekAPI
	url   string
	since time.Time
}

// SQSQuarantine opens the queue at queueURL, through the endpoint and
// region of cfg, as the run's Quarantine; call it just before the run:
// messages sent before (by the queue's SentTimestamp) are not counted.
func SQSQuarantine(cfg aws.Config, queueURL string) *SQSQuarantineQueue {
	return &SQSQuarantineQueue{api: sqs.NewFromConfig(cfg), url: queueURL, since: time.Now()}
}

// peekVisibility hides the messages while they are read; they are made
// visible again at once after.
const peekVisibility = 60

// Quarantined returns the record keys of the envelopes sent to the queue
// since it was opened (dlq.Envelope.RecordKey: the record's id, with a KPL
// user record's sub-sequence number). It fails, rather than return part of them, when it
// cannot receive every message the queue holds (another consumer has some
// in flight) or a message sent during the run is not an envelope.
func (q *SQSQuarantineQueue) Quarantined(ctx context.Context) ([]string, error) {
	where := "dead-letter queue " + q.url
	attrs, err := q.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q.url,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return nil, remote.Err(ctx, where+": GetQueueAttributes", err)
	}
	visible, _ := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	if n, _ := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]); n > 0 {
		return nil, fmt.Errorf("%s: %d messages are in flight (received by another consumer), so its envelopes cannot all be read", where, n)
	}
	var handles []string
	defer func() { q.release(context.WithoutCancel(ctx), handles) }()
	seen := map[string]bool{}
	var ids []string
	for empty := 0; empty < 3 && (len(seen) < visible || empty == 0); {
		out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q.url, MaxNumberOfMessages: 10,
			VisibilityTimeout: peekVisibility, WaitTimeSeconds: int32(min(empty, 1)),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp}})
		if err != nil {
			return nil, remote.Err(ctx, where+": ReceiveMessage", err)
		}
		if len(out.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range out.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
			if seen[aws.ToString(m.MessageId)] {
				continue
			}
			seen[aws.ToString(m.MessageId)] = true
			ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: message %s has no SentTimestamp to tell it from earlier runs' dead letters", where, aws.ToString(m.MessageId))
			}
			if time.UnixMilli(ms).Before(q.since.Truncate(time.Millisecond)) {
				continue
			}
			e, err := dlq.Unmarshal([]byte(aws.ToString(m.Body)))
			if err != nil {
				return nil, fmt.Errorf("%s: message %s, sent during the run: %w", where, aws.ToString(m.MessageId), err)
			}
			ids = append(ids, e.RecordKey())
		}
	}
	if len(seen) < visible {
		return nil, fmt.Errorf("%s: received %d of its %d messages, so its envelopes cannot all be read", where, len(seen), visible)
	}
	return ids, nil
}

// release makes received messages visible again, 10 per call.
func (q *SQSQuarantineQueue) release(ctx context.Context, handles []string) {
	for start := 0; start < len(handles); start += 10 {
		chunk := handles[start:min(start+10, len(handles))]
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
		}
		// A message left hidden comes back by itself after peekVisibility.
		q.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &q.url, Entries: entries})
	}
}
