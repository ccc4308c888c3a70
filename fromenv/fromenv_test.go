package fromenv

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/handlers"
)

type order struct{ ID string }

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestOptions: the options each environment gives build the handler they
// are for, and bad values are errors that name the variable.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "dlq.jsonl")
	for _, tc := range []struct {
		name    string
		source  Source
		env     map[string]string
		options int
		err     string
	}{
		{"nothing set", Kinesis, nil, 0, ""},
		{"dead letters to a file, streams count in memory", Kinesis, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "3"}, 1, ""},
		{"dead letters on SQS: FIFO batches count in the attempts table", SQS, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "3", EnvAttemptsTable: "t"}, 1, ""},
		{"idempotency and dead letters", Kafka, map[string]string{EnvIdempotencyTable: "idem", EnvIdempotencyLease: "2m", EnvDLQFile: file}, 2, ""},
		{"bad attempts", Kinesis, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "zero"}, 0, EnvMaxAttempts},
		{"bad lease", Kinesis, map[string]string{EnvIdempotencyTable: "idem", EnvIdempotencyLease: "soon"}, 0, EnvIdempotencyLease},
		{"lease without a table", Kinesis, map[string]string{EnvIdempotencyLease: "1m"}, 0, EnvIdempotencyTable},
		{"attempts without a destination", Kinesis, map[string]string{EnvMaxAttempts: "3"}, 0, EnvDLQURL},
		{"unknown source", Source("sns"), nil, 0, "want kinesis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", "us-east-1")
			opts, err := options(ctx, tc.source, env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || len(opts) != tc.options {
				t.Fatalf("%d options, %v; want %d", len(opts), err, tc.options)
			}
			switch tc.source {
			case SQS:
				_, err = handlers.NewSQS(func(context.Context, handlers.SQSRecord[order]) error { return nil }, opts...)
			case Kafka:
				_, err = handlers.NewKafka(func(context.Context, handlers.KafkaRecord[order]) error { return nil }, opts...)
			default:
				_, err = handlers.NewKinesis(func(context.Context, handlers.KinesisRecord[order]) error { return nil }, opts...)
			}
			if err != nil {
				t.Fatalf("the handler refuses the options: %v", err)
			}
		})
	}
}
