// Package fromenv builds a handler's idempotency and dead-letter options
// from the environment variables the Sluice CDK constructs (package infra)
// set on a function, so that what is deployed and what the handler does
// cannot drift apart:
//
//	opts, err := fromenv.Options(context.Background(), events.SourceKinesis)
//	if err != nil {
//		log.Fatal(err) // a misconfigured function fails at init
//	}
//	lambda.Start(handlers.MustKinesis(process, opts...))
//
// The variables:
//
//	SLUICE_IDEMPOTENCY_TABLE  WithIdempotency on this DynamoDB table
//	                          (idempotency/dynamodbstore, default layout)
//	SLUICE_IDEMPOTENCY_KEY_PREFIX
//	                          what comes before "#" in every idempotency key
//	                          instead of the function's name
//	                          (handlers.WithIdempotencyKeyPrefix), so the keys
//	                          survive a rename of the function
//	SLUICE_IDEMPOTENCY_LEASE  a fixed in-progress lease (a Go duration such
//	                          as 2m), never renewed, instead of the short
//	                          lease the owner renews while a record runs
//	                          (idempotency.WithLease; default
//	                          idempotency.DefaultLease, renewed)
//	SLUICE_DLQ_URL            WithDeadLetters to this SQS queue (dlq/sqsdest)
//	SLUICE_DLQ_FILE           ... or to this file of JSON lines (local runs)
//	SLUICE_MAX_ATTEMPTS       quarantine a record once its attempts reach this
//	                          (without it, only permanent failures)
//	SLUICE_ATTEMPTS_TABLE     streams, Kafka and SQS FIFO queues: count
//	                          attempts in this DynamoDB table
//	                          (dlq/dynamodbattempts); in memory when unset,
//	                          which cannot count a crash
//	SLUICE_IDEMPOTENCY_KEY    the business idempotency key to claim records
//	                          by: the name of a key the function registered
//	                          with IdempotencyKey, or "record" for the
//	                          record's stable id
//	SLUICE_KAFKA_EVENT_RECORD_FORMAT
//	                          Kafka: JSON or SOURCE, how the mapping delivers
//	                          the records it validated against a schema
//	                          registry (handlers.WithKafkaEventRecordFormat)
//
// A function that claims records by a business key (an order id, say)
// registers it, and the deployment names the one to use (the consumer's
// IdempotencyKey prop sets SLUICE_IDEMPOTENCY_KEY):
//
//	opts, err := fromenv.Options(ctx, events.SourceSQS,
//		fromenv.IdempotencyKey("order-id", handlers.WithIdempotencyKey(
//			func(r handlers.SQSRecord[Order]) string { return r.Value.OrderID })))
//
// A registered key with no SLUICE_IDEMPOTENCY_TABLE is an error at init,
// not a handler that fails to build: the deployment forgot the table.
//
// SLUICE_REPORT_BATCH_ITEM_FAILURES, SLUICE_METRICS_NAMESPACE and
// SLUICE_PARALLELIZATION_FACTOR need no option: package handlers reads
// them itself. SLUICE_PARALLELIZATION_FACTOR is a stream mapping's factor,
// which the constructs set on every stream consumer with an idempotency
// table, 1 included: a Kinesis handler told 1 keeps an idempotency
// checkpoint per shard, told more (or not told at all) one per shard and
// partition key (handlers.WithParallelizationFactor). AWS clients come from
// config.LoadDefaultConfig, so the standard AWS environment applies
// (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS for
// local servers). With no variable set, Options returns no option.
package fromenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	"github.com/sluicehq/sluice/dlq/sqsdest"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/ddbchecksum"
)

// Source is the kind of handler the options are for: SQS handlers count
// attempts of standard queues with ApproximateReceiveCount, and those of
// FIFO queues in the attempts store. Options takes events.SourceKinesis,
// SourceDynamoDB, SourceSQS, SourceSQSFIFO (the same options as SourceSQS)
// or SourceKafka.
type Source = events.Source

// The environment variables Options reads.
const (
	EnvIdempotencyTable = "SLUICE_IDEMPOTENCY_TABLE"
	EnvIdempotencyLease = "SLUICE_IDEMPOTENCY_LEASE"
	// EnvIdempotencyKeyPrefix is handlers.WithIdempotencyKeyPrefix's prefix.
	EnvIdempotencyKeyPrefix = "SLUICE_IDEMPOTENCY_KEY_PREFIX"
	EnvDLQURL               = "SLUICE_DLQ_URL"
	EnvDLQFile              = "SLUICE_DLQ_FILE"
	EnvMaxAttempts          = "SLUICE_MAX_ATTEMPTS"
	EnvAttemptsTable        = "SLUICE_ATTEMPTS_TABLE"
	EnvIdempotencyKey       = "SLUICE_IDEMPOTENCY_KEY"
	// EnvKafkaEventRecordFormat is JSON or SOURCE.
	EnvKafkaEventRecordFormat = "SLUICE_KAFKA_EVENT_RECORD_FORMAT"
)

