// Package emuqueue is the runner's emulated SQS queue: visibility
// timeouts, receive counts, redrive to a dead-letter queue after
// maxReceiveCount receives, and FIFO group locking, on the runner's clock.
// Package localtest fills it from records and reads it as a
// localtest.Queue.
package emuqueue

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/invocation"

	sevents "github.com/sluicehq/sluice/events"
)

// MaxMessageBytes is SQS's largest message, 1 MiB: SendMessage refuses a
// larger one ("The maximum size is 1 MiB or 1,048,576 bytes", the
// SendMessage API reference; SQS raised it from 256 KiB, as the AWS Compute
// Blog's "More room to build: serverless services now support payloads up
// to 1 MB" of January 29, 2026 tells). MessageSize measures a message as
// SQS does.
const MaxMessageBytes = 1 << 20

// MaxEventBytes is Lambda's invocation payload limit, 6 MB: an event
// source mapping invokes with what it has when a batch reaches it, so
// Receive gives no more messages than an event of that size holds (ten
// messages near 1 MiB make two invocations).
const MaxEventBytes = 6 << 20

// MessageSize is the size SQS counts against MaxMessageBytes: the body's
// bytes and, for each message attribute, its name, data type and value.
func MessageSize(body string, attrs map[string]events.SQSMessageAttribute) int {
	n := len(body)
	for name, a := range attrs {
		n += len(name) + len(a.DataType) + len(a.BinaryValue)
		if a.StringValue != nil {
			n += len(*a.StringValue)
		}
	}
	return n
}

// Clock is the runner's time (a virtual clock for emulated sources).
type Clock interface{ Now() time.Time }

// Queue is an emulated SQS queue with its dead-letter queue.
type Queue struct {
	clock      Clock
	arn        string
	region     string
	fifo       bool
	maxReceive int
	msgs       []*qmsg
	dlq        []*qmsg
	handles    map[string]*qmsg
	nextHandle int
}

// Message is one message sent to a Queue.
type Message struct {
	ID, Group, Dedup, Body string // Group and Dedup on a FIFO queue
	// Attributes are the message's own system attributes (the queue adds
	// the receive count, the timestamps and, on a FIFO queue, the group,
	// deduplication id and sequence number).
	Attributes map[string]string
	// MessageAttributes as the event carries them, with their digest.
	MessageAttributes      map[string]events.SQSMessageAttribute
	MD5OfMessageAttributes string
	Seq                    string // FIFO: the sequence number
	Sent                   time.Time
}

type qmsg struct {
	Message
	firstReceive time.Time
	receives     int
	visibleAt    time.Time
	handle       string
	deleted      bool
}

// New is an empty queue of ARN arn in region; maxReceive 0 means no
// redrive policy.
func New(c Clock, arn, region string, fifo bool, maxReceive int) *Queue {
	return &Queue{clock: c, arn: arn, region: region, fifo: fifo, maxReceive: maxReceive, handles: map[string]*qmsg{}}
}

// Add sends m to the queue.
func (q *Queue) Add(m Message) { q.msgs = append(q.msgs, &qmsg{Message: m}) }

// Receive returns up to max visible messages and hides them for
// visibility. A message past the redrive policy's maxReceiveCount moves
// to the dead-letter queue instead; on a FIFO queue a group with a
// message in flight (or hidden) holds its later messages back. The
// messages' event ({"Records":[...]}) stays within MaxEventBytes: the
// first message that would pass it is left for the next receive.
func (q *Queue) Receive(_ context.Context, max int, visibility time.Duration) ([]invocation.QueueMessage, error) {
	now := q.clock.Now()
	blocked := map[string]bool{}
	var out []invocation.QueueMessage
	size := len(`{"Records":[]}`)
	for _, m := range q.msgs {
		if len(out) >= max {
			break
		}
		if m.deleted {
			continue
		}
		if m.visibleAt.After(now) || q.fifo && blocked[m.Group] {
			if q.fifo {
				blocked[m.Group] = true // later messages of a group wait for an earlier one
			}
			continue
		}
		if q.maxReceive > 0 && m.receives+1 > q.maxReceive {
			m.receives++
			m.deleted = true
			q.dlq = append(q.dlq, m)
			continue
		}
		// The message as this receive would give it, kept only if its
		// record fits the event.
		next := *m
		next.receives++
		if next.firstReceive.IsZero() {
			next.firstReceive = now
		}
		next.visibleAt = now.Add(visibility)
		next.handle = fmt.Sprintf("AQEB%s-%d", m.ID, q.nextHandle+1)
		raw, err := q.event(&next)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && size+1+len(raw) > MaxEventBytes {
			break
		}
		size += len(raw) + min(len(out), 1) // a comma before every record but the first
		*m = next
		q.nextHandle++
		q.handles[m.handle] = m
		out = append(out, invocation.QueueMessage{MessageID: m.ID, ReceiptHandle: m.handle, GroupID: m.Group, ReceiveCount: m.receives, Sent: m.Sent, Event: raw})
	}
	return out, nil
}

// event is the message as a Lambda SQS event record.
func (q *Queue) event(m *qmsg) ([]byte, error) {
	attrs := map[string]string{
		"ApproximateReceiveCount":          strconv.Itoa(m.receives),
		"SentTimestamp":                    strconv.FormatInt(m.Sent.UnixMilli(), 10),
		"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
	}
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	if q.fifo {
		attrs["MessageGroupId"] = m.Group
		attrs["MessageDeduplicationId"] = m.Dedup
		attrs["SequenceNumber"] = m.Seq
	}
	sum := md5.Sum([]byte(m.Body))
	return sevents.MarshalSQSMessage(events.SQSMessage{
		MessageId:              m.ID,
		ReceiptHandle:          m.handle,
		Body:                   m.Body,
		Md5OfBody:              hex.EncodeToString(sum[:]),
		Attributes:             attrs,
		MessageAttributes:      m.MessageAttributes,
		Md5OfMessageAttributes: m.MD5OfMessageAttributes,
		EventSourceARN:         q.arn,
		EventSource:            "aws:sqs",
		AWSRegion:              q.region,
	})
}

// Delete removes received messages by their receipt handles; a handle
// of an earlier receive of a message received again is ignored.
func (q *Queue) Delete(_ context.Context, handles []string) error {
	for _, h := range handles {
		if m, ok := q.handles[h]; ok && m.handle == h {
			m.deleted = true
		}
		delete(q.handles, h)
	}
	return nil
}

// Counts reports the messages left (visible or in flight) and those in
// the dead-letter queue.
func (q *Queue) Counts(context.Context) (int, int, error) {
	left := 0
	for _, m := range q.msgs {
		if !m.deleted {
			left++
		}
	}
	return left, len(q.dlq), nil
}

// NextVisible is when the earliest hidden message becomes visible again.
func (q *Queue) NextVisible() (time.Time, bool) {
	var t time.Time
	for _, m := range q.msgs {
		if !m.deleted && (t.IsZero() || m.visibleAt.Before(t)) {
			t = m.visibleAt
		}
	}
	return t, !t.IsZero()
}

// DeadLettered lists the ids of the messages moved to the dead-letter
// queue, in the order they were moved.
func (q *Queue) DeadLettered() []string {
	ids := make([]string, len(q.dlq))
	for i, m := range q.dlq {
		ids[i] = m.ID
	}
	return ids
}
