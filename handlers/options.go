package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/lambdalog"
)

// EnvReportBatchItemFailures names the environment variable that tells the
// handler whether its event source mapping has ReportBatchItemFailures on.
const EnvReportBatchItemFailures = "SLUICE_REPORT_BATCH_ITEM_FAILURES"

// DefaultDeadlineMargin is how much time before the Lambda deadline the
// handler stops starting records.
const DefaultDeadlineMargin = 500 * time.Millisecond

// An Option configures a handler.
type Option func(*config)

type config struct {
	logger          *slog.Logger
	concurrency     int
	concurrencySet  bool
	keyConcurrency  int
	skipGroup       bool
	margin          time.Duration
	retry           batch.RetryPolicy
	codec           Codec
	now             func() time.Time
	partialWhenNone bool
	wholeBatch      bool
	lookupEnv       func(string) (string, bool)
	logOut          io.Writer
	onBatch         func(context.Context, BatchReport)
	idemStore       idempotency.Store
	idemOpts        []idempotency.Option
	idemKey         any // func(R) string for the handler's record type R
	idemOptional    bool
	idemPayload     any            // func(R) []byte
	idemOnDup       any            // func(context.Context, R, []byte) error
	idemPrefix      *string        // WithIdempotencyKeyPrefix
	idem            idemOptions    // the rest of idempotency's options (idempotency.go)
	kafka           *kafkaCodecs   // WithKafkaValue, WithKafkaKey, WithKafkaEventRecordFormat
	window          windowOptions  // window handlers (window.go)
	metricsOpt      *Metrics       // WithMetrics (metrics.go)
	metrics         *metricsConfig // nil: no metrics
	dlDest          dlq.Destination
	dlCfg           dlq.Config
	dlSet           bool
	skips           *skipLog // EnvSkipsFile, or nil
	kind            sourceKind
	rawImages       bool   // WithRawImages
	tracer          Tracer // WithTracer (trace.go)
	errs            []error
}

// WithLogger sets the logger for the per-batch summary, the per-failure
// lines and, at debug level, one line per in-process retry. Without it the
// handler logs to standard error in the format and at the level Lambda's
// logging configuration sets: JSON when AWS_LAMBDA_LOG_FORMAT is JSON,
// text otherwise, from the level AWS_LAMBDA_LOG_LEVEL names (INFO when
// unset).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.errs = append(c.errs, errors.New("WithLogger: logger is nil"))
		}
		c.logger = l
	}
}

// WithConcurrency bounds how many SQS standard messages, SQS FIFO message
// groups (with WithSkipGroupOnFailure) or Kafka partitions are processed at
// once. Defaults: 8 SQS messages, 1 FIFO group, 4 Kafka partitions.
func WithConcurrency(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs = append(c.errs, fmt.Errorf("WithConcurrency(%d): must be at least 1", n))
		}
		c.concurrency = n
	}
}

// WithKeyConcurrency lets a Kinesis or DynamoDB Streams handler process up
// to n partition keys at once, each key in order. The lowest record that did
// not succeed is reported, and records after it are not started.
func WithKeyConcurrency(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.errs = append(c.errs, fmt.Errorf("WithKeyConcurrency(%d): must be at least 1", n))
		}
		c.keyConcurrency = n
	}
}

// WithSkipGroupOnFailure makes an SQS FIFO handler go on with other message
// groups after a failure, reporting the failed message and the later messages
// of its group only.
func WithSkipGroupOnFailure() Option {
	return func(c *config) { c.skipGroup = true }
}

// WithDeadlineMargin sets how much time before the Lambda deadline the
// handler stops starting records. Default DefaultDeadlineMargin.
func WithDeadlineMargin(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.errs = append(c.errs, fmt.Errorf("WithDeadlineMargin(%v): must not be negative", d))
		}
		c.margin = d
	}
}

// WithRetry sets the in-process retry policy for transient errors. Default
// batch.DefaultRetryPolicy: 2 retries, full-jitter exponential backoff.
func WithRetry(p batch.RetryPolicy) Option {
	return func(c *config) { c.retry = p }
}

// WithoutRetry turns in-process retries off.
func WithoutRetry() Option {
	return func(c *config) { c.retry = batch.RetryPolicy{} }
}