// RecordKey is the SLUICE_IDEMPOTENCY_KEY value that claims records by
// their stable id even when the function registered business keys.
const RecordKey = "record"

// A Setting is what the function offers Options beside the environment.
type Setting func(*settings)

type settings struct {
	keys  map[string]handlers.Option
	order []string
	errs  []error
}

// IdempotencyKey registers a business idempotency key under name: opt is
// the handler's handlers.WithIdempotencyKey (for the handler's record
// type). Options uses it when SLUICE_IDEMPOTENCY_KEY names it; it is an
// error when that variable is unset or names another key (the deployment
// and the function disagree about what makes two records the same), and
// when SLUICE_IDEMPOTENCY_TABLE is unset (idempotency is off, so the key
// would claim nothing).
func IdempotencyKey(name string, opt handlers.Option) Setting {
	return func(s *settings) {
		switch {
		case name == "" || name == RecordKey:
			s.errs = append(s.errs, fmt.Errorf("fromenv: IdempotencyKey(%q): name the key (%q means the record's own id)", name, RecordKey))
		case opt == nil:
			s.errs = append(s.errs, fmt.Errorf("fromenv: IdempotencyKey(%q): the option is nil", name))
		case s.keys[name] != nil:
			s.errs = append(s.errs, fmt.Errorf("fromenv: IdempotencyKey(%q) registered twice", name))
		default:
			if s.keys == nil {
				s.keys = map[string]handlers.Option{}
			}
			s.keys[name] = opt
			s.order = append(s.order, name)
		}
	}
}

// idempotencyKey decides which registered key option the environment
// asks for: none (the record's id), one, or an error saying what the
// deployment and the function disagree on.
func idempotencyKey(keys map[string]handlers.Option, order []string, table, key string) (handlers.Option, error) {
	offered := fmt.Sprintf("%q", order)
	switch {
	case table == "" && key != "":
		return nil, fmt.Errorf("fromenv: %s=%s but %s is unset: idempotency is off, so no key claims anything; "+
			"deploy the function with an idempotency table (infra: IdempotencyTable prop)", EnvIdempotencyKey, key, EnvIdempotencyTable)
	case table == "" && len(keys) > 0:
		return nil, fmt.Errorf("fromenv: the function claims records by a business key (IdempotencyKey %s) but %s is unset: "+
			"idempotency is off; deploy it with an idempotency table (infra: IdempotencyTable and IdempotencyKey props)", offered, EnvIdempotencyTable)
	case table == "" || key == RecordKey || (key == "" && len(keys) == 0):
		return nil, nil
	case key == "":
		return nil, fmt.Errorf("fromenv: the function registers idempotency keys %s but %s is unset: set it to the key the deployment uses "+
			"(infra: the IdempotencyKey prop), or to %q for the record's id", offered, EnvIdempotencyKey, RecordKey)
	case keys[key] == nil:
		return nil, fmt.Errorf("fromenv: %s=%s, but the function registers no such key (it registers %s): "+
			"register it with fromenv.IdempotencyKey(%q, handlers.WithIdempotencyKey(...)), or deploy with one it has", EnvIdempotencyKey, key, offered, key)
	}
	return keys[key], nil
}

// Options returns the handler options the environment asks for, for a
// handler of source, with what the settings offer. An invalid value is an
// error naming the variable.
func Options(ctx context.Context, source Source, settings ...Setting) ([]handlers.Option, error) {
	return options(ctx, source, os.Getenv, settings...)
}

