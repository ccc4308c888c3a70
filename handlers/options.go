package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/batch"
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
	logger           *slog.Logger
	concurrency      int
	concurrencySet   bool
	keyConcurrency   int
	skipGroup        bool
	margin           time.Duration
	retry            batch.RetryPolicy
	codec            Codec
	now              func() time.Time
	reportNoProgress bool
	wholeBatch       bool
	lookupEnv        func(string) (string, bool)
	onBatch          func(context.Context, BatchReport)
	errs             []error
}

// WithLogger sets the logger for the per-batch summary and per-failure lines.
// The default is slog.Default().
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

// WithClock sets the clock used for record ages and the deadline guard.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.errs = append(c.errs, errors.New("WithClock: clock is nil"))
		}
		c.now = now
	}
}

// WithReportNoProgress answers a batch in which no record succeeded with a
// partial response naming the failed records, instead of the default
// function error that lets Lambda bisect the batch.
func WithReportNoProgress() Option {
	return func(c *config) { c.reportNoProgress = true }
}

// WithWholeBatchFailures makes any failed record fail the whole invocation
// with a function error, and never returns a partial batch response. Use it
// for a mapping without ReportBatchItemFailures (and Kafka on-demand mode),
// where Lambda would ignore a partial response.
func WithWholeBatchFailures() Option {
	return func(c *config) { c.wholeBatch = true }
}

// BatchReport tells a WithOnBatch hook what became of one invocation's
// records: Items[i] had Result.Outcomes[i] and Result.Errors[i].
type BatchReport struct {
	Source string
	Items  []batch.Item
	Result *batch.Result
}

// WithOnBatch calls f after each batch, before the handler answers Lambda,
// for metrics, tracing or a demo. f runs on the invocation's goroutine and
// must not keep the report after it returns.
func WithOnBatch(f func(ctx context.Context, r BatchReport)) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, errors.New("WithOnBatch: function is nil"))
		}
		c.onBatch = f
	}
}

// WithLookupEnv replaces os.LookupEnv for the start-up contract check.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, errors.New("WithLookupEnv: function is nil"))
		}
		c.lookupEnv = f
	}
}

type sourceKind uint8

const (
	kindStream sourceKind = iota
	kindSQS
	kindKafka
)

func newConfig(kind sourceKind, name string, opts []Option) (*config, error) {
	c := &config{
		logger:    slog.Default(),
		margin:    DefaultDeadlineMargin,
		retry:     batch.DefaultRetryPolicy(),
		codec:     JSON(),
		now:       time.Now,
		lookupEnv: os.LookupEnv,
	}
	for _, o := range opts {
		o(c)
	}
	if c.skipGroup && kind != kindSQS {
		c.errs = append(c.errs, errors.New("WithSkipGroupOnFailure applies to SQS FIFO handlers only"))
	}
	if c.keyConcurrency > 0 && kind != kindStream {
		c.errs = append(c.errs, errors.New("WithKeyConcurrency applies to Kinesis and DynamoDB Streams handlers only"))
	}
	if c.concurrency > 0 && kind == kindStream {
		c.errs = append(c.errs, errors.New("WithConcurrency does not apply to stream handlers: a shard is processed in order; use WithKeyConcurrency"))
	}
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
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("sluice: %s handler: %w", name, err)
	}
	return c, nil
}

// chain wraps fn with the retry policy. Panics are recovered by the batch
// engine (with the stack), so the default chain needs no Recover layer: each
// layer costs a copy of the record per call.
func chain[R any](c *config, fn func(context.Context, R) error) (batch.Handler[R], error) {
	if fn == nil {
		return nil, errors.New("handler function is nil")
	}
	retry, err := batch.Retry[R](c.retry)
	if err != nil {
		return nil, err
	}
	return retry(batch.HandlerFunc[R](fn)), nil
}

// engine returns the batch configuration for one invocation.
func (c *config) engine(source string, policy batch.Policy, concurrency int) batch.Config {
	return batch.Config{
		Policy:           policy,
		Concurrency:      concurrency,
		Margin:           c.margin,
		ReportNoProgress: c.reportNoProgress,
		Source:           source,
		Logger:           c.logger,
		Now:              c.now,
	}
}

// outcome turns an engine result into the handler's answer: the indexes to
// report, or a function error. A result with reports never carries an error.
func (c *config) outcome(ctx context.Context, source string, items []batch.Item, res *batch.Result) ([]int, error) {
	if c.onBatch != nil {
		c.onBatch(ctx, BatchReport{Source: source, Items: items, Result: res})
	}
	if res.Err != nil {
		return nil, res.Err
	}
	if c.wholeBatch && len(res.Report) > 0 {
		i := res.Report[0]
		return nil, fmt.Errorf("sluice: %d of %d records did not succeed (whole-batch mode); first: %w",
			len(res.Report), len(res.Outcomes), res.Errors[i])
	}
	return res.Report, nil
}
