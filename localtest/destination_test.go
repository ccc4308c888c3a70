package localtest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sevents "github.com/sluicehq/sluice/events"
)

func TestValidateDestinationAndUUID(t *testing.T) {
	kafka := func(mode, dest string) *Mapping {
		return &Mapping{EventSource: sevents.SourceKafka, Mode: mode, StartingPosition: "TRIM_HORIZON", Topic: "orders",
			DestinationConfig: &DestinationConfig{OnFailure: &OnFailure{Destination: dest}}}
	}
	kin := func(dest string) *Mapping {
		return kinesisMapping(10, func(m *Mapping) {
			m.DestinationConfig = &DestinationConfig{OnFailure: &OnFailure{Destination: dest}}
		})
	}
	for _, tc := range []struct {
		name string
		m    *Mapping
		want string // "" valid
	}{
		{"s3 for kinesis", kin("s3://b"), ""},
		{"s3 arn for kinesis", kin("arn:aws:s3:::b"), ""},
		{"dir for kinesis", kin("file://out/"), ""},
		{"s3 for kafka", kafka(KafkaProvisioned, "s3://b"), ""},
		{"kafka topic", kafka(KafkaProvisioned, "kafka://orders-dlt"), ""},
		{"kafka topic with brokers", kafka(KafkaProvisioned, "kafka://127.0.0.1:9092/orders-dlt"), ""},
		{"kafka topic on kinesis", kin("kafka://dlt"), "for Kafka sources only"},
		{"kafka topic on demand", kafka(KafkaOnDemand, "kafka://dlt"), "needs Mode provisioned"},
		{"kafka topic is the source", kafka(KafkaProvisioned, "kafka://orders"), "is the source topic"},
		{"sns", kin("arn:aws:sns:us-east-1:123456789012:t"), "is not an on-failure destination"},
		{"bad uuid", kinesisMapping(10, func(m *Mapping) { m.UUID = "nope" }), `UUID: "nope" is not a UUID`},
		{"uuid", kinesisMapping(10, func(m *Mapping) { m.UUID = "f89f8514-cdd9-4602-9e1f-01a5b77d449b" }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A Kinesis mapping whose batch always fails writes, with file://dir/, the
// S3 object Lambda would put: the on-failure record plus the event as
// payload, under the key of the mapping's UUID and the shard.
func TestRunDirDestination(t *testing.T) {
	dir := t.TempDir()
	var payloads []string
	h := fn(func(_ context.Context, p []byte) ([]byte, error) {
		payloads = append(payloads, string(p))
		return nil, errors.New("boom")
	})
	m := kinesisMapping(10, func(m *Mapping) {
		m.MaximumRetryAttempts = ptr(1)
		m.UUID = "f89f8514-cdd9-4602-9e1f-01a5b77d449b"
		m.DestinationConfig = &DestinationConfig{OnFailure: &OnFailure{Destination: "file://" + dir + "/"}}
	})
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(3, oneKey), Invoker: InProcess(h)})
	if len(rep.OnFailureRecords) != 1 || rep.OnFailureRecords[0].Payload != "" {
		t.Fatalf("report's on-failure records (no payload, as SQS gets them): %+v", rep.OnFailureRecords)
	}
	var files []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(files) != 1 {
		t.Fatalf("files %v, want one object", files)
	}
	rec := rep.OnFailureRecords[0]
	at, err := time.Parse(time.RFC3339Nano, rec.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	prefix := "aws/lambda/f89f8514-cdd9-4602-9e1f-01a5b77d449b/shardId-000000000000/" + at.UTC().Format("2006/01/02/2006-01-02T15.04.05") + "-"
	if !strings.HasPrefix(files[0], prefix) || !validUUID(strings.TrimPrefix(files[0], prefix)) {
		t.Fatalf("object key %s, want %s<uuid>", files[0], prefix)
	}
	body, err := os.ReadFile(filepath.Join(dir, files[0]))
	if err != nil {
		t.Fatal(err)
	}
	var got sevents.OnFailureRecord
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(payloads) != 2 || got.Payload != payloads[len(payloads)-1] {
		t.Fatalf("payload %q, want the last invocation's event %q", got.Payload, payloads)
	}
	got.Payload = ""
	if a, b := marshalT(t, got), marshalT(t, rec); a != b {
		t.Errorf("object's record %s, want the report's %s", a, b)
	}
	// The object is the documented record plus "payload", a JSON string.
	var fields map[string]json.RawMessage
	json.Unmarshal(body, &fields)
	if p := fields["payload"]; len(p) == 0 || p[0] != '"' {
		t.Errorf("payload is %.40s, want a JSON string", p)
	}
}

// file://path without a trailing slash keeps writing JSON lines.
func TestRunFileDestinationStaysJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "failed.jsonl")
	h := fn(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
	m := kinesisMapping(2, func(m *Mapping) {
		m.MaximumRetryAttempts = ptr(0)
		m.DestinationConfig = &DestinationConfig{OnFailure: &OnFailure{Destination: "file://" + path}}
	})
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(3, oneKey), Invoker: InProcess(h)})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || len(rep.OnFailureRecords) != 2 || strings.Contains(string(b), `"payload"`) {
		t.Fatalf("file %s, want 2 lines without payload", b)
	}
}

// The runner cannot reach an S3 bucket or SQS queue on its own: it says
// which Options.Destination to pass.
func TestRunS3DestinationNeedsOptions(t *testing.T) {
	m := kinesisMapping(2, func(m *Mapping) {
		m.DestinationConfig = &DestinationConfig{OnFailure: &OnFailure{Destination: "s3://failed"}}
	})
	_, err := Run(context.Background(), Options{Mapping: m, Records: kinesisRecords(1, oneKey), Invoker: InProcess(fn(nil))})
	if err == nil || !strings.Contains(err.Error(), "destination.S3") {
		t.Fatalf("Run: %v, want a pointer to destination.S3", err)
	}
	k := &Mapping{EventSource: sevents.SourceKafka, Mode: KafkaProvisioned, StartingPosition: "TRIM_HORIZON",
		DestinationConfig: &DestinationConfig{OnFailure: &OnFailure{Destination: "kafka://dlt"}}}
	_, err = Run(context.Background(), Options{Mapping: k, Records: []InputRecord{{Value: json.RawMessage(`1`)}}, Invoker: InProcess(fn(nil))})
	if err == nil || !strings.Contains(err.Error(), "kafka://host:port/dlt") {
		t.Fatalf("Run: %v, want the kafka://host:port/topic form named", err)
	}
}

func marshalT(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