func options(ctx context.Context, source Source, getenv func(string) string, with ...Setting) ([]handlers.Option, error) {
	switch source {
	case events.SourceSQSFIFO:
		source = events.SourceSQS // a FIFO queue's options are a standard queue's
	case events.SourceKinesis, events.SourceDynamoDB, events.SourceSQS, events.SourceKafka:
	default:
		return nil, fmt.Errorf("fromenv: source %q: want kinesis, dynamodb, sqs, sqs-fifo or kafka", source)
	}
	var set settings
	for _, s := range with {
		s(&set)
	}
	if err := errors.Join(set.errs...); err != nil {
		return nil, err
	}
	keyOpt, err := idempotencyKey(set.keys, set.order, getenv(EnvIdempotencyTable), getenv(EnvIdempotencyKey))
	if err != nil {
		return nil, err
	}
	var opts []handlers.Option
	if v := getenv(EnvKafkaEventRecordFormat); v != "" {
		switch {
		case source != events.SourceKafka:
			return nil, fmt.Errorf("fromenv: %s=%s is for Kafka handlers; this one is a %s handler", EnvKafkaEventRecordFormat, v, source)
		case v != handlers.KafkaRecordFormatJSON && v != handlers.KafkaRecordFormatSource:
			return nil, fmt.Errorf("fromenv: %s=%q: want %s or %s", EnvKafkaEventRecordFormat, v, handlers.KafkaRecordFormatJSON, handlers.KafkaRecordFormatSource)
		}
		opts = append(opts, handlers.WithKafkaEventRecordFormat(v))
	}
	var cfg *aws.Config
	loadAWS := func(what string) (aws.Config, error) {
		if cfg == nil {
			c, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return c, fmt.Errorf("fromenv: %s: loading the AWS configuration: %w", what, err)
			}
			cfg = &c
		}
		return *cfg, nil
	}
	if table := getenv(EnvIdempotencyTable); table != "" {
		var iopts []idempotency.Option
		if v := getenv(EnvIdempotencyLease); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("fromenv: %s=%q is not a positive duration (such as 2m)", EnvIdempotencyLease, v)
			}
			iopts = append(iopts, idempotency.WithLease(d))
		}
		c, err := loadAWS(EnvIdempotencyTable + "=" + table)
		if err != nil {
			return nil, err
		}
		store, err := dynamodbstore.New(dynamodb.NewFromConfig(c, ddbchecksum.Option), table)
		if err != nil {
			return nil, fmt.Errorf("fromenv: %s=%s: %w", EnvIdempotencyTable, table, err)
		}
		opts = append(opts, handlers.WithIdempotency(store, iopts...))
		if keyOpt != nil {
			opts = append(opts, keyOpt)
		}
		if v := getenv(EnvIdempotencyKeyPrefix); v != "" {
			opts = append(opts, handlers.WithIdempotencyKeyPrefix(v))
		}
	} else {
		for _, v := range []string{EnvIdempotencyLease, EnvIdempotencyKeyPrefix} {
			if getenv(v) != "" {
				return nil, fmt.Errorf("fromenv: %s is set but %s is not", v, EnvIdempotencyTable)
			}
		}
	}

	url, file := getenv(EnvDLQURL), getenv(EnvDLQFile)
	if url == "" && file == "" {
		for _, v := range []string{EnvMaxAttempts, EnvAttemptsTable} {
			if getenv(v) != "" {
				return nil, fmt.Errorf("fromenv: %s is set but neither %s nor %s names a dead-letter destination", v, EnvDLQURL, EnvDLQFile)
			}
		}
		return opts, nil
	}
	var dopts []dlq.Option
	if v := getenv(EnvMaxAttempts); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("fromenv: %s=%q is not a positive integer", EnvMaxAttempts, v)
		}
		dopts = append(dopts, dlq.WithMaxAttempts(n))
	}
	// SQS handlers count FIFO failures in the table when there is one (in
	// memory otherwise, by themselves); standard queues never use it.
	if table := getenv(EnvAttemptsTable); table != "" {
		c, err := loadAWS(EnvAttemptsTable + "=" + table)
		if err != nil {
			return nil, err
		}
		store, err := dynamodbattempts.New(dynamodb.NewFromConfig(c, ddbchecksum.Option), table)
		if err != nil {
			return nil, fmt.Errorf("fromenv: %s=%s: %w", EnvAttemptsTable, table, err)
		}
		dopts = append(dopts, dlq.WithAttempts(store))
	} else if source != events.SourceSQS {
		dopts = append(dopts, dlq.WithAttempts(dlq.NewMemory(0)))
	}
	var dest dlq.Destination
	if url != "" {
		c, err := loadAWS(EnvDLQURL + "=" + url)
		if err != nil {
			return nil, err
		}
		d, err := sqsdest.New(sqs.NewFromConfig(c), url)
		if err != nil {
			return nil, fmt.Errorf("fromenv: %s=%s: %w", EnvDLQURL, url, err)
		}
		dest = d
	} else {
		d, err := dlq.OpenFile(file)
		if err != nil {
			return nil, fmt.Errorf("fromenv: %s=%s: %w", EnvDLQFile, file, err)
		}
		dest = d
	}
	return append(opts, handlers.WithDeadLetters(dest, dopts...)), nil
}
