package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// downDLQ points the conformance function at a dead-letter queue that
// cannot be reached (nothing listens on port 1), with dummy credentials.
var downDLQ = []string{"--env", "SLUICE_DLQ_URL=http://127.0.0.1:1/q", "--env", "AWS_ENDPOINT_URL_SQS=http://127.0.0.1:1",
	"--env", "AWS_REGION=us-east-1", "--env", "AWS_ACCESS_KEY_ID=local", "--env", "AWS_SECRET_ACCESS_KEY=local",
	"--env", "AWS_CONFIG_FILE=" + os.DevNull, "--env", "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}

// TestRunOrderedQuarantineFails: the conformance bootstrap under sluice run
// with a dead-letter queue that is down. A record due for quarantine is
// reported, and nothing after it in its FIFO group or shard runs (before,
// the later records ran, then ran again once Lambda redelivered them
// behind the record whose send failed: m4 took effect on each of the
// three deliveries before the queue's redrive policy moved the group
// away, and order per key broke).
func TestRunOrderedQuarantineFails(t *testing.T) {
	bin := conformance(t)
	for _, tc := range []struct {
		name, source, mapping, records string
		never                          []string // payload ids that must not take effect
	}{
		{"sqs-fifo", "sqs-fifo", `{"EventSource":"sqs-fifo","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],"VisibilityTimeout":30,
			"RedrivePolicy":{"maxReceiveCount":6}}`,
			"../../examples/runner/sqs-fifo-records.jsonl", []string{"m4", "m5", "m6"}},
		{"kinesis", "kinesis", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":10,"MaximumRetryAttempts":3,
			"FunctionResponseTypes":["ReportBatchItemFailures"]}`, "", []string{"r2", "r3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			records := tc.records
			if records == "" {
				records = write(t, dir, "records.jsonl", `{"partitionKey":"a","data":{"id":"r0","action":"ok"}}
{"partitionKey":"a","data":{"id":"r1","action":"permanent"}}
{"partitionKey":"b","data":{"id":"r2","action":"ok"}}
{"partitionKey":"a","data":{"id":"r3","action":"ok"}}
`)
			}
			mapping := write(t, dir, "mapping.json", tc.mapping)
			effects, report := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "report.json")
			args := append([]string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "10s",
				"--effects", effects, "--exactly-once", "--report", report,
				"--env", "SLUICE_SOURCE=" + tc.source, "--env", "SLUICE_MAX_ATTEMPTS=3", "--env", "SLUICE_RETRY_BACKOFF=1ms"}, downDLQ...)
			_, out, errs := runCLI(t, args...)
			for _, inv := range []string{"effect-once: held", "order-per-key: held"} {
				if !strings.Contains(out, "invariant "+inv) {
					t.Errorf("the run does not say %q:\n%s\n%s", inv, out, errs)
				}
			}
			seen := effectIDs(t, effects)
			for _, id := range tc.never {
				if seen[id] != 0 {
					t.Errorf("%s took effect %d times: it comes after the record whose quarantine failed", id, seen[id])
				}
			}
			if !strings.Contains(out, "was to be quarantined") {
				t.Errorf("no quarantine was attempted:\n%s", out)
			}
		})
	}
}

// TestRunFIFOAttemptsCountRuns: a FIFO message that waited behind a failing
// message of its group (its ApproximateReceiveCount rose while it never
// ran) is not quarantined on its first failure; only the message that ran
// and failed SLUICE_MAX_ATTEMPTS times is, and the group then goes on in
// order, each message once.
func TestRunFIFOAttemptsCountRuns(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	records := write(t, dir, "records.jsonl", `{"messageGroupId":"alice","body":{"id":"a1","action":"fail"},"expect":"quarantined"}
{"messageGroupId":"bob","body":{"id":"b1","action":"ok"}}
{"messageGroupId":"alice","body":{"id":"a2","action":"transient:3"}}
{"messageGroupId":"bob","body":{"id":"b2","action":"ok"}}
{"messageGroupId":"alice","body":{"id":"a3","action":"ok"}}
`)
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs-fifo","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],"VisibilityTimeout":30}`)
	effects, dlqFile := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "dlq.jsonl")
	// The runner reads the function's dead letters: a1 ends quarantined, as
	// its records line expects, and is not lost.
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "10s",
		"--function-name", "orders", "--effects", effects,
		"--env", "SLUICE_SOURCE=sqs-fifo", "--env", "SLUICE_DLQ_FILE="+dlqFile, "--env", "SLUICE_MAX_ATTEMPTS=3", "--env", "SLUICE_RETRY_BACKOFF=1ms")
	if code != 0 || !strings.Contains(out, "invariant no-record-lost: held") || !strings.Contains(out, "invariant order-per-key: held") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if got := effectOrder(t, effects); got != "alice:a2,a3 bob:b1,b2" {
		t.Errorf("effects per group %s, want alice:a2,a3 bob:b1,b2", got)
	}
	envs := readEnvelopes(t, dlqFile)
	if len(envs) != 1 || payloadID(t, envs[0]) != "a1" || envs[0].Attempts != 3 || envs[0].Reason != dlq.ReasonAttempts {
		for _, e := range envs {
			t.Errorf("quarantined %s: attempts %d, reason %s", payloadID(t, e), e.Attempts, e.Reason)
		}
		t.Fatalf("want a1 alone, with attempts 3\n%s", out)
	}
	seen := effectIDs(t, effects)
	for _, id := range []string{"b1", "a2", "b2", "a3"} {
		if seen[id] != 1 {
			t.Errorf("%s took effect %d times, want 1", id, seen[id])
		}
	}
}

