package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
)

// The results a Firehose transformation gives a record.
const (
	FirehoseOk               = events.KinesisFirehoseTransformedStateOk
	FirehoseDropped          = events.KinesisFirehoseTransformedStateDropped
	FirehoseProcessingFailed = events.KinesisFirehoseTransformedStateProcessingFailed
)

// MaxFirehoseResponse is the largest response a Firehose transformation
// can return: Firehose invokes the function synchronously, whose response
// Lambda limits to 6 MB.
const MaxFirehoseResponse = 6 << 20

// FirehoseRecord is one record of an Amazon Data Firehose transformation
// invocation: the decoded data and the record exactly as Firehose sent it,
// with the invocation's fields
// (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesisfirehose.html).
type FirehoseRecord[T any] struct {
	Value T
	// Raw is the record; for an MSK source, Raw.Data holds its
	// kafkaRecordValue.
	Raw events.KinesisFirehoseEventRecord
	// DeliveryStreamARN is the Firehose stream the record goes through.
	DeliveryStreamARN string

	// The invocation's fields, shared by its records (the record stays
	// small: it is copied through the layers for each record), and the
	// record's index in it.
	ev *eventscan.FirehoseEvent
	i  int
}

// InvocationID is Firehose's id of the invocation, the same for every
// record of the batch (a retried batch comes with another).
func (r FirehoseRecord[T]) InvocationID() string {
	if r.ev == nil {
		return ""
	}
	return r.ev.InvocationID
}

// Region is the Firehose stream's Region.
func (r FirehoseRecord[T]) Region() string {
	if r.ev == nil {
		return ""
	}
	return r.ev.Region
}

// SourceKinesisStreamARN is the Kinesis data stream the Firehose stream
// reads, when its source is one (KinesisMetadata then says where the
// record was in it); "" otherwise.
func (r FirehoseRecord[T]) SourceKinesisStreamARN() string {
	if r.ev == nil {
		return ""
	}
	return r.ev.SourceKinesisStreamArn
}

// SourceMSKARN is the Amazon MSK cluster the Firehose stream reads, when
// its source is one (MSKMetadata); "" otherwise.
func (r FirehoseRecord[T]) SourceMSKARN() string {
	if r.ev == nil {
		return ""
	}
	return r.ev.SourceMSKArn
}

// RecordID is the record's id, which its result must carry back.
func (r FirehoseRecord[T]) RecordID() string { return r.Raw.RecordID }

// Data is the record's data, base64-decoded (an MSK source's
// kafkaRecordValue); do not modify it.
func (r FirehoseRecord[T]) Data() []byte { return r.Raw.Data }

// ArrivalTime is when Firehose received the record.
func (r FirehoseRecord[T]) ArrivalTime() time.Time { return r.Raw.ApproximateArrivalTimestamp.Time }

// KinesisMetadata is where the record was in the Kinesis data stream the
// Firehose stream reads (its kinesisRecordMetadata: shard, partition key,
// sequence and sub-sequence numbers, arrival in the stream); ok is false
// when Firehose sent none (a Direct PUT or MSK source).
func (r FirehoseRecord[T]) KinesisMetadata() (m events.KinesisFirehoseRecordMetadata, ok bool) {
	m = r.Raw.KinesisFirehoseRecordMetadata
	return m, m.ShardID != "" || m.SequenceNumber != ""
}

// FirehoseMSKMetadata is where a record of a Firehose stream reading an
// Amazon MSK cluster was in its topic (its mskRecordMetadata), the offset
// and partition as Firehose writes them (decimal text).
type FirehoseMSKMetadata struct {
	Offset      string
	PartitionID string
	ArrivalTime time.Time
}

