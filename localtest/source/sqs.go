package source

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/remote"
)

// sqsAPI is the part of the SQS client SQSQueueSource uses.
type sqsAPI interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// SQSQueueSource is a real SQS queue (AWS, fauxqs, LocalStack) as a Queue:
// the server keeps visibility timeouts, receive counts, redrive to the
// dead-letter queue and FIFO group locks. It is safe for concurrent use.
//
// FIFO batches: AWS may return several messages of one message group in one
// ReceiveMessage; fauxqs returns at most one per group per call. Receive
// calls ReceiveMessage until it has max messages or a call returns none, and
// while a group has a message in flight no call returns another of it, so
// against fauxqs a Receive holds at most one message per group.
type SQSQueueSource struct {
	api    sqsAPI
	region string
	url    string

	mu     sync.Mutex
	arn    string // the queue's QueueArn, once known
	dlqARN string // the DLQ named by RedrivePolicy, when resolved
	dlqURL string
}

// SQSQueue returns a Queue for the queue at queueURL, using the endpoint and
// region of cfg. Messages carry eventSourceARN = the queue's QueueArn
// attribute and awsRegion = the region in that ARN (cfg's region if none).
func SQSQueue(cfg aws.Config, queueURL string) *SQSQueueSource {
	return &SQSQueueSource{api: sqs.NewFromConfig(cfg), region: cfg.Region, url: queueURL}
}

// Receive returns up to max visible messages and hides them for visibility,
// rounded up to whole seconds; visibility <= 0 uses the queue's own
// VisibilityTimeout. It short-polls (WaitTimeSeconds 0), up to 10 messages
// per ReceiveMessage call.
func (q *SQSQueueSource) Receive(ctx context.Context, max int, visibility time.Duration) ([]invocation.QueueMessage, error) {
	if max <= 0 {
		return nil, nil
	}
	arn, err := q.queueARN(ctx)
	if err != nil {
		return nil, err
	}
	var vis int32
	if visibility > 0 {
		vis = int32((visibility + time.Second - 1) / time.Second)
	}
	var out []invocation.QueueMessage
	for len(out) < max {
		got, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    &q.url,
			MaxNumberOfMessages:         int32(min(max-len(out), 10)),
			VisibilityTimeout:           vis,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			return out, remote.Err(ctx, "localtest: SQS queue "+q.url+": ReceiveMessage", err)
		}
		if len(got.Messages) == 0 {
			break
		}
		for _, m := range got.Messages {
			qm, err := sqsMessage(m, arn, arnField(arn, 3, q.region))
			if err != nil {
				return out, err
			}
			out = append(out, qm)
		}
	}
	return out, nil
}

// sqsLambdaAttributes are the system attributes Lambda puts in a record's
// attributes; others a server returns for All are left out.
var sqsLambdaAttributes = []string{
	"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
	"MessageGroupId", "SequenceNumber", "MessageDeduplicationId",
	"AWSTraceHeader", "DeadLetterQueueSourceArn",
}

// sqsEventMessage is events.SQSMessage with md5OfMessageAttributes left out
// when empty, as Lambda does (see events.MarshalEvent).
type sqsEventMessage struct {
	events.SQSMessage
	Md5OfMessageAttributes *string `json:"md5OfMessageAttributes,omitempty"`
}

// sqsMessage converts a received message to the Lambda event record.
func sqsMessage(m sqstypes.Message, queueARN, region string) (invocation.QueueMessage, error) {
	ev := events.SQSMessage{
		MessageId:         aws.ToString(m.MessageId),
		ReceiptHandle:     aws.ToString(m.ReceiptHandle),
		Body:              aws.ToString(m.Body),
		Md5OfBody:         aws.ToString(m.MD5OfBody),
		Attributes:        map[string]string{},
		MessageAttributes: map[string]events.SQSMessageAttribute{},
		EventSourceARN:    queueARN,
		EventSource:       "aws:sqs",
		AWSRegion:         region,
	}
	for _, k := range sqsLambdaAttributes {
		if v, ok := m.Attributes[k]; ok {
			ev.Attributes[k] = v
		}
	}
	for k, v := range m.MessageAttributes {
		a := events.SQSMessageAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: v.StringListValues,
			BinaryListValues: v.BinaryListValues,
			DataType:         aws.ToString(v.DataType),
		}
		// Lambda always sends both lists, empty when unused.
		if a.StringListValues == nil {
			a.StringListValues = []string{}
		}
		if a.BinaryListValues == nil {
			a.BinaryListValues = [][]byte{}
		}
		ev.MessageAttributes[k] = a
	}
	out := sqsEventMessage{SQSMessage: ev}
	if md5 := aws.ToString(m.MD5OfMessageAttributes); md5 != "" {
		out.SQSMessage.Md5OfMessageAttributes = md5
		out.Md5OfMessageAttributes = &md5
	}
	b, err := json.Marshal(out)
	if err != nil {
		return invocation.QueueMessage{}, fmt.Errorf("localtest: encode SQS message %s: %w", ev.MessageId, err)
	}
	count, _ := strconv.Atoi(ev.Attributes["ApproximateReceiveCount"])
	var sent time.Time
	if ms, err := strconv.ParseInt(ev.Attributes["SentTimestamp"], 10, 64); err == nil {
		sent = time.UnixMilli(ms)
	}
	return invocation.QueueMessage{
		MessageID:     ev.MessageId,
		ReceiptHandle: ev.ReceiptHandle,
		GroupID:       ev.Attributes["MessageGroupId"],
		ReceiveCount:  count,
		Sent:          sent,
		Event:         b,
	}, nil
}

