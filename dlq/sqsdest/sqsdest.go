// Package sqsdest is a dlq.Destination on an Amazon SQS queue: one message
// per quarantined record, its body the envelope's JSON.
//
// Envelopes go out with SendMessageBatch, ten per call at most and never
// more than the batch size limit in one call (the sum of the bodies; by
// default 1 MiB, the same as the per-message limit). An envelope up to the
// queue's maximum message size (1 MiB by default, SQS's largest: see
// DefaultMaxMessageSize) goes whole. A larger one is sent with
// its record cut to fit (dlq.Envelope.Truncated says so and keeps the
// coordinates to fetch the record back from its source): the record of a
// Kinesis, DynamoDB Streams or Kafka source can be read back while the
// stream retains it (sluice fetch-failed), but an SQS message's body is
// kept only in the cut envelope, so quarantine SQS messages near 1 MiB to a
// destination without the limit (a dlq.File, or your own Destination that
// stores the record in S3).
//
// On a FIFO queue (its URL ends in ".fifo") each message gets a
// MessageGroupId (the record's shard, topic-partition or message group) and
// a MessageDeduplicationId derived from the function, the request, the
// record and its attempts, so a repeated send of the same quarantine (an SDK
// retry after a lost response, or this package retrying the entries SQS
// failed) is dropped by the queue, while a later quarantine of the same
// record is kept.
package sqsdest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/dlq"
)

// Client is the part of *sqs.Client the destination uses.
type Client interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// DefaultMaxMessageSize is SQS's largest message and SendMessageBatch
// request, 1 MiB (1,048,576 bytes), which is also the default
// MaximumMessageSize of a queue. SQS raised both from 256 KiB ("Amazon SQS
// increases maximum message payload size to 1 MiB"; AWS Compute Blog, "More
// room to build: serverless services now support payloads up to 1 MB",
// January 29, 2026; the SendMessage, SendMessageBatch and CreateQueue API
// references). A queue whose MaximumMessageSize was set lower refuses
// larger messages: tell the destination with WithMaxMessageSize.
const DefaultMaxMessageSize = 1 << 20

// maxBatchEntries is SendMessageBatch's limit.
const maxBatchEntries = 10

// Destination sends envelopes to one SQS queue. It is safe for concurrent
// use.
type Destination struct {
	client      Client
	url         string
	fifo        bool
	maxMessage  int
	maxBatch    int
	concurrency int
}

var _ dlq.Destination = (*Destination)(nil)

// An Option configures a Destination.
type Option func(*Destination) error

// WithMaxMessageSize sets the queue's maximum message size in bytes (its
// MaximumMessageSize attribute, 1,024 to 1,048,576), which also bounds each
// SendMessageBatch call. Default DefaultMaxMessageSize.
func WithMaxMessageSize(n int) Option {
	return func(d *Destination) error {
		if n < 1024 || n > DefaultMaxMessageSize {
			return fmt.Errorf("sqsdest.WithMaxMessageSize(%d): a queue's MaximumMessageSize is 1,024 to %d bytes", n, DefaultMaxMessageSize)
		}
		d.maxMessage, d.maxBatch = n, n
		return nil
	}
}

// WithConcurrency bounds how many SendMessageBatch calls run at once
// (default 4).
func WithConcurrency(n int) Option {
	return func(d *Destination) error {
		if n < 1 {
			return fmt.Errorf("sqsdest.WithConcurrency(%d): must be at least 1", n)
		}
		d.concurrency = n
		return nil
	}
}

// New returns a destination that sends to the queue at queueURL.
func New(client Client, queueURL string, opts ...Option) (*Destination, error) {
	d := &Destination{client: client, url: queueURL, fifo: strings.HasSuffix(queueURL, ".fifo"),
		maxMessage: DefaultMaxMessageSize, maxBatch: DefaultMaxMessageSize, concurrency: 4}
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("sqsdest: client is nil"))
	}
	if queueURL == "" {
		errs = append(errs, errors.New("sqsdest: the queue URL is empty"))
	}
	for _, o := range opts {
		if err := o(d); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// message is one envelope ready to send.
type message struct {
	i    int // index in Send's envs
	body string
}

// Send implements dlq.Destination. Entries SQS fails for a reason of its
// own (not the sender's fault) are sent once more.
func (d *Destination) Send(ctx context.Context, envs []*dlq.Envelope) error {
	errs := make([]error, len(envs))
	msgs := make([]message, 0, len(envs))
	for i, e := range envs {
		b, err := e.MarshalLimit(d.maxMessage)
		if err != nil {
			errs[i] = err
			continue
		}
		msgs = append(msgs, message{i: i, body: string(b)})
	}
	batches := d.split(msgs)
	var wg sync.WaitGroup
	sem := make(chan struct{}, d.concurrency)
	for _, b := range batches {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d.sendBatch(ctx, envs, b, errs)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return &dlq.SendError{Errs: errs}
		}
	}
	return nil
}