// MSKMetadata is the record's Kafka metadata when the Firehose stream
// reads an Amazon MSK cluster (the record came as kafkaRecordValue, and
// its result goes back as kafkaRecordValue too); ok is false otherwise.
func (r FirehoseRecord[T]) MSKMetadata() (m FirehoseMSKMetadata, ok bool) {
	if r.ev == nil || r.ev.MSK == nil || r.i >= len(r.ev.MSK) || r.ev.MSK[r.i] == nil {
		return FirehoseMSKMetadata{}, false
	}
	k := r.ev.MSK[r.i]
	return FirehoseMSKMetadata{Offset: k.Offset, PartitionID: k.PartitionID, ArrivalTime: k.ApproximateArrivalTimestamp.Time}, true
}

// FirehoseResult is a transformation's answer for one record: Ok with the
// record's new data (and, for dynamic partitioning, its partition keys),
// Dropped, or ProcessingFailed. Build it with Transformed or Dropped; a
// function error makes it ProcessingFailed.
type FirehoseResult struct {
	// Result is FirehoseOk, FirehoseDropped or FirehoseProcessingFailed.
	Result string
	// Data is the transformed record (Ok). Firehose concatenates records
	// as they are: add the newline a line-oriented destination needs.
	Data []byte
	// PartitionKeys are the record's dynamic partitioning keys, which the
	// stream's S3 prefix reads as !{partitionKeyFromLambda:NAME}.
	PartitionKeys map[string]string
}

// Transformed is the Ok result with the record's new data.
func Transformed(data []byte) FirehoseResult { return FirehoseResult{Result: FirehoseOk, Data: data} }

// Dropped is the result of a record the transformation leaves out on
// purpose; Firehose counts it as processed.
func Dropped() FirehoseResult { return FirehoseResult{Result: FirehoseDropped} }

// WithPartitionKeys returns r with dynamic partitioning keys.
func (r FirehoseResult) WithPartitionKeys(keys map[string]string) FirehoseResult {
	r.PartitionKeys = keys
	return r
}

// FirehoseHandler is the Lambda handler of an Amazon Data Firehose
// transformation (a Lambda processor on a Firehose stream). It implements
// lambda.Handler.
type FirehoseHandler[T any] struct {
	cfg   *config
	chain pipeline[firehoseCall[T]]
	x     expect
}

// firehoseCall carries a record through the retry chain to the function,
// and its result back.
type firehoseCall[T any] struct {
	rec FirehoseRecord[T]
	out *FirehoseResult
}

// NewFirehose returns the handler of a Firehose transformation: fn is
// called for each record, with bounded concurrency (WithConcurrency,
// default 8), and answers it; a record whose value is one the handlers
// acknowledge without running the function (a CloudWatchLogs
// CONTROL_MESSAGE) is answered Dropped. Firehose has no partial batch response:
// every record is answered. A record fn fails (an error after the
// in-process retries of a transient one, or a panic), and one whose data
// does not decode into T, is answered ProcessingFailed, which Firehose
// writes to the stream's error output (the processing-failed S3 prefix).
// The function error of the invocation is kept for what Firehose should
// retry whole: records not started before the deadline margin, and a
// response over Lambda's 6 MB limit.
//
// Options for stream and queue sources that make no sense here
// (WithIdempotency, WithDeadLetters, WithKeyConcurrency, ...) are refused.
func NewFirehose[T any](fn func(context.Context, FirehoseRecord[T]) (FirehoseResult, error), opts ...Option) (*FirehoseHandler[T], error) {
	// Firehose reads no partial batch response: the mapping variable
	// does not concern it.
	opts = append(opts[:len(opts):len(opts)], func(c *config) {
		env := c.lookupEnv
		c.lookupEnv = func(k string) (string, bool) {
			if k == EnvReportBatchItemFailures {
				return "", false
			}
			return env(k)
		}
	})
	c, err := newConfig(kindSQS, sevents.SourceFirehose, opts)
	if err != nil {
		return nil, err
	}
	var bad []error
	for _, o := range []struct {
		set  bool
		name string
	}{
		{c.idemStore != nil, "WithIdempotency"}, {c.dlSet, "WithDeadLetters"}, {c.skipGroup, "WithSkipGroupOnFailure"},
		{c.wholeBatch, "WithWholeBatchFailures"}, {c.partialWhenNone, "WithPartialResponseWhenNoneSucceed"},
		{c.kafka != nil, "the Kafka options"}, {c.window.set, "the window options"}, {c.tracer != nil, "WithTracer (tracing.On)"},
	} {
		if o.set {
			bad = append(bad, fmt.Errorf("%s does not apply to a Firehose transformation", o.name))
		}
	}
	if fn == nil {
		bad = append(bad, errors.New("handler function is nil"))
	}
	if err := errors.Join(bad...); err != nil {
		return nil, fmt.Errorf("sluice: firehose handler: %w", err)
	}
	// Each record answers through its call; the chain adds the retries.
	h, err := chain(c, func(ctx context.Context, call firehoseCall[T]) error {
		res, err := fn(ctx, call.rec)
		if err != nil {
			return err
		}
		switch res.Result {
		case FirehoseOk, FirehoseDropped:
		case FirehoseProcessingFailed:
			return batch.Permanent(errors.New("the function answered ProcessingFailed"))
		default:
			return batch.Permanent(fmt.Errorf("the function answered result %q: want handlers.Transformed(data) or handlers.Dropped()", res.Result))
		}
		*call.out = res
		return nil
	}, func(firehoseCall[T]) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("sluice: firehose handler: %w", err)
	}
	return &FirehoseHandler[T]{cfg: c, chain: h, x: expect{"handlers.NewFirehose", "records", []string{"aws:firehose"}}}, nil
}

