package handlers

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/emf"
	"github.com/sluicehq/sluice/internal/engine"
)

// EnvMetricsNamespace names the environment variable that turns metrics on:
// its value is the CloudWatch namespace. Sluice's CDK constructs set it.
// When set (not empty) it names the namespace even over WithMetrics.
const EnvMetricsNamespace = "SLUICE_METRICS_NAMESPACE"

// A Dimension is a CloudWatch dimension a handler can put on its metrics.
type Dimension string

const (
	// DimensionFunction is "FunctionName": AWS_LAMBDA_FUNCTION_NAME.
	DimensionFunction Dimension = "FunctionName"
	// DimensionSource is "Source": kinesis, dynamodb, sqs, sqs-fifo or kafka.
	DimensionSource Dimension = "Source"
	// DimensionResource is where the batch came from, named by source:
	// "ShardId" (Kinesis), "TableName" (DynamoDB Streams), "QueueName"
	// (SQS) or "Topic" (Kafka, the first topic of the batch). One metric
	// per shard costs one CloudWatch custom metric per shard.
	DimensionResource Dimension = "Resource"
)

// DefaultDimensions are the dimensions of Metrics without Dimensions.
var defaultDimensions = []Dimension{DimensionFunction, DimensionSource}

// Metrics configures the CloudWatch metrics a handler writes: per batch, one
// log line in CloudWatch Embedded Metric Format, which CloudWatch Logs turns
// into metrics (no SDK call, no request). See WithMetrics.
type Metrics struct {
	// Namespace is the CloudWatch namespace (1-255 characters: letters,
	// digits and . - _ / # : space; not starting with "AWS/").
	// SLUICE_METRICS_NAMESPACE, when set, replaces it.
	Namespace string
	// Dimensions is the dimension set, in order; nil means FunctionName and
	// Source. A dimension without a value in an invocation (no function
	// name outside Lambda) is left out of it.
	Dimensions []Dimension
	// Fixed adds dimensions with fixed values to the set, e.g.
	// {"Environment": "prod"}.
	Fixed map[string]string
	// Output is where the lines go; nil means standard output, which Lambda
	// sends to CloudWatch Logs.
	Output io.Writer
}

// The metrics each batch writes, all unit Count but the two durations.
const (
	MetricRecordsReceived     = "RecordsReceived"     // records in the batch
	MetricRecordsSucceeded    = "RecordsSucceeded"    // succeeded, duplicates included
	MetricRecordsFailed       = "RecordsFailed"       // ran and failed
	MetricRecordsNotAttempted = "RecordsNotAttempted" // not run: the deadline was near or an earlier record failed
	MetricInProcessRetries    = "InProcessRetries"    // retries of transient errors inside the invocation
	MetricRecordsDuplicate    = "RecordsDuplicate"    // skipped: their effect had completed (WithIdempotency)
	MetricRecordsQuarantined  = "RecordsQuarantined"  // sent to the dead-letter destination (WithDeadLetters); counted in RecordsSucceeded
	MetricBatchDuration       = "BatchDuration"       // Milliseconds: running the records
	MetricOldestRecordAge     = "OldestRecordAge"     // Milliseconds: age of the oldest record at the batch's start
)

// WithMetrics makes the handler write CloudWatch metrics for every batch
// (see Metrics and the Metric constants). Without it, metrics are on only
// when SLUICE_METRICS_NAMESPACE names a namespace, with the default
// dimensions; custom metrics cost money, so they are off otherwise.
func WithMetrics(m Metrics) Option {
	return func(c *config) {
		cp := m
		cp.Dimensions = slices.Clone(m.Dimensions)
		c.metricsOpt = &cp
	}
}

// metricsConfig is a handler's resolved metrics settings.
type metricsConfig struct {
	out      io.Writer
	mu       sync.Mutex // one whole line per Write, whatever the writer
	now      func() time.Time
	function string
	dims     []Dimension
	fixed    [][2]string // sorted by name
	format   *emf.Format
}

