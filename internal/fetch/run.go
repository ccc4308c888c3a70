package fetch

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

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/inbox"
)

// Source is where on-failure records come from: Queue or File.
type Source = inbox.Source

// SQSAPI is the part of the SQS client Queue uses.
type SQSAPI = inbox.SQSAPI

// Queue reads on-failure records from the SQS queue at url (see
// redrive.Queue); a message is deleted once its records are written.
func Queue(api SQSAPI, url string, visibility, wait time.Duration) Source {
	return inbox.Queue(api, url, visibility, wait)
}

// File reads on-failure records from a file of JSON lines (a localtest
// file:// destination writes one); it is rewritten without the lines whose
// records were written.
func File(path string) (Source, error) { return inbox.File(path) }

// A Sink receives the envelopes of one on-failure record: a dlq.File
// (dlq.OpenFile) or a QueueSink.
type Sink = dlq.Destination

// SendAPI is the part of the SQS client QueueSink uses.
type SendAPI interface {
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// MaxMessageBytes is the largest message QueueSink sends: SQS's largest
// message, 1 MiB (sqsdest.DefaultMaxMessageSize says where from). A queue
// whose MaximumMessageSize is lower refuses the envelopes between the two.
const MaxMessageBytes = 1 << 20

// QueueSink sends envelopes to an SQS queue, 10 per SendMessageBatch. An
// envelope over MaxMessageBytes is an error: write such records to a file.
// (Unlike dlq/sqsdest it never truncates a record: an envelope fetched
// back from the stream is worth only as much as its whole record.)
type QueueSink struct {
	API SendAPI
	URL string
}

// Send sends one message per envelope.
func (s QueueSink) Send(ctx context.Context, envs []*dlq.Envelope) error {
	fifo := strings.HasSuffix(s.URL, ".fifo")
	for start := 0; start < len(envs); start += 10 {
		chunk := envs[start:min(start+10, len(envs))]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(chunk))
		for i, e := range chunk {
			b, err := e.Marshal()
			if err != nil {
				return err
			}
			if len(b) > MaxMessageBytes {
				return fmt.Errorf("the envelope of record %s is %d bytes, over SQS's %d: write to a file (--to-file) instead", e.RecordID, len(b), MaxMessageBytes)
			}
			entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(b))}
			if fifo {
				entries[i].MessageGroupId = aws.String(e.SourceARN + "/" + e.Shard + e.Topic)
				entries[i].MessageDeduplicationId = aws.String(dedupID(e))
			}
		}
		out, err := s.API.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &s.URL, Entries: entries})
		if err != nil {
			return clientErr(ctx, "SQS queue "+s.URL+": SendMessageBatch", err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("SQS queue %s: %d of %d envelopes not sent (the first: %s %s); running again sends them again", s.URL, len(out.Failed), len(chunk), aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	return nil
}

// dedupID is a FIFO deduplication id for an envelope (at most 128 chars).
func dedupID(e *dlq.Envelope) string {
	id := string(e.Source) + "-" + e.RecordID
	if len(id) > 128 {
		id = id[len(id)-128:]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '_'
		}
		return r
	}, id)
}

// Totals count what Run did.
type Totals struct {
	// Read is the on-failure records (messages, lines) read.
	Read int
	// Fetched is the on-failure records whose records were written; they
	// were removed from the source.
	Fetched int
	// Records is the envelopes written.
	Records int
	// Failed is the on-failure records left: not one, trimmed, or a read
	// or write that failed.
	Failed int
	// Trimmed is those of Failed whose records are past retention.
	Trimmed int
}

// Leftover says why one on-failure record stays.
type Leftover struct {
	Message string
	Reason  string
}

// Summary is the outcome of Run.
type Summary struct {
	Totals
	Leftovers []Leftover
	Stopped   string
}

// Run fetches the records of every on-failure record of src, writes their
// envelopes to sink, and removes each on-failure record once its envelopes
// are written. One that cannot be fetched stays, with its reason; the
// error is one that stopped the run (the source cannot be read).
func Run(ctx context.Context, src Source, f *Fetcher, sink Sink, progress func(Totals)) (sum *Summary, err error) {
	sum = &Summary{}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := src.Close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	leave := func(m inbox.Message, err error) {
		sum.Failed++
		if errors.Is(err, ErrTrimmed) {
			sum.Trimmed++
		}
		sum.Leftovers = append(sum.Leftovers, Leftover{Message: m.ID, Reason: err.Error()})
	}
	for {
		if ctx.Err() != nil {
			sum.Stopped = "interrupted: " + context.Cause(ctx).Error()
			return sum, nil
		}
		msgs, err := src.Next(ctx, 10)
		sum.Read += len(msgs)
		if err != nil {
			for _, m := range msgs {
				leave(m, err)
			}
			return sum, err
		}
		if len(msgs) == 0 {
			return sum, nil
		}
		for _, m := range msgs {
			rec, err := Parse(m.Body)
			if err != nil {
				leave(m, err)
				continue
			}
			envs, err := f.Fetch(ctx, rec)
			if err == nil {
				err = sink.Send(ctx, envs)
			}
			if err == nil {
				err = src.Done(ctx, []inbox.Message{m})
			}
			if err != nil {
				leave(m, err)
				if ctx.Err() != nil {
					sum.Stopped = "interrupted: " + context.Cause(ctx).Error()
					return sum, nil
				}
				continue
			}
			sum.Fetched++
			sum.Records += len(envs)
			if progress != nil {
				progress(sum.Totals)
			}
		}
	}
}