// MustFirehose is NewFirehose that panics on an error, for use in main.
func MustFirehose[T any](fn func(context.Context, FirehoseRecord[T]) (FirehoseResult, error), opts ...Option) *FirehoseHandler[T] {
	h := must(NewFirehose(fn, opts...))
	h.x.handler = "handlers.MustFirehose"
	return h
}

// Invoke handles one Firehose transformation event and returns the
// records' results.
func (h *FirehoseHandler[T]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := eventscan.DecodeFirehose(payload)
	if err != nil {
		if e := h.x.firehoseMismatch(payload); e != nil {
			return nil, e
		}
		return nil, err
	}
	recs := ev.Records
	items := make([]engine.Item, len(recs))
	for i := range recs {
		items[i] = engine.Item{ID: recs[i].RecordID, Key: recs[i].RecordID, Arrival: recs[i].ApproximateArrivalTimestamp.Time}
	}
	results := make([]FirehoseResult, len(recs))
	ecfg := h.cfg.engine(sevents.SourceFirehose, engine.Independent, h.cfg.concurrency)
	ecfg.PartialResponseWhenNoneSucceed = true // every record is answered, failed or not
	skip := skippable[T]()
	res := engine.Run(ctx, items, ecfg, func(ctx context.Context, w, i int) error {
		// The value is decoded apart from the record, so only the value
		// goes to the heap.
		var v T
		if err := decodeValue(h.cfg.codec, recs[i].Data, &v); err != nil {
			return &batch.DecodeError{ID: items[i].ID, Err: err}
		}
		if skip {
			if why := skipValue(&v); why != "" {
				answeredWithout(ctx, why, "")
				results[i] = Dropped() // the CloudWatch Logs CONTROL_MESSAGE: acknowledged, not run
				return nil
			}
		}
		r := FirehoseRecord[T]{Value: v, Raw: recs[i], DeliveryStreamARN: ev.DeliveryStreamArn, ev: ev, i: i}
		return h.chain.Handle(ctx, firehoseCall[T]{rec: r, out: &results[i]})
	})
	var notStarted int
	for i, o := range res.Outcomes {
		switch o {
		case batch.Succeeded:
		case batch.NotAttempted:
			notStarted++
		default:
			results[i] = FirehoseResult{Result: FirehoseProcessingFailed}
		}
	}
	if notStarted > 0 {
		err = fmt.Errorf("sluice: firehose: %d of %d records were not started before the deadline margin: failing the invocation so Firehose retries the batch "+
			"(give the function a longer timeout, or the processor a smaller BufferSizeInMBs)", notStarted, len(recs))
	}
	var out []byte
	if err == nil {
		out, err = appendFirehoseResponse(make([]byte, 0, 64+len(payload)), ev, results)
	}
	if h.cfg.onBatch != nil || h.cfg.metrics != nil {
		var report []int
		for i, r := range results {
			if r.Result == FirehoseProcessingFailed {
				report = append(report, i)
			}
		}
		if h.cfg.onBatch != nil {
			h.cfg.onBatch(ctx, batchReport(sevents.SourceFirehose, items, res, report, err, recordIDs{items: items}))
		}
		if h.cfg.metrics != nil {
			h.cfg.metrics.emit(sevents.SourceFirehose, ev.DeliveryStreamArn, items, res)
		}
	}
	if err != nil {
		h.cfg.logger.LogAttrs(ctx, slog.LevelError, "sluice: firehose invocation failed", slog.String("error", err.Error()))
		return nil, err
	}
	return out, nil
}