// WithCodec sets how record payloads are decoded into T.
func WithCodec(codec Codec) Option {
	return func(c *config) {
		if codec == nil {
			c.errs = append(c.errs, errors.New("WithCodec: codec is nil"))
		}
		c.codec = codec
	}
}

// withClock sets the clock used for record ages and the deadline guard
// (tests only).
func withClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.errs = append(c.errs, errors.New("withClock: clock is nil"))
		}
		c.now = now
	}
}

// WithPartialResponseWhenNoneSucceed answers a batch in which no record
// succeeded with a partial batch response naming the records, instead of
// the default function error (batch.ErrNoProgress). The function error is
// what lets Lambda's BisectBatchOnFunctionError split the batch and isolate
// a poison record; a partial response instead counts against the records'
// retries like any other failure, without bisection.
func WithPartialResponseWhenNoneSucceed() Option {
	return func(c *config) { c.partialWhenNone = true }
}

// WithRawImages makes a DynamoDB Streams handler fill each record's
// Raw.Change.Keys, NewImage and OldImage maps, as aws-lambda-go does, for
// code that reads the attribute values from Raw. By default they are left
// nil (read them with the record's Keys, NewImage and OldImage methods),
// which decodes a batch about ten times faster with no allocation per
// record; New and Old are decoded the same either way.
func WithRawImages() Option {
	return func(c *config) { c.rawImages = true }
}

// WithWholeBatchFailures makes any failed record fail the whole invocation
// with a function error, and never returns a partial batch response. Use it
// for a mapping without ReportBatchItemFailures (and Kafka on-demand mode),
// where Lambda would ignore a partial response.
func WithWholeBatchFailures() Option {
	return func(c *config) { c.wholeBatch = true }
}

// BatchReport tells a WithOnBatch hook what became of one invocation's
// records.
type BatchReport struct {
	// Source is the handler's: sevents.SourceKinesis, SourceDynamoDB,
	// SourceSQS, SourceSQSFIFO, SourceKafka or SourceFirehose.
	Source sevents.Source
	// Records holds one entry per record, in the order of the event
	// (Kafka: topic-partitions sorted, each in offset order).
	Records []RecordOutcome
	// Err is the function error the handler returns, or nil when it answers
	// with a partial batch response (which lists the records whose Reported
	// is true).
	Err error
	// Duration is how long the records took to run.
	Duration time.Duration
	// Duplicates counts the records that succeeded without running because
	// their effect had already completed (WithIdempotency).
	Duplicates int
	// Quarantined counts the records sent to the dead-letter destination
	// (WithDeadLetters); they count as handled.
	Quarantined int
}

// RecordOutcome is what became of one record of an invocation.
type RecordOutcome struct {
	// ID is the record's batch item identifier: the sequence number
	// (Kinesis, DynamoDB Streams), the message id (SQS), or
	// "<topic>-<partition>@<offset>" (Kafka).
	ID string
	// Record is the record's own id, as its RecordID method, dead-letter
	// envelopes (dlq.Envelope.RecordKey) and the local runner name it: ID,
	// except for a user record of a KPL aggregate,
	// "<sequenceNumber>:<subSequenceNumber>" (the user records of one
	// Kinesis record share its ID).
	Record string
	// Key is the record's ordering key: the partition key (Kinesis), the
	// item's key attributes (DynamoDB Streams), the message group (SQS FIFO;
	// the message id on a standard queue), or "<topic>-<partition>" (Kafka).
	Key     string
	Outcome batch.Outcome
	// Err is why the record failed or was not attempted; nil if it
	// succeeded.
	Err error
	// Attempts is how many times the record was run in this invocation: 0
	// if it was not attempted, otherwise 1 plus its in-process retries.
	Attempts int
	// Reported is true when the partial batch response names the record, so
	// Lambda will deliver it again.
	Reported bool
	// Duplicate is true when the record succeeded without running because
	// its effect had already completed (WithIdempotency).
	Duplicate bool
	// Skipped says why the record succeeded without running the function
	// (SkipDuplicate, SkipS3TestEvent, SkipControlMessage), or is "".
	Skipped string
	// Quarantined is true when the record was sent to the dead-letter
	// destination (WithDeadLetters): it failed for good, and Outcome is
	// batch.Succeeded because it counts as handled.
	Quarantined bool
}

