package fromenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
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
		{"nothing set", events.SourceKinesis, nil, 0, ""},
		{"dead letters to a file, streams count in memory", events.SourceKinesis, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "3"}, 1, ""},
		{"dead letters on SQS: FIFO batches count in the attempts table", events.SourceSQS, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "3", EnvAttemptsTable: "t"}, 1, ""},
		{"an SQS FIFO handler: the options of SQS", events.SourceSQSFIFO, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "3", EnvAttemptsTable: "t"}, 1, ""},
		{"idempotency and dead letters", events.SourceKafka, map[string]string{EnvIdempotencyTable: "idem", EnvIdempotencyLease: "2m", EnvDLQFile: file}, 2, ""},
		{"bad attempts", events.SourceKinesis, map[string]string{EnvDLQFile: file, EnvMaxAttempts: "zero"}, 0, EnvMaxAttempts},
		{"bad lease", events.SourceKinesis, map[string]string{EnvIdempotencyTable: "idem", EnvIdempotencyLease: "soon"}, 0, EnvIdempotencyLease},
		{"lease without a table", events.SourceKinesis, map[string]string{EnvIdempotencyLease: "1m"}, 0, EnvIdempotencyTable},
		{"a key prefix", events.SourceSQS, map[string]string{EnvIdempotencyTable: "idem", EnvIdempotencyKeyPrefix: "orders"}, 2, ""},
		{"a key prefix without a table", events.SourceSQS, map[string]string{EnvIdempotencyKeyPrefix: "orders"}, 0, EnvIdempotencyTable},
		{"attempts without a destination", events.SourceKinesis, map[string]string{EnvMaxAttempts: "3"}, 0, EnvDLQURL},
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
			case events.SourceSQS:
				_, err = handlers.NewSQS(func(context.Context, handlers.SQSRecord[order]) error { return nil }, opts...)
			case events.SourceSQSFIFO:
				_, err = handlers.NewSQSFIFO(func(context.Context, handlers.SQSRecord[order]) error { return nil }, opts...)
			case events.SourceKafka:
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

// TestIdempotencyKeyDecision: which registered key the environment picks,
// and each disagreement between deployment and function is an error that
// says which side to change.
func TestIdempotencyKeyDecision(t *testing.T) {
	opt := handlers.WithIdempotencyOptionalKey() // any option stands for a key here
	one := map[string]handlers.Option{"order-id": opt}
	for _, tc := range []struct {
		name       string
		keys       map[string]handlers.Option
		table, key string
		want       bool // the key option is returned
		err        string
	}{
		{"nothing", nil, "", "", false, ""},
		{"table, no keys: the record's id", nil, "idem", "", false, ""},
		{"table, key named and registered", one, "idem", "order-id", true, ""},
		{"table, record's id asked for", one, "idem", RecordKey, false, ""},
		{"keys registered, no table", one, "", "", false, "SLUICE_IDEMPOTENCY_TABLE is unset"},
		{"key named, no table", nil, "", "order-id", false, "SLUICE_IDEMPOTENCY_KEY=order-id but SLUICE_IDEMPOTENCY_TABLE is unset"},
		{"keys registered, none named", one, "idem", "", false, `registers idempotency keys ["order-id"] but SLUICE_IDEMPOTENCY_KEY is unset`},
		{"key named, not registered", one, "idem", "customer-id", false, `SLUICE_IDEMPOTENCY_KEY=customer-id, but the function registers no such key`},
		{"key named, none registered", nil, "idem", "customer-id", false, "registers no such key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var order []string
			for k := range tc.keys {
				order = append(order, k)
			}
			got, err := idempotencyKey(tc.keys, order, tc.table, tc.key)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one containing %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case (got != nil) != tc.want:
				t.Fatalf("key option %v, want one: %v", got != nil, tc.want)
			}
		})
	}
}

