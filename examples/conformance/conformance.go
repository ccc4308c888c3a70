package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handlers"
)

// Command is a record's instruction.
type Command struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

// Effect is one line of the effects file: the record's identity in its
// source (SQS messageId, Kinesis or DynamoDB sequence number, for a KPL
// user record "<sequenceNumber>:<subSequenceNumber>", Kafka
// "<topic>-<partition>@<offset>"; for an object of an S3 notification
// "<messageId>#<i>"), the payload's id if it has one, and the ordering
// key.
type Effect struct {
	Record string `json:"record"`
	ID     string `json:"id,omitempty"`
	Key    string `json:"key"`
	// Request is the invocation's request id; PID the process's id and
	// Invocation how many invocations this process has served, this one
	// included, as counted in its memory (1 in a fresh process): a crash
	// that kills the process shows as a new PID and a count back at 1.
	Request    string `json:"request,omitempty"`
	PID        int    `json:"pid"`
	Invocation int64  `json:"invocation"`
	// Shadow marks an effect made in a shadow replay (handlers.Shadow):
	// the shadow sink, not production's.
	Shadow bool `json:"shadow,omitempty"`
}

// ddbItem is the DynamoDB item shape: the command travels in "payload".
type ddbItem struct {
	Payload string `dynamodbav:"payload"`
}

// function holds what a conformance function remembers between records and
// invocations of one process.
type function struct {
	effects string // path of the effects file, or ""
	skips   string // path of the skips file (SLUICE_SKIPS_FILE), or ""
	// dropUsers plays a function that acknowledges a KPL user record
	// without doing its work: every user record after the first of its
	// aggregate (CONFORMANCE_DROP=user-records).
	dropUsers bool

	mu    sync.Mutex
	calls map[string]int // per id, for transient:<n>

	invocations atomic.Int64 // served by this process, in memory
}

// counting counts the invocations a handler serves.
type counting struct {
	h lambda.Handler
	n *atomic.Int64
}

func (c counting) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	c.n.Add(1)
	return c.h.Invoke(ctx, payload)
}

// Sources lists the values SLUICE_SOURCE accepts.
var Sources = []string{"kinesis", "dynamodb", "sqs", "sqs-fifo", "kafka"}

// PayloadSources are the SLUICE_SOURCE values of the payloads other
// services wrap: sqs-sns, SNS notifications in an SQS queue (each
// Message a command); firehose, a Firehose transformation (each record's
// data a command; ok answers the data unchanged, fail answers
// ProcessingFailed); sqs-s3, S3 event notifications in an SQS queue (one
// effect per object, named by its item, "<messageId>#<i>"; an object key
// holding a command's action, e.g. "fail.txt", does it; the s3:TestEvent
// message is skipped by the handler).
var PayloadSources = []string{"sqs-sns", "firehose", "sqs-s3"}

func newHandler(source, effects string, opts ...handlers.Option) (lambda.Handler, error) {
	f := &function{effects: effects, calls: map[string]int{}, skips: os.Getenv(handlers.EnvSkipsFile)}
	switch v := os.Getenv("CONFORMANCE_DROP"); v {
	case "":
	case "user-records":
		f.dropUsers = true
	default:
		return nil, fmt.Errorf("CONFORMANCE_DROP=%q: want user-records", v)
	}
	h, err := f.handler(source, opts...)
	if err != nil {
		return nil, err
	}
	return counting{h: h, n: &f.invocations}, nil
}