// WithOnBatch calls f after each batch has run, before the handler answers
// Lambda, for metrics, tracing or a demo. f runs on the invocation's
// goroutine and must not keep the report after it returns. It is not called
// for an event the handler rejects as a whole (malformed, or from another
// source).
func WithOnBatch(f func(ctx context.Context, r BatchReport)) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, errors.New("WithOnBatch: function is nil"))
		}
		c.onBatch = f
	}
}

// withLookupEnv replaces os.LookupEnv for the contract check and the
// logging settings (tests only).
func withLookupEnv(f func(string) (string, bool)) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, errors.New("withLookupEnv: function is nil"))
		}
		c.lookupEnv = f
	}
}

// withLogOutput sets where the default logger writes (tests only).
func withLogOutput(w io.Writer) Option {
	return func(c *config) { c.logOut = w }
}

type sourceKind uint8

const (
	kindStream sourceKind = iota
	kindSQS
	kindKafka
)

func newConfig(kind sourceKind, name sevents.Source, opts []Option) (*config, error) {
	c := &config{
		margin:    DefaultDeadlineMargin,
		retry:     batch.DefaultRetryPolicy(),
		codec:     JSON(),
		now:       time.Now,
		lookupEnv: os.LookupEnv,
		logOut:    os.Stderr,
	}
	for _, o := range opts {
		o(c)
	}
	if c.skipGroup && kind != kindSQS {
		c.errs = append(c.errs, errors.New("WithSkipGroupOnFailure applies to SQS FIFO handlers only"))
	}
	if c.rawImages && name != sevents.SourceDynamoDB {
		c.errs = append(c.errs, errors.New("WithRawImages applies to DynamoDB Streams handlers only"))
	}
	if c.keyConcurrency > 0 && kind != kindStream {
		c.errs = append(c.errs, errors.New("WithKeyConcurrency applies to Kinesis and DynamoDB Streams handlers only"))
	}
	if c.concurrency > 0 && kind == kindStream {
		c.errs = append(c.errs, errors.New("WithConcurrency does not apply to stream handlers: a shard is processed in order; use WithKeyConcurrency"))
	}
	if err := c.kafka.validate(kind); err != nil {
		c.errs = append(c.errs, err)
	}
	if c.idemStore == nil && (c.idemKey != nil || c.idemOptional || c.idemPayload != nil || c.idemOnDup != nil || c.idem.set) {
		c.errs = append(c.errs, errors.New("WithIdempotencyKey, WithIdempotencyOptionalKey, WithIdempotencyPayload, WithOnDuplicate "+
			"and WithIdempotencyPerRecord need WithIdempotency(store)"))
	}
	if c.dlSet && c.dlDest != nil {
		// SQS handlers need no store: a standard queue counts attempts with
		// ApproximateReceiveCount, and FIFO batches use the store if one is
		// given, else one in memory.
		if kind != kindSQS && c.dlCfg.MaxAttempts > 0 && c.dlCfg.Attempts == nil {
			c.errs = append(c.errs, fmt.Errorf("dlq.WithMaxAttempts(%d) on a %s handler needs dlq.WithAttempts(store) to count attempts across invocations: "+
				"a DynamoDB store (package dlq/dynamodbattempts), or dlq.NewMemory for tests", c.dlCfg.MaxAttempts, name))
		}
	}
	c.kind = kind
	c.checkWindow()
	c.setMetrics()
	c.concurrencySet = c.concurrency > 0
	if c.concurrency == 0 {
		c.concurrency = map[sourceKind]int{kindStream: 1, kindSQS: 8, kindKafka: 4}[kind]
	}
	if v, ok := c.lookupEnv(EnvReportBatchItemFailures); ok && !c.wholeBatch {
		on, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			c.errs = append(c.errs, fmt.Errorf("%s=%q is not a boolean", EnvReportBatchItemFailures, v))
		case !on:
			c.errs = append(c.errs, fmt.Errorf("%s=false: the event source mapping has ReportBatchItemFailures off, so Lambda "+
				"would ignore this handler's partial batch responses and count failed records as processed; "+
				"turn ReportBatchItemFailures on, or build the handler with handlers.WithWholeBatchFailures()",
				EnvReportBatchItemFailures))
		}
	}
	if c.logger == nil {
		l, err := lambdalog.New(c.lookupEnv, c.logOut)
		if err != nil {
			c.errs = append(c.errs, err)
		}
		c.logger = l
	}
	c.skips = newSkipLog(c)
	if jc, ok := c.codec.(*jsonCodec); ok && c.logger != nil {
		jc.noteFull(c.logger)
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("sluice: %s handler: %w", name, err)
	}
	return c, nil
}