// TestOptionsIdempotencyKey: a registered business key reaches the handler
// when the deployment names it (a key for another record type then fails
// the build, which shows the option was passed), and a function that
// registers a key but was deployed without a table gets an error at init
// instead of a handler that cannot be built.
func TestOptionsIdempotencyKey(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	ctx := context.Background()
	sqsKey := IdempotencyKey("order-id", handlers.WithIdempotencyKey(func(r handlers.SQSRecord[order]) string { return r.Value.ID }))
	kinesisKey := IdempotencyKey("order-id", handlers.WithIdempotencyKey(func(r handlers.KinesisRecord[order]) string { return r.Value.ID }))
	build := func(opts []handlers.Option) error {
		_, err := handlers.NewSQS(func(context.Context, handlers.SQSRecord[order]) error { return nil }, opts...)
		return err
	}
	deployed := env(map[string]string{EnvIdempotencyTable: "idem", EnvIdempotencyKey: "order-id"})

	opts, err := options(ctx, events.SourceSQS, deployed, sqsKey)
	if err != nil || len(opts) != 2 {
		t.Fatalf("%d options, %v; want WithIdempotency and the key", len(opts), err)
	}
	if err := build(opts); err != nil {
		t.Fatalf("the handler refuses its own key: %v", err)
	}
	opts, err = options(ctx, events.SourceSQS, deployed, kinesisKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := build(opts); err == nil || !strings.Contains(err.Error(), "WithIdempotencyKey") {
		t.Fatalf("a Kinesis key on an SQS handler built (%v): the key option did not reach the handler", err)
	}

	// Without the table: an error Options returns, so main can print it.
	opts, err = options(ctx, events.SourceSQS, env(nil), sqsKey)
	if err == nil || !strings.Contains(err.Error(), EnvIdempotencyTable) {
		t.Fatalf("options %d, err %v; want an error naming %s", len(opts), err, EnvIdempotencyTable)
	}
	// Registering two keys by one name, or a key without a name.
	if _, err := options(ctx, events.SourceSQS, deployed, sqsKey, sqsKey); err == nil || !strings.Contains(err.Error(), "registered twice") {
		t.Fatalf("err %v", err)
	}
	if _, err := options(ctx, events.SourceSQS, deployed, IdempotencyKey("", handlers.WithIdempotencyOptionalKey())); err == nil {
		t.Fatal("an unnamed key was accepted")
	}
}

// TestOptionsKafkaRecordFormat: the mapping's EventRecordFormat becomes
// handlers.WithKafkaEventRecordFormat on a Kafka handler only.
func TestOptionsKafkaRecordFormat(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		source  Source
		value   string
		options int
		err     string
	}{
		{events.SourceKafka, "JSON", 1, ""},
		{events.SourceKafka, "SOURCE", 1, ""},
		{events.SourceKafka, "AVRO", 0, `SLUICE_KAFKA_EVENT_RECORD_FORMAT="AVRO": want JSON or SOURCE`},
		{events.SourceSQS, "JSON", 0, "is for Kafka handlers"},
	} {
		opts, err := options(ctx, tc.source, env(map[string]string{EnvKafkaEventRecordFormat: tc.value}))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %s: err %v, want %q", tc.source, tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || len(opts) != tc.options {
			t.Fatalf("%s %s: %d options, %v", tc.source, tc.value, len(opts), err)
		}
		if _, err := handlers.NewKafka(func(context.Context, handlers.KafkaRecord[order]) error { return nil }, opts...); err != nil {
			t.Fatalf("the Kafka handler refuses the option: %v", err)
		}
	}
}

// TestOptionsKeyPrefix: with SLUICE_IDEMPOTENCY_KEY_PREFIX set, the
// handler the options build claims its records under the prefix, not the
// function's name, in the table (DynamoDB Local).
func TestOptionsKeyPrefix(t *testing.T) {
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "prefix")
	ctx := context.Background()
	if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": srv.Endpoint, "AWS_REGION": servers.Region,
		"AWS_ACCESS_KEY_ID": servers.AccessKeyID, "AWS_SECRET_ACCESS_KEY": servers.SecretAccessKey,
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_LAMBDA_FUNCTION_NAME": "orders-v2"} {
		t.Setenv(k, v)
	}
	opts, err := options(ctx, events.SourceSQS, env(map[string]string{EnvIdempotencyTable: table, EnvIdempotencyKeyPrefix: "orders"}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := handlers.NewSQS(func(context.Context, handlers.SQSRecord[order]) error { return nil }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sb := &events.SQSBuilder{}
	sb.Add(`{"ID":"o1"}`)
	raw, err := events.MarshalEvent(sb.Event())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(ctx, raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	id := sb.Event().Records[0].MessageId
	for key, want := range map[string]bool{"orders#" + id: true, "orders-v2#" + id: false} {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Item != nil; got != want {
			t.Errorf("an item under %s: %v, want %v", key, got, want)
		}
	}
}
