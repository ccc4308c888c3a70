// Package inbox reads the messages that sluice redrive and sluice
// fetch-failed work through, from an SQS queue or a file of JSON lines, and
// removes each one only once its work is done: a queue message is deleted,
// a file is rewritten without the line.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message is one message of a Source.
type Message struct {
	// ID names the message for people: the SQS message id, or "line N".
	ID   string
	Body []byte

	handle string // SQS receipt handle
	line   int    // file: index into the file's lines
}

// A Source hands out messages and removes the ones whose work is done.
type Source interface {
	// Next returns up to max messages it has not returned before; none
	// when there are no more.
	Next(ctx context.Context, max int) ([]Message, error)
	// Done removes messages whose work succeeded.
	Done(ctx context.Context, msgs []Message) error
	// Close gives back what is left: a queue makes the messages it holds
	// visible again; a file is rewritten without the lines that are done.
	Close(ctx context.Context) error
	// Name is the queue URL or file name, for messages.
	Name() string
}

// SQSAPI is the part of the SQS client a queue Source uses.
type SQSAPI interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// QueueSource reads an SQS queue. Messages it receives stay hidden for its
// visibility timeout while they are worked on; Close makes the ones not
// done visible again at once, for the next run. A message seen again in the
// same run (its visibility ran out) is not handed out twice.
type QueueSource struct {
	api        SQSAPI
	url        string
	visibility time.Duration
	wait       time.Duration

	held map[string]string // message id -> latest receipt handle, not done
	seen map[string]bool
}

var _ Source = (*QueueSource)(nil)

// Queue returns a Source for the queue at url. visibility is how long a
// received message stays hidden (rounded up to whole seconds; at least 1 s);
// wait is the long-poll wait of each receive (0 to 20 s): the queue counts
// as empty when a long-poll receive returns nothing new, or, with wait 0
// (short polling, which asks only a sample of SQS's servers and may answer
// empty while messages wait), when ShortPollEmpties receives in a row do.
func Queue(api SQSAPI, url string, visibility, wait time.Duration) *QueueSource {
	return &QueueSource{api: api, url: url, visibility: max(visibility, time.Second), wait: min(max(wait, 0), 20*time.Second),
		held: map[string]string{}, seen: map[string]bool{}}
}

// Name is the queue URL.
func (q *QueueSource) Name() string { return q.url }

// ShortPollEmpties is how many short-poll receives in a row must bring
// nothing new before a queue read with wait 0 counts as drained.
const ShortPollEmpties = 3

// Next receives up to max messages, 10 per ReceiveMessage, until it has max
// or the queue counts as drained (see Queue).
func (q *QueueSource) Next(ctx context.Context, max int) ([]Message, error) {
	var out []Message
	empties := 0
	for len(out) < max {
		got, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            &q.url,
			MaxNumberOfMessages: int32(min(max-len(out), 10)),
			VisibilityTimeout:   int32((q.visibility + time.Second - 1) / time.Second),
			WaitTimeSeconds:     int32(q.wait / time.Second),
		})
		if err != nil {
			return out, clientErr(ctx, "SQS queue "+q.url+": ReceiveMessage", err)
		}
		fresh := 0
		for _, m := range got.Messages {
			id := aws.ToString(m.MessageId)
			if q.seen[id] {
				if _, ok := q.held[id]; ok {
					q.held[id] = aws.ToString(m.ReceiptHandle)
				}
				continue
			}
			q.seen[id] = true
			fresh++
			q.held[id] = aws.ToString(m.ReceiptHandle)
			out = append(out, Message{ID: id, Body: []byte(aws.ToString(m.Body)), handle: aws.ToString(m.ReceiptHandle)})
		}
		if fresh > 0 {
			empties = 0
			continue
		}
		if empties++; q.wait > 0 || empties >= ShortPollEmpties {
			break
		}
	}
	return out, nil
}

// Done deletes the messages, 10 per DeleteMessageBatch.
func (q *QueueSource) Done(ctx context.Context, msgs []Message) error {
	var failed []string
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(q.handle(m))}
		}
		out, err := q.api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			return clientErr(ctx, "SQS queue "+q.url+": DeleteMessageBatch", err)
		}
		bad := map[int]bool{}
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			bad[i] = true
			if i >= 0 && i < len(chunk) {
				failed = append(failed, fmt.Sprintf("%s: %s %s", chunk[i].ID, aws.ToString(f.Code), aws.ToString(f.Message)))
			}
		}
		for i, m := range chunk {
			if !bad[i] {
				delete(q.held, m.ID)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("SQS queue %s: could not delete %d message(s), whose work is done (running again repeats it): %s", q.url, len(failed), strings.Join(failed, "; "))
	}
	return nil
}

func (q *QueueSource) handle(m Message) string {
	if h, ok := q.held[m.ID]; ok {
		return h
	}
	return m.handle
}

// Close makes every message received and not done visible again.
func (q *QueueSource) Close(ctx context.Context) error {
	var ids []string
	for id := range q.held {
		ids = append(ids, id)
	}
	var errs []error
	for start := 0; start < len(ids); start += 10 {
		chunk := ids[start:min(start+10, len(ids))]
		entries := make([]sqstypes.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, id := range chunk {
			entries[i] = sqstypes.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(q.held[id])}
		}
		out, err := q.api.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &q.url, Entries: entries})
		if err != nil {
			errs = append(errs, clientErr(ctx, "SQS queue "+q.url+": ChangeMessageVisibilityBatch", err))
			continue
		}
		if len(out.Failed) > 0 {
			errs = append(errs, fmt.Errorf("SQS queue %s: %d message(s) left stay hidden until their visibility timeout ends", q.url, len(out.Failed)))
		}
	}
	q.held = map[string]string{}
	return errors.Join(errs...)
}

// clientErr wraps an SDK error without exposing its type.
func clientErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	return fmt.Errorf("%s: %v", what, err)
}