// chain builds the pipeline of fn, its layers outermost first: the shadow
// mark (EnvShadow); dead letters (WithDeadLetters), whose guard sees a
// record's final error, after in-process retries and idempotency; a claim
// per record (WithIdempotency, keyed by defaultKey unless
// WithIdempotencyKey), so retries run inside one claim; the retry policy,
// whose retries the engine counts and logs. Panics are recovered by the
// engine (with the stack), so no layer recovers them: each wrap costs a
// copy of the record per call.
func chain[R any](c *config, fn func(context.Context, R) error, defaultKey func(R) string) (pipeline[R], error) {
	if fn == nil {
		return pipeline[R]{}, errors.New("handler function is nil")
	}
	rp := c.retry
	if user := rp.OnRetry; user != nil {
		rp.OnRetry = func(ctx context.Context, attempt int, err error, wait time.Duration) {
			engine.NoteRetry(ctx, attempt, err, wait)
			user(ctx, attempt, err, wait)
		}
	} else {
		rp.OnRetry = engine.NoteRetry
	}
	retry, err := batch.Retry[R](rp)
	if err != nil {
		return pipeline[R]{}, err
	}
	shadow, err := shadowOn(c)
	if err != nil {
		return pipeline[R]{}, err
	}
	var layers []layer[R]
	if shadow {
		layers = append(layers, layer[R]{before: func(ctx context.Context, _ *hookBatch[R]) context.Context {
			return context.WithValue(ctx, shadowKey{}, true)
		}})
	}
	if c.dlDest != nil {
		layers = append(layers, newDLLayer[R](c, c.kind).layer())
	}
	if c.idemStore != nil {
		idem, err := idempotent(c, defaultKey)
		if err != nil {
			return pipeline[R]{}, err
		}
		layers = append(layers, idem.layer())
	}
	layers = append(layers, layer[R]{wrap: retry})
	return compose(batch.HandlerFunc[R](fn), layers), nil
}

// engine returns the engine configuration for one invocation.
func (c *config) engine(source sevents.Source, policy engine.Policy, concurrency int) engine.Config {
	return engine.Config{
		Policy:                         policy,
		Concurrency:                    concurrency,
		Margin:                         c.margin,
		PartialResponseWhenNoneSucceed: c.partialWhenNone,
		Source:                         source,
		Logger:                         c.logger,
		Now:                            c.now,
	}
}

// outcome turns an engine result into the handler's answer: the indexes to
// report, or a function error. A result with reports never carries an error.
// resource is the shard, stream, queue or topic, for metrics; ids names
// the items by their record ids (RecordOutcome.Record).
func (c *config) outcome(ctx context.Context, source sevents.Source, resource string, items []engine.Item, res *engine.Result, ids recordIDs) ([]int, error) {
	report, err := res.Report, res.Err
	if err == nil && c.wholeBatch && len(report) > 0 {
		i := report[0]
		err = fmt.Errorf("sluice: %d of %d records did not succeed (whole-batch mode); first: %w",
			len(report), len(res.Outcomes), res.Errors[i])
	}
	if err != nil {
		report = nil
	}
	if c.onBatch != nil {
		c.onBatch(ctx, batchReport(source, items, res, report, err, ids))
	}
	c.skips.write(ctx, res, ids)
	if c.metrics != nil {
		c.metrics.emit(source, resource, items, res)
	}
	return report, err
}

func batchReport(source sevents.Source, items []engine.Item, res *engine.Result, report []int, err error, ids recordIDs) BatchReport {
	recs := make([]RecordOutcome, len(items))
	for i, it := range items {
		recs[i] = RecordOutcome{ID: it.ID, Record: ids.of(i), Key: it.Key, Outcome: res.Outcomes[i], Err: res.Error(i), Attempts: res.Attempts(i),
			Duplicate: res.Duplicate(i), Quarantined: res.Park(i) != nil}
		if s, ok := res.Skipped(i); ok {
			recs[i].Skipped = s.Reason
		}
	}
	for _, i := range report {
		recs[i].Reported = true
	}
	return BatchReport{Source: source, Records: recs, Err: err, Duration: res.Duration, Duplicates: res.Duplicated, Quarantined: res.Quarantined}
}
