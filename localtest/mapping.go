package localtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/filter"
)

// Kafka modes.
const (
	KafkaOnDemand    = "on-demand"
	KafkaProvisioned = "provisioned"
)

// Mapping is one event source mapping: which source, and the
// CreateEventSourceMapping settings by their AWS names, plus the SQS queue's
// own settings and the shape of an emulated source. Pointer fields
// distinguish "not set" from zero.
type Mapping struct {
	EventSource events.Source `json:"EventSource"`
	// FunctionName is the function, a name or an ARN, as
	// CreateEventSourceMapping takes it. On-failure records name it, and
	// a function run behind the Runtime API must be told the same name.
	FunctionName string `json:"FunctionName,omitempty"`
	// UUID is the mapping's UUID, as AWS assigns it; S3 on-failure objects
	// are stored under it. Default DefaultMappingUUID.
	UUID string `json:"UUID,omitempty"`

	BatchSize                      *int     `json:"BatchSize,omitempty"`
	MaximumBatchingWindowInSeconds *int     `json:"MaximumBatchingWindowInSeconds,omitempty"`
	BisectBatchOnFunctionError     *bool    `json:"BisectBatchOnFunctionError,omitempty"`
	MaximumRetryAttempts           *int     `json:"MaximumRetryAttempts,omitempty"`
	MaximumRecordAgeInSeconds      *int     `json:"MaximumRecordAgeInSeconds,omitempty"`
	ParallelizationFactor          *int     `json:"ParallelizationFactor,omitempty"`
	FunctionResponseTypes          []string `json:"FunctionResponseTypes,omitempty"`
	TumblingWindowInSeconds        *int     `json:"TumblingWindowInSeconds,omitempty"`
	StartingPosition               string   `json:"StartingPosition,omitempty"`
	// StartingPositionTimestamp goes with StartingPosition AT_TIMESTAMP
	// (Unix seconds). An emulated source delivers the records it is given
	// from the first, whatever the starting position; a Kinesis stream at
	// an Endpoint starts at this time.
	StartingPositionTimestamp *float64           `json:"StartingPositionTimestamp,omitempty"`
	DestinationConfig         *DestinationConfig `json:"DestinationConfig,omitempty"`
	ScalingConfig             *ScalingConfig     `json:"ScalingConfig,omitempty"`
	FilterCriteria            *FilterCriteria    `json:"FilterCriteria,omitempty"`

	// SQS queue settings.
	VisibilityTimeout *int           `json:"VisibilityTimeout,omitempty"`
	RedrivePolicy     *RedrivePolicy `json:"RedrivePolicy,omitempty"`

	// Kafka: "on-demand" (default) or "provisioned"; SelfManaged makes the
	// emulated cluster a self-managed one (eventSource SelfManagedKafka, no
	// ARN) instead of Amazon MSK.
	Mode        string `json:"Mode,omitempty"`
	SelfManaged bool   `json:"SelfManaged,omitempty"`

	// Shape of an emulated source: Kinesis shards, Kafka partitions.
	Shards     *int `json:"Shards,omitempty"`
	Partitions *int `json:"Partitions,omitempty"`

	// Names used in events and for real endpoints (see Endpoint).
	StreamName       string `json:"StreamName,omitempty"`       // Kinesis
	TableName        string `json:"TableName,omitempty"`        // DynamoDB
	StreamARN        string `json:"StreamArn,omitempty"`        // DynamoDB stream on an endpoint
	QueueURL         string `json:"QueueUrl,omitempty"`         // SQS on an endpoint
	QueueName        string `json:"QueueName,omitempty"`        // SQS emulated
	Topic            string `json:"Topic,omitempty"`            // Kafka
	BootstrapServers string `json:"BootstrapServers,omitempty"` // Kafka on a real cluster
	Endpoint         string `json:"Endpoint,omitempty"`         // an AWS API endpoint (LocalStack, kinesalite, ...) to read from
	Region           string `json:"Region,omitempty"`
}

// DestinationConfig holds the on-failure destination.
type DestinationConfig struct {
	OnFailure *OnFailure `json:"OnFailure,omitempty"`
}

// OnFailure names where on-failure records go: an SQS queue URL; an S3
// bucket (s3://bucket or arn:aws:s3:::bucket); for Kafka a topic
// (kafka://topic on the source's cluster, or kafka://host:port/topic); a
// file:// path (one JSON record per line); or a file://dir/ ending in a
// slash (S3 objects as files under dir).
type OnFailure struct {
	Destination string `json:"Destination"`
}