// appendFirehoseResponse writes the response Firehose reads
// (batchresponse.AppendFirehose), or an error when it would pass Lambda's
// 6 MB limit. Every record carries data, as Firehose requires: the new data
// when Ok, none ("") when Dropped, the record's own when ProcessingFailed;
// a record that came from MSK carries it as kafkaRecordValue.
func appendFirehoseResponse(dst []byte, ev *eventscan.FirehoseEvent, results []FirehoseResult) ([]byte, error) {
	recs := ev.Records
	var kafka func(int) bool
	if ev.MSK != nil {
		kafka = func(i int) bool { return ev.MSK[i] != nil }
	}
	out, at := batchresponse.AppendFirehose(dst, batchresponse.FirehoseResults{N: len(results), KafkaValue: kafka,
		Rec: func(i int) (string, string, []byte, map[string]string) {
			r := &results[i]
			data := r.Data
			switch r.Result {
			case FirehoseDropped:
				data = nil // nothing is delivered: no need to spend the response's 6 MB on it
			case FirehoseProcessingFailed:
				data = recs[i].Data
			}
			return recs[i].RecordID, r.Result, data, r.PartitionKeys
		}}, MaxFirehoseResponse)
	if at >= 0 {
		return nil, &FirehoseResponseTooLargeError{Records: len(recs), At: at, Size: len(out)}
	}
	return out, nil
}

// FirehoseResponseTooLargeError is the function error of a transformation
// whose response would pass Lambda's 6 MB limit for a synchronous
// response. Lambda would fail the invocation anyway; Firehose retries it
// and, after its retries, writes the batch to the error output.
type FirehoseResponseTooLargeError struct {
	Records int // records in the invocation
	At      int // the record (index) whose result passed the limit
	Size    int // the response's size up to and with that record, in bytes
}

func (e *FirehoseResponseTooLargeError) Error() string {
	return fmt.Sprintf("sluice: firehose: the response passes Lambda's 6 MB (%d bytes) limit at record %d of %d (%d bytes so far): "+
		"the transformation makes the records larger than the batch Firehose sent; set a smaller buffer size on the stream's "+
		"Lambda processor (BufferSizeInMBs) so a batch's results fit", MaxFirehoseResponse, e.At+1, e.Records, e.Size)
}

// firehoseMismatch names the source of an event a Firehose handler cannot
// decode, when it is another source's ("Records" with eventSource).
func (x expect) firehoseMismatch(payload []byte) error {
	var top map[string]any
	if json.Unmarshal(payload, &top) != nil {
		return nil
	}
	if src := eventscan.EventSourceOfAny(top); src != "" {
		return x.mismatch(src)
	}
	if _, ok := top["records"]; !ok {
		return x.mismatch("")
	}
	return nil
}