// setMetrics resolves the metrics settings from WithMetrics and the
// environment.
func (c *config) setMetrics() {
	ns, _ := c.lookupEnv(EnvMetricsNamespace)
	m := c.metricsOpt
	if m == nil {
		if ns == "" {
			return
		}
		m = &Metrics{}
	}
	if ns == "" {
		ns = m.Namespace
	}
	where := "WithMetrics"
	if v, _ := c.lookupEnv(EnvMetricsNamespace); v != "" {
		where = EnvMetricsNamespace
	}
	if err := emf.ValidNamespace(ns); err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", where, err))
		return
	}
	mc := &metricsConfig{out: m.Output, now: c.now, dims: m.Dimensions}
	if mc.out == nil {
		mc.out = os.Stdout
	}
	if mc.dims == nil {
		mc.dims = defaultDimensions
	}
	mc.function, _ = c.lookupEnv(EnvFunctionName)
	seen := map[string]bool{}
	for _, d := range mc.dims {
		switch d {
		case DimensionFunction, DimensionSource, DimensionResource:
		default:
			c.errs = append(c.errs, fmt.Errorf("WithMetrics: unknown dimension %q: use DimensionFunction, DimensionSource or DimensionResource", d))
		}
		if seen[string(d)] {
			c.errs = append(c.errs, fmt.Errorf("WithMetrics: dimension %q given twice", d))
		}
		seen[string(d)] = true
	}
	for k, v := range m.Fixed {
		switch {
		case k == "" || v == "" || strings.HasPrefix(k, ":") || len(k) > 255 || len(v) > 1024:
			c.errs = append(c.errs, fmt.Errorf("WithMetrics: fixed dimension %q=%q: names and values must be 1-255 and 1-1024 characters, names not starting with ':'", k, v))
		case isMetricName(k) || k == "_aws" || k == "FunctionName" || k == "Source" || k == "ShardId" || k == "TableName" || k == "QueueName" || k == "Topic":
			c.errs = append(c.errs, fmt.Errorf("WithMetrics: fixed dimension %q clashes with a name Sluice writes", k))
		}
		mc.fixed = append(mc.fixed, [2]string{k, v})
	}
	slices.SortFunc(mc.fixed, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	if n := len(mc.dims) + len(mc.fixed); n > 30 {
		c.errs = append(c.errs, fmt.Errorf("WithMetrics: %d dimensions: CloudWatch allows 30 per metric", n))
	}
	mc.format = emf.NewFormat(ns, metricNames)
	c.metrics = mc
}

var metricNames = []emf.Metric{
	{Name: MetricRecordsReceived, Unit: "Count"},
	{Name: MetricRecordsSucceeded, Unit: "Count"},
	{Name: MetricRecordsFailed, Unit: "Count"},
	{Name: MetricRecordsNotAttempted, Unit: "Count"},
	{Name: MetricInProcessRetries, Unit: "Count"},
	{Name: MetricRecordsDuplicate, Unit: "Count"},
	{Name: MetricRecordsQuarantined, Unit: "Count"},
	{Name: MetricBatchDuration, Unit: "Milliseconds"},
	{Name: MetricOldestRecordAge, Unit: "Milliseconds"}, // last: left out when no record has an arrival time
}

func isMetricName(s string) bool {
	return slices.ContainsFunc(metricNames, func(m emf.Metric) bool { return m.Name == s })
}

// resourceDimension names the resource dimension of a source.
func resourceDimension(source sevents.Source) string {
	switch source {
	case sevents.SourceKinesis:
		return "ShardId"
	case sevents.SourceDynamoDB:
		return "TableName"
	case sevents.SourceKafka:
		return "Topic"
	}
	return "QueueName"
}

// emit writes one batch's metrics line.
func (m *metricsConfig) emit(source sevents.Source, resource string, items []engine.Item, res *engine.Result) {
	now := m.now()
	oldest := res.Oldest
	var dims [32]emf.Dim
	nd := 0
	for _, d := range m.dims {
		v, name := "", string(d)
		switch d {
		case DimensionFunction:
			v = m.function
		case DimensionSource:
			v = string(source)
		case DimensionResource:
			v, name = resource, resourceDimension(source)
		}
		if v != "" && nd < len(dims) {
			dims[nd] = emf.Dim{Name: name, Value: v}
			nd++
		}
	}
	for _, f := range m.fixed {
		if nd < len(dims) {
			dims[nd] = emf.Dim{Name: f[0], Value: f[1]}
			nd++
		}
	}
	// In the order of metricNames; OldestRecordAge only when a record had
	// an arrival time.
	vals := [...]emf.Value{emf.Int(int64(len(items))), emf.Int(int64(res.Succeeded)), emf.Int(int64(res.Failed)),
		emf.Int(int64(res.NotAttempted)), emf.Int(int64(res.Retried)), emf.Int(int64(res.Duplicated)),
		emf.Int(int64(res.Quarantined)), emf.Float(float64(res.Duration.Microseconds()) / 1000), {}}
	nv := len(vals) - 1
	if !oldest.IsZero() {
		vals[nv] = emf.Int(max(now.Add(-res.Duration).Sub(oldest).Milliseconds(), 0))
		nv++
	}
	b := m.format.Append(make([]byte, 0, 640), now, dims[:nd], vals[:nv])
	m.mu.Lock()
	m.out.Write(b)
	m.mu.Unlock()
}