// ScalingConfig bounds concurrent invocations of an SQS mapping.
type ScalingConfig struct {
	MaximumConcurrency *int `json:"MaximumConcurrency,omitempty"`
}

// RedrivePolicy is the SQS queue's redrive policy.
type RedrivePolicy struct {
	MaxReceiveCount     int    `json:"maxReceiveCount"`
	DeadLetterTargetArn string `json:"deadLetterTargetArn,omitempty"`
}

// ParseMapping reads a mapping.json document. Unknown fields are errors, so a
// misspelt setting is not silently ignored.
func ParseMapping(data []byte) (*Mapping, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Mapping
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	return &m, nil
}

// ValidationError is a setting AWS would reject, with AWS's reason.
type ValidationError struct {
	Field  string
	Reason string
	// AWS, when set, is AWS's own message for the error, which leads (so
	// it can be searched for); Reason then adds the runner's detail.
	AWS string
}

func (e *ValidationError) Error() string {
	if e.AWS != "" {
		return fmt.Sprintf("InvalidParameterValueException: %s %s: %s", e.AWS, e.Field, e.Reason)
	}
	return fmt.Sprintf("InvalidParameterValueException: %s: %s", e.Field, e.Reason)
}

func (m *Mapping) stream() bool {
	return m.EventSource == events.SourceKinesis || m.EventSource == events.SourceDynamoDB
}
func (m *Mapping) sqs() bool {
	return m.EventSource == events.SourceSQS || m.EventSource == events.SourceSQSFIFO
}

// ReportsBatchItemFailures reports whether FunctionResponseTypes has
// ReportBatchItemFailures.
func (m *Mapping) ReportsBatchItemFailures() bool {
	return slices.Contains(m.FunctionResponseTypes, "ReportBatchItemFailures")
}

// AWS's own wording of the CreateEventSourceMapping errors we know it for,
// so that a user can search for the message; the other reasons are ours.
const (
	awsBatchWindow = "Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10"
	awsRecordAge   = "MaximumRecordAgeInSeconds must be either -1 (forever) or between 60 and 604800 (inclusive)"
	awsFIFOWindow  = "Batching window is not supported for FIFO queues"
)

