package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/internal/replay"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func TestReplayUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no stream", []string{"--from", "TRIM_HORIZON", "--dry-run"}, "name one of --kinesis-stream"},
		{"two streams", []string{"--kinesis-stream", "s", "--kafka-topic", "t", "--from", "TRIM_HORIZON", "--dry-run"}, "name one of"},
		{"no from", []string{"--kinesis-stream", "s", "--dry-run"}, "--from is required"},
		{"bad from", []string{"--kinesis-stream", "s", "--from", "yesterday", "--dry-run"}, `position "yesterday"`},
		{"to trim horizon", []string{"--kinesis-stream", "s", "--from", "1", "--to", "TRIM_HORIZON", "--dry-run"}, "--to TRIM_HORIZON"},
		{"to before from", []string{"--kinesis-stream", "s", "--from", "2026-12-01T10:00:00Z", "--to", "2026-12-01T09:00:00Z", "--dry-run"}, "is not after"},
		{"no handler", []string{"--kinesis-stream", "s", "--from", "TRIM_HORIZON"}, "--handler or --endpoint is required"},
		{"handler and endpoint", []string{"--kinesis-stream", "s", "--from", "TRIM_HORIZON", "--handler", "x", "--endpoint", "http://e"}, "name one of --handler and --endpoint"},
		{"endpoint not http", []string{"--kinesis-stream", "s", "--from", "TRIM_HORIZON", "--endpoint", "./bootstrap"}, "an http(s):// Lambda Invoke API endpoint"},
		{"kafka without brokers", []string{"--kafka-topic", "t", "--from", "0", "--dry-run"}, "needs --kafka-brokers"},
		{"kafka partition", []string{"--kafka-topic", "t", "--kafka-brokers", "h:1", "--partition", "x", "--from", "0", "--dry-run"}, `--partition "x"`},
		{"shadow by env", []string{"--kinesis-stream", "s", "--from", "TRIM_HORIZON", "--dry-run", "--env", "SLUICE_SHADOW=1"}, "pass --shadow instead"},
		{"batch size", []string{"--kinesis-stream", "s", "--from", "TRIM_HORIZON", "--dry-run", "--batch-size", "0"}, "--batch-size 0"},
		{"batch rate", []string{"--kinesis-stream", "s", "--from", "TRIM_HORIZON", "--dry-run", "--batch-rate", "x"}, "--batch-rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(t, append([]string{"replay"}, tt.args...)...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, tt.want, errs)
			}
		})
	}
	t.Run("shadow inherited", func(t *testing.T) {
		t.Setenv("SLUICE_SHADOW", "1")
		code, _, errs := runCLI(t, "replay", "--kinesis-stream", "s", "--from", "TRIM_HORIZON", "--dry-run")
		if code != 2 || !strings.Contains(errs, "not a --shadow replay") {
			t.Fatalf("exit %d:\n%s", code, errs)
		}
	})
}

// effectsSplit counts the conformance function's effects per payload id,
// apart for production and shadow.
func effectsSplit(t *testing.T, path string) (production, shadow map[string]int) {
	t.Helper()
	production, shadow = map[string]int{}, map[string]int{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var e struct {
			ID     string
			Shadow bool
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("effects line %q: %v", l, err)
		}
		if e.Shadow {
			shadow[e.ID]++
		} else {
			production[e.ID]++
		}
	}
	return
}

func eachOnce(prefix string, n int) string {
	want := map[string]int{}
	for i := range n {
		want[fmt.Sprint(prefix, i)] = 1
	}
	return fmt.Sprint(want)
}

// createIdempotencyTable makes an idempotency table with sluice tables
// create, as a user would.
func createIdempotencyTable(t *testing.T, env []string) string {
	t.Helper()
	table := servers.UniqueName(t, "idem")
	if code, out, errs := runCLIEnv(t, env, "tables", "create", "--idempotency", table); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	return table
}

// roundTrip is one source's replay round trip, after its n records
// (payload ids prefix0 to prefix<n-1>) were written to it.
type roundTrip struct {
	env     []string // the CLI's environment
	source  string   // SLUICE_SOURCE
	mapping string   // the mapping sluice run reads the records by
	prefix  string
	n       int
	replay  []string // replay's arguments naming the range and batch size
	want    []string // more the production replay's output must say
	shadows int      // how many --shadow replays to make
}