func (f *function) handler(source string, opts ...handlers.Option) (lambda.Handler, error) {
	switch source {
	case "kinesis":
		return handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[Command]) error {
			if f.dropUsers && r.SubSequenceNumber() > 0 {
				return nil // acknowledged, its work never done: the bug a run must catch
			}
			return f.run(ctx, r.Value, r.RecordID(), r.PartitionKey())
		}, opts...)
	case "dynamodb":
		return handlers.NewDynamoDB(func(ctx context.Context, r handlers.DynamoDBRecord[ddbItem]) error {
			img := r.New
			if img == nil {
				img = r.Old
			}
			if img == nil {
				return batch.Permanent(fmt.Errorf("record %s has no image to read the payload from", r.SequenceNumber()))
			}
			var c Command
			if err := json.Unmarshal([]byte(img.Payload), &c); err != nil {
				return &batch.DecodeError{ID: r.SequenceNumber(), Err: err}
			}
			return f.run(ctx, c, r.SequenceNumber(), keyOf(r))
		}, opts...)
	case "sqs", "sqs-fifo":
		fn := func(ctx context.Context, r handlers.SQSRecord[Command]) error {
			key := r.GroupID()
			if key == "" {
				key = r.MessageID()
			}
			return f.run(ctx, r.Value, r.MessageID(), key)
		}
		if source == "sqs-fifo" {
			return handlers.NewSQSFIFO(fn, opts...)
		}
		return handlers.NewSQS(fn, opts...)
	case "kafka":
		return handlers.NewKafka(func(ctx context.Context, r handlers.KafkaRecord[Command]) error {
			return f.run(ctx, r.Value, fmt.Sprintf("%s@%d", r.TopicPartition(), r.Offset()), r.TopicPartition())
		}, opts...)
	case "sqs-sns":
		return handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[handlers.SNSMessage[Command]]) error {
			return f.run(ctx, r.Value.Message, r.MessageID(), r.Value.TopicArn)
		}, opts...)
	case "sqs-s3":
		return handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[handlers.S3Notification]) error {
			for i, rec := range r.Value.Records {
				action, _, _ := strings.Cut(rec.S3.Object.URLDecodedKey, ".")
				if err := f.run(ctx, Command{ID: rec.S3.Object.URLDecodedKey, Action: action}, r.ItemID(i), r.MessageID()); err != nil {
					return err
				}
			}
			return nil
		}, opts...)
	case "firehose":
		return handlers.NewFirehose(func(ctx context.Context, r handlers.FirehoseRecord[Command]) (handlers.FirehoseResult, error) {
			if err := f.run(ctx, r.Value, r.RecordID(), r.RecordID()); err != nil {
				return handlers.FirehoseResult{}, err
			}
			return handlers.Transformed(r.Data()), nil
		}, opts...)
	}
	return nil, fmt.Errorf("SLUICE_SOURCE=%q: want one of %s", source, strings.Join(append(Sources[:len(Sources):len(Sources)], PayloadSources...), ", "))
}

// idKey keys idempotency by the payload's id, a business key (an order or
// payment id), instead of the record's id in its source: a producer's
// duplicate, sent twice with one id, then takes effect once
// (CONFORMANCE_IDEMPOTENCY_KEY=id).
func idKey(source string) (handlers.Option, error) {
	switch source {
	case "kinesis":
		return handlers.WithIdempotencyKey(func(r handlers.KinesisRecord[Command]) string { return r.Value.ID }), nil
	case "sqs", "sqs-fifo":
		return handlers.WithIdempotencyKey(func(r handlers.SQSRecord[Command]) string { return r.Value.ID }), nil
	case "kafka":
		return handlers.WithIdempotencyKey(func(r handlers.KafkaRecord[Command]) string { return r.Value.ID }), nil
	case "dynamodb":
		return handlers.WithIdempotencyKey(func(r handlers.DynamoDBRecord[ddbItem]) string {
			img := r.New
			if img == nil {
				img = r.Old
			}
			var c Command
			if img != nil {
				json.Unmarshal([]byte(img.Payload), &c)
			}
			return c.ID
		}), nil
	}
	return nil, fmt.Errorf("SLUICE_SOURCE=%q: want one of %s", source, strings.Join(Sources, ", "))
}

func keyOf(r handlers.DynamoDBRecord[ddbItem]) string {
	b, _ := json.Marshal(r.Keys())
	return string(b)
}