// split groups messages into SendMessageBatch calls: at most ten, and
// bodies adding up to at most maxBatch bytes.
func (d *Destination) split(msgs []message) [][]message {
	var out [][]message
	var cur []message
	size := 0
	for _, m := range msgs {
		if len(cur) == maxBatchEntries || len(cur) > 0 && size+len(m.body) > d.maxBatch {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, m)
		size += len(m.body)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sendBatch sends one batch, retrying once the entries SQS failed through
// no fault of the sender, and fills errs for the ones not accepted. Each
// goroutine writes only its own messages' entries.
func (d *Destination) sendBatch(ctx context.Context, envs []*dlq.Envelope, batch []message, errs []error) {
	for round := 0; len(batch) > 0; round++ {
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for k, m := range batch {
			entries[k] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(k)), MessageBody: aws.String(m.body)}
			if d.fifo {
				e := envs[m.i]
				entries[k].MessageGroupId = aws.String(groupID(e))
				entries[k].MessageDeduplicationId = aws.String(dedupID(e))
			}
		}
		out, err := d.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &d.url, Entries: entries})
		if err != nil {
			for _, m := range batch {
				errs[m.i] = fmt.Errorf("sqsdest: sending record %s to %s: %w", envs[m.i].RecordID, d.url, err)
			}
			return
		}
		ok := make(map[string]bool, len(out.Successful))
		for _, s := range out.Successful {
			ok[aws.ToString(s.Id)] = true
		}
		failed := make(map[string]types.BatchResultErrorEntry, len(out.Failed))
		for _, f := range out.Failed {
			failed[aws.ToString(f.Id)] = f
		}
		var again []message
		for k, m := range batch {
			id := strconv.Itoa(k)
			if ok[id] {
				errs[m.i] = nil
				continue
			}
			f, known := failed[id]
			switch {
			case !known:
				errs[m.i] = fmt.Errorf("sqsdest: SQS answered neither success nor failure for record %s on %s", envs[m.i].RecordID, d.url)
			default:
				errs[m.i] = fmt.Errorf("sqsdest: SQS refused record %s on %s: %s: %s", envs[m.i].RecordID, d.url,
					aws.ToString(f.Code), aws.ToString(f.Message))
				if !f.SenderFault && round == 0 {
					again = append(again, m)
				}
			}
		}
		batch = again
	}
}

// groupID is the FIFO message group of e: its shard, topic-partition or
// message group, so each keeps its order in the queue.
func groupID(e *dlq.Envelope) string {
	g := e.Shard
	switch {
	case e.MessageGroup != "":
		g = e.MessageGroup
	case e.Topic != "" && e.Partition != nil:
		g = e.Topic + "-" + strconv.FormatInt(*e.Partition, 10)
	case g == "":
		g = string(e.Source)
	}
	if len(g) > 128 || !validID(g) {
		sum := sha256.Sum256([]byte(g))
		g = hex.EncodeToString(sum[:])
	}
	return g
}

// dedupID names one quarantine of a record: the same invocation sending the
// same record at the same attempt.
func dedupID(e *dlq.Envelope) string {
	h := sha256.New()
	// The failure's time too: it is set once per envelope, so a send the
	// SDK retries keeps its id, while a run of the local runner that reuses
	// the request and message ids of an earlier one (they are derived from
	// its seed) is not taken for a repeat of it within SQS's five minutes.
	for _, s := range []string{e.FunctionName, e.RequestID, string(e.Source), e.SourceARN, e.RecordID, strconv.Itoa(e.Attempts), e.Reason,
		strconv.FormatInt(e.LastFailure.UnixNano(), 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// validID reports whether s uses only the characters SQS allows in a
// message group id: alphanumerics and punctuation.
func validID(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '!' || c > '~' {
			return false
		}
	}
	return s != ""
}