// run checks the round trip: sluice run takes every record's effect once
// in production, with idempotency on (a table in rt.env's DynamoDB); a
// replay of the same range to production is all duplicates (no effect);
// each --shadow replay makes each effect once more, marked shadow, and
// none in production (so a second shadow replay repeats none).
func (rt roundTrip) run(t *testing.T, bin string) {
	t.Helper()
	table := createIdempotencyTable(t, rt.env)
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	mapping := write(t, dir, "mapping.json", rt.mapping)
	fnEnv := []string{"--env", "SLUICE_SOURCE=" + rt.source, "--env", "SLUICE_IDEMPOTENCY_TABLE=" + table, "--env", "SLUICE_EFFECTS_FILE=" + effects}
	code, out, errs := runCLIEnv(t, rt.env, append([]string{"run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "10s", "--effects", effects}, fnEnv...)...)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	once := eachOnce(rt.prefix, rt.n)
	prod, shadow := effectsSplit(t, effects)
	if fmt.Sprint(prod) != once || len(shadow) != 0 {
		t.Fatalf("production run: effects %v, shadow %v", prod, shadow)
	}
	args := append(append(append([]string{"replay"}, rt.replay...), "--from", "TRIM_HORIZON", "--handler", bin, "--quiet", "--timeout", "10s"), fnEnv...)
	code, out, errs = runCLIEnv(t, rt.env, args...)
	want := append([]string{fmt.Sprintf("%d records sent, %d acknowledged", rt.n, rt.n), "production replay"}, rt.want...)
	for _, w := range want {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("production replay: exit %d, want 0 saying %q\n%s\n%s", code, w, out, errs)
		}
	}
	if prod, shadow = effectsSplit(t, effects); fmt.Sprint(prod) != once || len(shadow) != 0 {
		t.Fatalf("after a production replay: effects %v, shadow %v; want production's once each (duplicates skipped)", prod, shadow)
	}
	for pass := range rt.shadows {
		code, out, errs = runCLIEnv(t, rt.env, append(args, "--shadow")...)
		if code != 0 || !strings.Contains(out, "shadow replay") || !strings.Contains(out, fmt.Sprintf("%d acknowledged", rt.n)) {
			t.Fatalf("shadow replay %d: exit %d\n%s\n%s", pass, code, out, errs)
		}
		if prod, shadow = effectsSplit(t, effects); fmt.Sprint(prod) != once || fmt.Sprint(shadow) != once {
			t.Fatalf("after shadow replay %d: production %v, shadow %v; want each once in both", pass, prod, shadow)
		}
	}
}

// putKinesis puts one record per payload on stream name, all of partition
// key pk, and returns their sequence numbers.
func putKinesis(t *testing.T, client *kinesis.Client, name string, payloads ...string) []string {
	t.Helper()
	var seqs []string
	for _, p := range payloads {
		out, err := client.PutRecord(context.Background(), &kinesis.PutRecordInput{StreamName: aws.String(name), PartitionKey: aws.String("pk"), Data: []byte(p)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, aws.ToString(out.SequenceNumber))
	}
	return seqs
}

func kinesisStream(t *testing.T, client *kinesis.Client, shards int32) string {
	t.Helper()
	ctx := context.Background()
	name := servers.UniqueName(t, "orders")
	if _, err := client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(shards)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && d.StreamDescriptionSummary.StreamStatus == "ACTIVE" {
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not active: %v", err)
		}
	}
}

// The round trip on Kinesis (kinesalite) with idempotency on DynamoDB
// Local: sluice run takes every record's effect once in production; a
// replay of the same range to production is all duplicates (no effect);
// a --shadow replay makes each effect once more, marked shadow, and none
// in production; a second shadow replay repeats none.
func TestReplayKinesisRoundTrip(t *testing.T) {
	bin := conformance(t)
	kin := servers.Kinesis(t)
	ddb := servers.DynamoDB(t)
	ctx := context.Background()
	client := kinesis.NewFromConfig(kin.AWSConfig())
	name := kinesisStream(t, client, 2)
	const n = 8
	for i := range n {
		data := fmt.Sprintf(`{"id":"k%d","action":"ok"}`, i)
		if _, err := client.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(name), PartitionKey: aws.String(fmt.Sprint("pk", i)), Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip{env: append(awsEnv(ddb), "AWS_ENDPOINT_URL_KINESIS="+kin.Endpoint), source: "kinesis", prefix: "k", n: n,
		mapping: fmt.Sprintf(`{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":3,
		"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":%q,"StreamName":%q}`, kin.Endpoint, name),
		replay: []string{"--kinesis-stream", name, "--batch-size", "3"}, shadows: 2}.run(t, bin)
}

// A replay with a checkpoint stopped after one event resumes after it:
// the two runs together send each record once, in order, and the second
// says where it resumed. A dry run sends nothing and writes no checkpoint;
// a checkpoint of a production replay is refused by a shadow one.
func TestReplayKinesisCheckpointResumeAndDryRun(t *testing.T) {
	bin := conformance(t)
	kin := servers.Kinesis(t)
	env := awsEnvAt("AWS_ENDPOINT_URL_KINESIS", kin)
	client := kinesis.NewFromConfig(kin.AWSConfig())
	name := kinesisStream(t, client, 1)
	const n = 7
	var payloads []string
	for i := range n {
		payloads = append(payloads, fmt.Sprintf(`{"id":"c%d","action":"ok"}`, i))
	}
	seqs := putKinesis(t, client, name, payloads...)
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	cp := filepath.Join(dir, "checkpoint.json")
	base := []string{"replay", "--kinesis-stream", name, "--from", seqs[1], "--to", seqs[5], "--batch-size", "2", "--quiet", "--checkpoint", cp}
	fn := []string{"--handler", bin, "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_EFFECTS_FILE=" + effects}

	code, out, errs := runCLIEnv(t, env, append(base, "--dry-run")...)
	if code != 0 || !strings.Contains(out, "would send 3 events with 5 records") || !strings.Contains(out, `{"Records":[{"awsRegion"`) {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(cp); !os.IsNotExist(err) {
		t.Fatalf("the dry run wrote a checkpoint: %v", err)
	}
	if _, err := os.Stat(effects); !os.IsNotExist(err) {
		t.Fatal("the dry run ran the function")
	}

	code, out, errs = runCLIEnv(t, env, append(append(base, "--max-batches", "1"), fn...)...)
	if code != 0 || !strings.Contains(out, "1 events, 2 records sent, 2 acknowledged") || !strings.Contains(out, "shardId-000000000000 at "+seqs[2]) {
		t.Fatalf("first part: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLIEnv(t, env, append(append(base, "--shadow"), fn...)...)
	if code != 1 || !strings.Contains(errs, "a production replay, and this is a shadow replay") {
		t.Fatalf("a shadow replay on a production checkpoint: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLIEnv(t, env, append(base, fn...)...)
	if code != 0 || !strings.Contains(out, "resumed shardId-000000000000 after "+seqs[2]) || !strings.Contains(out, "2 events, 3 records sent, 3 acknowledged") {
		t.Fatalf("resumed: exit %d\n%s\n%s", code, out, errs)
	}
	data, _ := os.ReadFile(effects)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct{ ID string }
		_ = json.Unmarshal([]byte(l), &e)
		got = append(got, e.ID)
	}
	if strings.Join(got, ",") != "c1,c2,c3,c4,c5" {
		t.Fatalf("effects of the two runs: %v, want c1 to c5 once each, in order", got)
	}
}

// A failed record stops its shard: the replay exits 1 naming it, and the
// checkpoint stays before it, so the next run starts at it.
func TestReplayKinesisFailureStopsShard(t *testing.T) {
	bin := conformance(t)
	kin := servers.Kinesis(t)
	env := awsEnvAt("AWS_ENDPOINT_URL_KINESIS", kin)
	client := kinesis.NewFromConfig(kin.AWSConfig())
	name := kinesisStream(t, client, 1)
	var payloads []string
	for i, action := range []string{"ok", "ok", "fail", "ok"} {
		payloads = append(payloads, fmt.Sprintf(`{"id":"f%d","action":%q}`, i, action))
	}
	seqs := putKinesis(t, client, name, payloads...)
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	cp := filepath.Join(dir, "checkpoint.json")
	args := []string{"replay", "--kinesis-stream", name, "--from", "TRIM_HORIZON", "--batch-size", "10", "--quiet", "--checkpoint", cp,
		"--handler", bin, "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_EFFECTS_FILE=" + effects}
	code, out, errs := runCLIEnv(t, env, args...)
	if code != 1 || !strings.Contains(out, "FAILED shardId-000000000000 record "+seqs[2]) || !strings.Contains(out, "at "+seqs[1]) {
		t.Fatalf("exit %d, want 1 naming record %s:\n%s\n%s", code, seqs[2], out, errs)
	}
	if got := effectsByID(t, effects); fmt.Sprint(got) != "map[f0:1 f1:1]" {
		t.Fatalf("effects %v: want f0 and f1, and nothing after the failed record", got)
	}
	code, out, _ = runCLIEnv(t, env, args...)
	if code != 1 || !strings.Contains(out, "resumed shardId-000000000000 after "+seqs[1]) || !strings.Contains(out, "2 records sent, 0 acknowledged") {
		t.Fatalf("second run: exit %d, want it to start at the failed record:\n%s", code, out)
	}
}

// A range from before the stream's retention is an error that says what
// is left (errors.Is ErrTrimmed in the package).
func TestReplayKinesisTrimmed(t *testing.T) {
	kin := servers.Kinesis(t)
	ctx := context.Background()
	client := kinesis.NewFromConfig(kin.AWSConfig())
	name := kinesisStream(t, client, 1)
	seq := putKinesis(t, client, name, `{"id":"t0"}`)[0]
	env := awsEnvAt("AWS_ENDPOINT_URL_KINESIS", kin)
	from := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339)
	code, out, errs := runCLIEnv(t, env, "replay", "--kinesis-stream", name, "--from", from, "--dry-run")
	if code != 1 || !strings.Contains(errs, "keeps records for 24h0m0s") || !strings.Contains(errs, "what is left: shard shardId-000000000000 from sequence number "+seq) {
		t.Fatalf("exit %d, want 1 with what is left:\n%s\n%s", code, out, errs)
	}
	_, err := replay.Run(ctx, replay.Kinesis(kin.AWSConfig(), name), replay.Range{From: replay.Position{Time: time.Now().Add(-48 * time.Hour)}}, replay.Options{DryRun: true})
	if !errors.Is(err, replay.ErrTrimmed) {
		t.Fatalf("Run: %v, want ErrTrimmed", err)
	}
}

// The round trip on a DynamoDB table's stream (DynamoDB Local), which also
// holds the idempotency table: production once, a replay to production
// all duplicates, a shadow replay each once in shadow.
func TestReplayDynamoDBRoundTrip(t *testing.T) {
	bin := conformance(t)
	ddb := servers.DynamoDB(t)
	env := awsEnv(ddb)
	client := dynamodb.NewFromConfig(ddb.AWSConfig())
	name, arn := streamTable(t, client)
	const n = 5
	var payloads []string
	for i := range n {
		payloads = append(payloads, fmt.Sprintf(`{"id":"d%d","action":"ok"}`, i))
	}
	putPayloads(t, client, name, "k", payloads)
	roundTrip{env: env, source: "dynamodb", prefix: "d", n: n,
		mapping: fmt.Sprintf(`{"EventSource":"dynamodb","StartingPosition":"TRIM_HORIZON","BatchSize":2,
		"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":%q,"StreamArn":%q}`, ddb.Endpoint, arn),
		replay: []string{"--dynamodb-stream", arn, "--batch-size", "2"}, shadows: 1}.run(t, bin)
	from := time.Now().Add(-25 * time.Hour).UTC().Format(time.RFC3339)
	code, _, errs := runCLIEnv(t, env, "replay", "--dynamodb-stream", arn, "--from", from, "--dry-run")
	if code != 1 || !strings.Contains(errs, "keeps records for 24h0m0s") {
		t.Fatalf("a range from 25 hours ago: exit %d\n%s", code, errs)
	}
}

// The round trip on Kafka (kfake, in process) over three partitions, with
// idempotency on DynamoDB Local; and a range by offset of one partition,
// and one from a deleted offset (ErrTrimmed).
func TestReplayKafkaRoundTrip(t *testing.T) {
	bin := conformance(t)
	ddb := servers.DynamoDB(t)
	env := awsEnv(ddb)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 9
	for i := range n {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 3), Key: []byte(fmt.Sprint("key", i)), Value: []byte(fmt.Sprintf(`{"id":"q%d","action":"ok"}`, i))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip{env: env, source: "kafka", prefix: "q", n: n,
		mapping: fmt.Sprintf(`{"EventSource":"kafka","Mode":"provisioned","StartingPosition":"TRIM_HORIZON","BatchSize":4,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"Endpoint":"kafka://%s","Topic":"orders"}`, brokers),
		replay: []string{"--kafka-topic", "orders", "--kafka-brokers", brokers, "--batch-size", "4"},
		want:   []string{"partitions orders-0, orders-1, orders-2"}, shadows: 1}.run(t, bin)

	// Offsets 1 to 2 of partition 1: q4 and q7, in a dry run with the
	// event's bootstrapServers.
	code, out, errs := runCLIEnv(t, env, "replay", "--kafka-topic", "orders", "--kafka-brokers", brokers, "--partition", "1", "--from", "1", "--to", "2", "--dry-run")
	if code != 0 || !strings.Contains(out, "would send 1 events with 2 records") || !strings.Contains(out, "orders-1: orders-1@1, orders-1@2") ||
		!strings.Contains(out, `"bootstrapServers":"`+brokers+`","records":{"orders-1":[`) {
		t.Fatalf("dry run by offsets: exit %d\n%s\n%s", code, out, errs)
	}
	// Records before offset 2 of partition 0 deleted: a range from 0 is trimmed.
	adm, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := deleteRecords(adm, "orders", 0, 2); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLIEnv(t, env, "replay", "--kafka-topic", "orders", "--kafka-brokers", brokers, "--partition", "0", "--from", "0", "--dry-run")
	if code != 1 || !strings.Contains(errs, "offset 0 is past the topic's retention") || !strings.Contains(errs, "partition orders-0 holds offsets 2 to 2") {
		t.Fatalf("a deleted offset: exit %d\n%s", code, errs)
	}
}

// deleteRecords deletes the records of topic-partition before offset.
func deleteRecords(cl *kgo.Client, topic string, partition int32, before int64) error {
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, before
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("DeleteRecords %s-%d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