// run performs c's action and records the effect on success. record is
// the record's identity in its source; a payload without an id is named by
// it in messages and transient counts.
func (f *function) run(ctx context.Context, c Command, record, key string) error {
	e := Effect{Record: record, ID: c.ID, Key: key, PID: os.Getpid(), Invocation: f.invocations.Load(), Shadow: handlers.Shadow(ctx)}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		e.Request = lc.AwsRequestID
	}
	if c.ID == "" {
		c.ID = record
	}
	if verb, reason, _ := strings.Cut(c.Action, ":"); verb == "claim-skipped" && !fixed(verb) {
		return f.claimSkipped(record, reason)
	}
	if err := f.act(ctx, c); errors.Is(err, errDrop) {
		return nil // acknowledged without its effect
	} else if err != nil {
		return err
	}
	if err := f.record(e); err != nil {
		return err
	}
	if c.Action == "exitafter" && !fixed("exitafter") {
		fmt.Fprintf(os.Stderr, "conformance: record %s: exiting the process after its effect, before it is answered, as a crash\n", c.ID)
		os.Exit(3)
	}
	return nil
}

func (f *function) act(ctx context.Context, c Command) error {
	verb, arg, _ := strings.Cut(c.Action, ":")
	if fixed(verb) {
		return nil
	}
	switch verb {
	case "ok", "", "exitafter":
		return nil
	case "drop":
		return errDrop
	case "fail":
		return fmt.Errorf("record %s: asked to fail", c.ID)
	case "permanent":
		return batch.Permanent(fmt.Errorf("record %s: asked to fail permanently", c.ID))
	case "panic":
		panic(fmt.Sprintf("record %s: asked to panic", c.ID))
	case "exit":
		fmt.Fprintf(os.Stderr, "conformance: record %s: exiting the process mid-batch, as a crash\n", c.ID)
		os.Exit(3)
	case "sleep":
		ms, err := strconv.Atoi(arg)
		if err != nil || ms < 0 {
			return batch.Permanent(fmt.Errorf("record %s: bad action %q", c.ID, c.Action))
		}
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("record %s: sleep interrupted: %w", c.ID, ctx.Err())
		}
	case "await":
		// Block until the file arg exists: a test holds the record in the
		// middle of its effect for as long as it needs (a lease race).
		if arg == "" {
			return batch.Permanent(fmt.Errorf("record %s: bad action %q: await needs a file path", c.ID, c.Action))
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(arg); err == nil {
				return nil
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return fmt.Errorf("record %s: await %s interrupted: %w", c.ID, arg, ctx.Err())
			}
		}
	case "transient":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 {
			return batch.Permanent(fmt.Errorf("record %s: bad action %q", c.ID, c.Action))
		}
		f.mu.Lock()
		f.calls[c.ID]++
		call := f.calls[c.ID]
		f.mu.Unlock()
		if call <= n {
			return batch.Transient(fmt.Errorf("record %s: transient failure %d of %d", c.ID, call, n))
		}
		return nil
	}
	return batch.Permanent(fmt.Errorf("record %s: unknown action %q", c.ID, c.Action))
}

func (f *function) record(e Effect) error {
	if f.effects == "" {
		return nil
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := os.OpenFile(f.effects, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("effects file: %w", err)
	}
	if _, err := file.Write(append(line, '\n')); err != nil {
		file.Close()
		return fmt.Errorf("effects file: %w", err)
	}
	return file.Close()
}

// errDrop is act's answer for "drop": run returns nil without the effect.
var errDrop = errors.New("drop")

// claimSkipped plays a function that acknowledges its record without doing
// its work and tells the runner, falsely, that its handler skipped it for
// reason: it appends that claim to the skips file (SLUICE_SKIPS_FILE).
func (f *function) claimSkipped(record, reason string) error {
	if f.skips == "" {
		return nil
	}
	line := fmt.Sprintf(`{"record":%q,"reason":%q,"key":"conformance#never-completed"}`+"\n", record, reason)
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := os.OpenFile(f.skips, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("skips file: %w", err)
	}
	if _, err := file.WriteString(line); err != nil {
		file.Close()
		return fmt.Errorf("skips file: %w", err)
	}
	return file.Close()
}

// fixed reports whether CONFORMANCE_FIXED (a comma-separated list of
// actions) names verb: that bug is fixed, and the action succeeds. It
// stands for deploying the fix before a redrive.
func fixed(verb string) bool {
	list := os.Getenv("CONFORMANCE_FIXED")
	for list != "" {
		var v string
		v, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(v) == verb {
			return true
		}
	}
	return false
}