// TestInvokeKinesisAttemptsPerShard: two shards of one stream carry records
// with the same sequence number (Kinesis keeps them unique per partition
// key within a shard only). Each fails once under SLUICE_MAX_ATTEMPTS=2,
// counted in an attempts table on DynamoDB Local: neither is quarantined
// (keyed by sequence number alone, the second counted as the first's
// second attempt and was).
func TestInvokeKinesisAttemptsPerShard(t *testing.T) {
	bin := conformance(t)
	db := servers.DynamoDB(t)
	table := servers.UniqueName(t, "attempts")
	if code, out, errs := runCLIEnv(t, awsEnv(db), "tables", "create", "--attempts", table); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	dir := t.TempDir()
	dlqFile := filepath.Join(dir, "dlq.jsonl")
	for i, shard := range []string{"shardId-000000000000", "shardId-000000000001"} {
		b := &events.KinesisBuilder{Clock: fixedClock, ShardID: shard}
		b.Add("pk", command(fmt.Sprintf("t%d", i), "ok"))
		b.Add("pk", command(fmt.Sprintf("s%d", i), "fail"))
		ev := prettyEvent(t, dir, shard+".json", b.Event())
		code, out, errs := invokeCLI(t, "", "--handler", bin, "--event", ev, "--function-name", "orders",
			"--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_DLQ_FILE="+dlqFile, "--env", "SLUICE_MAX_ATTEMPTS=2",
			"--env", "SLUICE_ATTEMPTS_TABLE="+table, "--env", "AWS_ENDPOINT_URL_DYNAMODB="+db.Endpoint,
			"--env", "AWS_REGION="+servers.Region, "--env", "AWS_ACCESS_KEY_ID="+servers.AccessKeyID,
			"--env", "AWS_SECRET_ACCESS_KEY="+servers.SecretAccessKey, "--env", "AWS_CONFIG_FILE="+os.DevNull,
			"--env", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
		if code != 1 || !strings.Contains(lastLine(errs), "partial: 1 item reported: "+b.Event().Records[1].Kinesis.SequenceNumber) {
			t.Fatalf("%s: exit %d, %s\n%s\n%s", shard, code, lastLine(errs), out, errs)
		}
	}
	if envs := readEnvelopes(t, dlqFile); len(envs) != 0 {
		t.Fatalf("%d records quarantined, want none: the shards' records were counted as one (%s, attempts %d)", len(envs), envs[0].EventID, envs[0].Attempts)
	}
}

// effectOrder is the conformance function's effects, per ordering key in
// the order they happened: "key:id,id key:id".
func effectOrder(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]string{}
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct{ ID, Key string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("effects line %q: %v", line, err)
		}
		if per[e.Key] == nil {
			keys = append(keys, e.Key)
		}
		per[e.Key] = append(per[e.Key], e.ID)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, k+":"+strings.Join(per[k], ","))
	}
	return strings.Join(out, " ")
}