// Delete removes received messages with DeleteMessageBatch, 10 per call. A
// handle the server rejects is reported in the error; the others are still
// deleted.
func (q *SQSQueueSource) Delete(ctx context.Context, receiptHandles []string) error {
	var failed []string
	for start := 0; start < len(receiptHandles); start += 10 {
		chunk := receiptHandles[start:min(start+10, len(receiptHandles))]
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h)}
		}
		out, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			return remote.Err(ctx, "localtest: SQS queue "+q.url+": DeleteMessageBatch", err)
		}
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			h := ""
			if i >= 0 && i < len(chunk) {
				h = chunk[i]
			}
			failed = append(failed, fmt.Sprintf("%q: %s %s", h, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("localtest: SQS queue %s: could not delete %d message(s): %s", q.url, len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// Counts reports the queue's approximate number of messages (visible, in
// flight and delayed) and, when the queue has a RedrivePolicy, the same for
// its dead-letter queue. The numbers are the server's approximations.
func (q *SQSQueueSource) Counts(ctx context.Context) (left, deadLettered int, err error) {
	attrs, err := q.attributes(ctx, q.url, sqstypes.QueueAttributeNameRedrivePolicy)
	if err != nil {
		return 0, 0, err
	}
	left = messageCount(attrs)
	policy := attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if policy == "" {
		return left, 0, nil
	}
	dlq, err := q.deadLetterURL(ctx, policy)
	if err != nil {
		return left, 0, err
	}
	dattrs, err := q.attributes(ctx, dlq)
	if err != nil {
		return left, 0, err
	}
	return left, messageCount(dattrs), nil
}

func messageCount(attrs map[string]string) int {
	n := 0
	for _, k := range []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	} {
		v, _ := strconv.Atoi(attrs[string(k)])
		n += v
	}
	return n
}

func (q *SQSQueueSource) attributes(ctx context.Context, url string, extra ...sqstypes.QueueAttributeName) (map[string]string, error) {
	out, err := q.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: &url,
		AttributeNames: append([]sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		}, extra...),
	})
	if err != nil {
		return nil, remote.Err(ctx, "localtest: SQS queue "+url+": GetQueueAttributes", err)
	}
	return out.Attributes, nil
}

// deadLetterURL resolves the RedrivePolicy's deadLetterTargetArn to a queue
// URL with GetQueueUrl (by name and owner account), cached per ARN.
func (q *SQSQueueSource) deadLetterURL(ctx context.Context, policy string) (string, error) {
	var p struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(policy), &p); err != nil || p.DeadLetterTargetArn == "" {
		return "", fmt.Errorf("localtest: SQS queue %s: RedrivePolicy %s has no deadLetterTargetArn", q.url, policy)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dlqARN == p.DeadLetterTargetArn {
		return q.dlqURL, nil
	}
	name := arnField(p.DeadLetterTargetArn, 5, "")
	if name == "" {
		return "", fmt.Errorf("localtest: SQS queue %s: dead-letter target %q is not an SQS queue ARN", q.url, p.DeadLetterTargetArn)
	}
	in := &sqs.GetQueueUrlInput{QueueName: &name}
	if acct := arnField(p.DeadLetterTargetArn, 4, ""); acct != "" {
		in.QueueOwnerAWSAccountId = &acct
	}
	out, err := q.api.GetQueueUrl(ctx, in)
	if err != nil {
		return "", remote.Err(ctx, fmt.Sprintf("localtest: SQS queue %s: GetQueueUrl of its dead-letter queue %s", q.url, p.DeadLetterTargetArn), err)
	}
	q.dlqARN, q.dlqURL = p.DeadLetterTargetArn, aws.ToString(out.QueueUrl)
	return q.dlqURL, nil
}

func (q *SQSQueueSource) queueARN(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.arn != "" {
		return q.arn, nil
	}
	out, err := q.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: &q.url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", remote.Err(ctx, "localtest: SQS queue "+q.url+": GetQueueAttributes QueueArn", err)
	}
	q.arn = out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if q.arn == "" {
		return "", fmt.Errorf("localtest: SQS queue %s: GetQueueAttributes returned no QueueArn", q.url)
	}
	return q.arn, nil
}