// Validate rejects settings where AWS rejects them (docs/semantics.md), with AWS's
// reason, and returns all problems joined.
func (m *Mapping) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	rangeCheck := func(field string, v *int, lo, hi int) {
		if v != nil && (*v < lo || *v > hi) {
			bad(field, "value %d is outside %d..%d", *v, lo, hi)
		}
	}
	notFor := func(field string, set bool, what events.Source) {
		if set {
			bad(field, "is not supported for %s", what)
		}
	}
	switch m.EventSource {
	case events.SourceKinesis, events.SourceDynamoDB, events.SourceSQS, events.SourceSQSFIFO, events.SourceKafka:
	default:
		bad("EventSource", "%q is not one of kinesis, dynamodb, sqs, sqs-fifo, kafka", m.EventSource)
		return errors.Join(errs...)
	}
	for _, t := range m.FunctionResponseTypes {
		if t != "ReportBatchItemFailures" {
			bad("FunctionResponseTypes", "%q is not a valid value; the only value is ReportBatchItemFailures", t)
		}
	}
	rangeCheck("MaximumBatchingWindowInSeconds", m.MaximumBatchingWindowInSeconds, 0, 300)
	src := m.EventSource
	switch {
	case m.stream():
		rangeCheck("BatchSize", m.BatchSize, 1, 10000)
		rangeCheck("MaximumRetryAttempts", m.MaximumRetryAttempts, -1, 10000)
		if a := m.MaximumRecordAgeInSeconds; a != nil && *a != -1 && (*a < 60 || *a > 604800) {
			bad("MaximumRecordAgeInSeconds", "%s (got %d)", awsRecordAge, *a)
		}
		rangeCheck("ParallelizationFactor", m.ParallelizationFactor, 1, 10)
		rangeCheck("TumblingWindowInSeconds", m.TumblingWindowInSeconds, 0, 900)
		valid := []string{"TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"}
		if src == events.SourceDynamoDB {
			valid = valid[:2]
		}
		switch {
		case m.StartingPosition == "":
			bad("StartingPosition", "is required for %s event sources", src)
		case !slices.Contains(valid, m.StartingPosition):
			bad("StartingPosition", "%q is not valid for %s; use one of %s", m.StartingPosition, src, strings.Join(valid, ", "))
		}
		notFor("VisibilityTimeout", m.VisibilityTimeout != nil, src)
		notFor("RedrivePolicy", m.RedrivePolicy != nil, src)
		notFor("Mode", m.Mode != "", src)
		notFor("ScalingConfig", m.ScalingConfig != nil, src)
	case src == events.SourceSQS || src == events.SourceSQSFIFO:
		if src == events.SourceSQSFIFO {
			rangeCheck("BatchSize", m.BatchSize, 1, 10)
			// An explicit 0 is accepted (recorded against AWS).
			if w := m.MaximumBatchingWindowInSeconds; w != nil && *w > 0 {
				bad("MaximumBatchingWindowInSeconds", "%s (got %d; leave it out or set 0)", awsFIFOWindow, *w)
			}
		} else {
			rangeCheck("BatchSize", m.BatchSize, 1, 10000)
			if m.BatchSize != nil && *m.BatchSize > 10 && (m.MaximumBatchingWindowInSeconds == nil || *m.MaximumBatchingWindowInSeconds < 1) {
				bad("BatchSize", "%s (BatchSize %d: set MaximumBatchingWindowInSeconds to at least 1)", awsBatchWindow, *m.BatchSize)
			}
		}
		notFor("BisectBatchOnFunctionError", m.BisectBatchOnFunctionError != nil, "SQS")
		notFor("MaximumRetryAttempts", m.MaximumRetryAttempts != nil, "SQS")
		notFor("MaximumRecordAgeInSeconds", m.MaximumRecordAgeInSeconds != nil, "SQS")
		notFor("ParallelizationFactor", m.ParallelizationFactor != nil, "SQS")
		notFor("TumblingWindowInSeconds", m.TumblingWindowInSeconds != nil, "SQS")
		notFor("StartingPosition", m.StartingPosition != "", "SQS")
		notFor("DestinationConfig", m.DestinationConfig != nil, "SQS (use the queue's RedrivePolicy)")
		notFor("Mode", m.Mode != "", src)
		if s := m.ScalingConfig; s != nil {
			rangeCheck("ScalingConfig.MaximumConcurrency", s.MaximumConcurrency, 2, 1000)
		}
		rangeCheck("VisibilityTimeout", m.VisibilityTimeout, 0, 43200)
		if r := m.RedrivePolicy; r != nil && (r.MaxReceiveCount < 1 || r.MaxReceiveCount > 1000) {
			bad("RedrivePolicy.maxReceiveCount", "value %d is outside 1..1000", r.MaxReceiveCount)
		}
	case src == events.SourceKafka:
		rangeCheck("BatchSize", m.BatchSize, 1, 10000)
		switch m.Mode {
		case "", KafkaOnDemand:
			notFor("MaximumRetryAttempts", m.MaximumRetryAttempts != nil, "Kafka in on-demand mode (provisioned mode only)")
			notFor("MaximumRecordAgeInSeconds", m.MaximumRecordAgeInSeconds != nil, "Kafka in on-demand mode (provisioned mode only)")
			notFor("BisectBatchOnFunctionError", m.BisectBatchOnFunctionError != nil, "Kafka in on-demand mode (provisioned mode only)")
			notFor("FunctionResponseTypes", len(m.FunctionResponseTypes) > 0, "Kafka in on-demand mode (provisioned mode only)")
		case KafkaProvisioned:
			rangeCheck("MaximumRetryAttempts", m.MaximumRetryAttempts, -1, 10000)
			if a := m.MaximumRecordAgeInSeconds; a != nil && *a != -1 && (*a < 60 || *a > 604800) {
				bad("MaximumRecordAgeInSeconds", "value %d must be -1 (no limit) or between 60 and 604800", *a)
			}
		default:
			bad("Mode", "%q is not one of on-demand, provisioned", m.Mode)
		}
		if m.StartingPosition == "" {
			bad("StartingPosition", "is required for Kafka event sources")
		} else if m.StartingPosition != "TRIM_HORIZON" && m.StartingPosition != "LATEST" && m.StartingPosition != "AT_TIMESTAMP" {
			bad("StartingPosition", "%q is not valid for Kafka; use TRIM_HORIZON, LATEST or AT_TIMESTAMP", m.StartingPosition)
		}
		notFor("ParallelizationFactor", m.ParallelizationFactor != nil, "Kafka")
		notFor("TumblingWindowInSeconds", m.TumblingWindowInSeconds != nil, "Kafka")
		notFor("VisibilityTimeout", m.VisibilityTimeout != nil, "Kafka")
		notFor("RedrivePolicy", m.RedrivePolicy != nil, "Kafka")
		notFor("ScalingConfig", m.ScalingConfig != nil, "Kafka")
	}
	if m.StartingPositionTimestamp != nil && m.StartingPosition != "AT_TIMESTAMP" {
		bad("StartingPositionTimestamp", "goes with StartingPosition AT_TIMESTAMP only (StartingPosition %q)", m.StartingPosition)
	}
	if d := m.DestinationConfig; d != nil && d.OnFailure != nil {
		dst := d.OnFailure.Destination
		if p := m.destinationProblem(dst); p != "" {
			bad("DestinationConfig.OnFailure.Destination", "%s", p)
		}
	}
	if _, ferrs := compileFilters(src, m.FilterCriteria); len(ferrs) > 0 {
		errs = append(errs, ferrs...)
	}
	if m.UUID != "" && !validUUID(m.UUID) {
		bad("UUID", "%q is not a UUID (8-4-4-4-12 hexadecimal digits)", m.UUID)
	}
	rangeCheck("Shards", m.Shards, 1, 1000)
	rangeCheck("Partitions", m.Partitions, 1, 1000)
	return errors.Join(errs...)
}

// settings are a validated mapping with defaults applied.
type settings struct {
	source           events.Source
	batchSize        int
	window           int // seconds
	bisect           bool
	maxRetries       int // -1: until the records expire
	maxAge           int // seconds; -1: none
	parallelization  int
	reportFailures   bool
	tumbling         int
	startingPosition string
	onFailure        string
	visibility       int // seconds
	maxReceive       int // 0: no redrive policy
	kafkaMode        string
	shards           int
	partitions       int
	concurrency      int
	filter           *filter.Set // nil: every record is delivered
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func (m *Mapping) settings() (settings, error) {
	if err := m.Validate(); err != nil {
		return settings{}, err
	}
	s := settings{
		source:           m.EventSource,
		window:           intOr(m.MaximumBatchingWindowInSeconds, 0),
		bisect:           m.BisectBatchOnFunctionError != nil && *m.BisectBatchOnFunctionError,
		maxRetries:       intOr(m.MaximumRetryAttempts, -1),
		maxAge:           intOr(m.MaximumRecordAgeInSeconds, -1),
		parallelization:  intOr(m.ParallelizationFactor, 1),
		reportFailures:   m.ReportsBatchItemFailures(),
		tumbling:         intOr(m.TumblingWindowInSeconds, 0),
		startingPosition: m.StartingPosition,
		visibility:       intOr(m.VisibilityTimeout, 30),
		kafkaMode:        m.Mode,
		shards:           intOr(m.Shards, 1),
		partitions:       intOr(m.Partitions, 1),
		concurrency:      1,
	}
	switch s.source {
	case events.SourceSQS, events.SourceSQSFIFO:
		s.batchSize = intOr(m.BatchSize, 10)
	default:
		s.batchSize = intOr(m.BatchSize, 100)
	}
	if sc := m.ScalingConfig; sc != nil && sc.MaximumConcurrency != nil {
		s.concurrency = *sc.MaximumConcurrency
	}
	if s.source == events.SourceKafka {
		if s.kafkaMode == "" {
			s.kafkaMode = KafkaOnDemand
		}
		if m.MaximumBatchingWindowInSeconds == nil {
			s.window = 0 // Lambda's 500 ms default; the emulated source holds every record already
		}
	}
	if d := m.DestinationConfig; d != nil && d.OnFailure != nil {
		s.onFailure = d.OnFailure.Destination
		// Kafka: infinite retries with an on-failure destination are capped at 10.
		if s.source == events.SourceKafka && s.maxRetries == -1 {
			s.maxRetries = 10
		}
	}
	if r := m.RedrivePolicy; r != nil {
		s.maxReceive = r.MaxReceiveCount
	}
	s.filter, _ = compileFilters(s.source, m.FilterCriteria)
	return s, nil
}
