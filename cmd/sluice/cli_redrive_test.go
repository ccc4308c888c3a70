package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func TestRedriveUsage(t *testing.T) {
	dir := t.TempDir()
	f := write(t, dir, "dlq.jsonl", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"redrive", "--handler", "x"}, "name one of --from-queue and --from-file"},
		{"two sources", []string{"redrive", "--from-file", f, "--from-queue", "http://q", "--handler", "x"}, "name one of"},
		{"no handler", []string{"redrive", "--from-file", f}, "--handler is required (or --dry-run)"},
		{"bad rate", []string{"redrive", "--from-file", f, "--dry-run", "--rate", "fast"}, `--rate "fast"`},
		{"bad rate unit", []string{"redrive", "--from-file", f, "--dry-run", "--rate", "5/h"}, "the unit is /s or /m"},
		{"batch size", []string{"redrive", "--from-file", f, "--dry-run", "--batch-size", "0"}, "--batch-size 0"},
		{"quarantines into the file", []string{"redrive", "--from-file", f, "--handler", "x", "--env", "SLUICE_DLQ_FILE=" + f}, "the file being redriven"},
		{"unknown flag", []string{"redrive", "--from-file", f, "--bogus"}, "flag provided but not defined"},
		{"fetch: no output", []string{"fetch-failed", "--from-file", f}, "name one of --to-file and --to-queue"},
		{"fetch: same file", []string{"fetch-failed", "--from-file", f, "--to-file", f}, "the same file"},
		{"fetch: no input", []string{"fetch-failed", "--to-file", f}, "name one of --from-queue, --from-file, --from-bucket and --from-dir"},
		{"fetch: two inputs", []string{"fetch-failed", "--from-file", f, "--from-dir", dir, "--to-file", f + ".out"}, "name one of --from-queue"},
		{"fetch: not a bucket", []string{"fetch-failed", "--from-bucket", "https://b", "--to-file", f}, `--from-bucket: "https://b": want s3://BUCKET[/PREFIX]`},
		{"fetch: no bucket", []string{"fetch-failed", "--from-bucket", "s3:///x", "--to-file", f}, "names no bucket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(t, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, tt.want, errs)
			}
		})
	}
	if rate, err := parseRate("30/m"); err != nil || rate != 0.5 {
		t.Errorf("parseRate(30/m) = %v, %v", rate, err)
	}
	for in, want := range map[string]string{"orders": "orders", "arn:aws:lambda:eu-west-1:123456789012:function:orders": "orders",
		"arn:aws:lambda:eu-west-1:123456789012:function:orders:live": "orders"} {
		if got := functionOfARN(in); got != want {
			t.Errorf("functionOfARN(%s) = %s, want %s", in, got, want)
		}
	}
}

// sqsEnvelopes writes envelopes for an SQS event of the conformance
// function's payloads to a file.
func sqsEnvelopes(t *testing.T, dir string, actions ...string) (string, []string) {
	b := &sevents.SQSBuilder{}
	for i, a := range actions {
		b.Add(fmt.Sprintf(`{"id":"m%d","action":%q}`, i, a))
	}
	var lines strings.Builder
	var ids []string
	for _, m := range b.Event().Records {
		raw, err := sevents.MarshalSQSMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		e := dlq.Envelope{Version: dlq.Version, Source: sevents.SourceSQS, SourceARN: m.EventSourceARN, RecordID: m.MessageId, EventID: m.MessageId,
			Attempts: 3, Error: "boom", Class: "plain", Reason: "attempts", Record: raw}
		line, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(append(line, '\n'))
		ids = append(ids, m.MessageId)
	}
	return write(t, dir, "dlq.jsonl", lines.String()), ids
}

func TestRedriveDryRunAndLeft(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	path, ids := sqsEnvelopes(t, dir, "ok", "fail", "ok")
	before, _ := os.ReadFile(path)

	code, out, errs := runCLI(t, "redrive", "--from-file", path, "--dry-run", "--batch-size", "2")
	if code != 0 || !strings.Contains(out, "would send 2 events with 3 records") || !strings.Contains(out, `{"Records":[{"messageId":"`+ids[0]) {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the dry run changed the file")
	}

	// The failing record stays, and the exit status says so.
	code, out, errs = runCLI(t, "redrive", "--from-file", path, "--handler", bin, "--quiet", "--env", "SLUICE_SOURCE=sqs")
	if code != 1 || !strings.Contains(out, "replayed 2 (removed)  left 1: failed 1") || !strings.Contains(out, "record "+ids[1]) {
		t.Fatalf("exit %d, want 1 with one left:\n%s\n%s", code, out, errs)
	}
	after, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSpace(string(after)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], ids[1]) {
		t.Fatalf("file after the redrive:\n%s", after)
	}
}

// effectsByID counts the conformance function's effects per payload id.
func effectsByID(t *testing.T, paths ...string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if l == "" {
				continue
			}
			var e struct{ ID string }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("effects line %q: %v", l, err)
			}
			n[e.ID]++
		}
	}
	return n
}

// The round trip: sluice run over a real Kinesis stream (kinesalite) gives
// up on a batch whose record outlives the function's timeout and writes
// Lambda's on-failure record; fetch-failed reads the batch's records back
// as envelopes; redrive, with a longer timeout, replays them into the
// conformance function with idempotency on (DynamoDB Local). Every record
// takes effect exactly once across the run and the redrive, and a second
// redrive of the same envelopes repeats no effect.
func TestRedriveRoundTrip(t *testing.T) {
	bin := conformance(t)
	kin := servers.Kinesis(t)
	ddb := servers.DynamoDB(t)
	env := append(awsEnv(ddb), "AWS_ENDPOINT_URL_KINESIS="+kin.Endpoint)
	table := createIdempotencyTable(t, env)

	client := kinesis.NewFromConfig(kin.AWSConfig())
	name := kinesisStream(t, client, 1)
	const n = 6
	for i := range n {
		action := "ok"
		if i == 2 {
			action = "sleep:4000" // outlives --timeout 1s in the run
		}
		putKinesis(t, client, name, fmt.Sprintf(`{"id":"k%d","action":%q}`, i, action))
	}
	dir := t.TempDir()
	onFailure := filepath.Join(dir, "onfailure.jsonl")
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":10,
		"MaximumRetryAttempts":0,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"DestinationConfig":{"OnFailure":{"Destination":"file://%s"}},"Endpoint":%q,"StreamName":%q}`, onFailure, kin.Endpoint, name))
	runEffects := filepath.Join(dir, "run-effects.jsonl")
	code, out, errs := runCLIEnv(t, env, "run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "1s",
		"--effects", runEffects, "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_IDEMPOTENCY_TABLE="+table, "--allow", "on-failure")
	if code != 0 || !strings.Contains(out, `"KinesisBatchInfo"`) {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	if c := effectsByID(t, runEffects); c["k2"] != 0 || len(c) == n {
		t.Fatalf("the run's effects %v: k2 should have timed out", c)
	}

	envelopes := filepath.Join(dir, "envelopes.jsonl")
	code, out, errs = runCLIEnv(t, env, "fetch-failed", "--from-file", onFailure, "--to-file", envelopes, "--quiet")
	if code != 0 || !strings.Contains(out, "0 left") {
		t.Fatalf("fetch-failed: exit %d\n%s\n%s", code, out, errs)
	}
	if data, _ := os.ReadFile(onFailure); strings.TrimSpace(string(data)) != "" {
		t.Errorf("on-failure records left after fetch-failed:\n%s", data)
	}
	saved, err := os.ReadFile(envelopes)
	if err != nil {
		t.Fatal(err)
	}
	nEnv := strings.Count(string(saved), "\n")
	again := write(t, dir, "envelopes-again.jsonl", string(saved))

	redriveEffects := filepath.Join(dir, "redrive-effects.jsonl")
	redriveArgs := []string{"--handler", bin, "--quiet", "--timeout", "10s", "--env", "SLUICE_SOURCE=kinesis",
		"--env", "SLUICE_IDEMPOTENCY_TABLE=" + table, "--env", "SLUICE_EFFECTS_FILE=" + redriveEffects}
	code, out, errs = runCLIEnv(t, env, append([]string{"redrive", "--from-file", envelopes, "--batch-size", "10"}, redriveArgs...)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("replayed %d (removed)  left 0", nEnv)) {
		t.Fatalf("redrive: exit %d\n%s\n%s", code, out, errs)
	}
	want := map[string]int{}
	for i := range n {
		want[fmt.Sprint("k", i)] = 1
	}
	if got := effectsByID(t, runEffects, redriveEffects); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("effects after the redrive: %v, want each once", got)
	}

	// The same envelopes again: each record is a duplicate, no effect.
	code, out, errs = runCLIEnv(t, env, append([]string{"redrive", "--from-file", again}, redriveArgs...)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("replayed %d (removed)", nEnv)) {
		t.Fatalf("second redrive: exit %d\n%s\n%s", code, out, errs)
	}
	if got := effectsByID(t, runEffects, redriveEffects); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("effects after a second redrive: %v, want each once", got)
	}
}

// sqsRecordEnvelope is one SQS message of the conformance function's
// payload, as an event file and as the envelope of function fn.
func sqsRecordEnvelope(t *testing.T, dir, fn, id, action string) (event, envelope string) {
	t.Helper()
	b := &sevents.SQSBuilder{}
	b.Add(fmt.Sprintf(`{"id":%q,"action":%q}`, id, action))
	ev := b.Event()
	m := ev.Records[0]
	raw, err := sevents.MarshalSQSMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	e := dlq.Envelope{Version: dlq.Version, Source: sevents.SourceSQS, SourceARN: m.EventSourceARN, RecordID: m.MessageId, EventID: m.MessageId,
		Attempts: 3, Error: "boom", Class: "plain", Reason: "attempts", FunctionName: fn, Record: raw}
	line, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return prettyEvent(t, dir, id+"-event.json", ev), write(t, dir, id+"-dlq.jsonl", string(line)+"\n")
}

// A redrive runs the record as the function that quarantined it: the
// default idempotency key holds the function's name, so a record whose
// effect completed in function payments is a duplicate when redriven
// (before, the redrive ran as "function" and charged again). Another
// function named with --function-name is refused, the envelope left,
// unless --force.
func TestRedriveTakesTheEnvelopesFunction(t *testing.T) {
	bin := conformance(t)
	ddb := servers.DynamoDB(t)
	table := servers.UniqueName(t, "idem")
	env := awsEnv(ddb)
	if code, out, errs := runCLIEnv(t, env, "tables", "create", "--idempotency", table); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	fenv := []string{"--env", "SLUICE_SOURCE=sqs", "--env", "SLUICE_IDEMPOTENCY_TABLE=" + table, "--env", "SLUICE_EFFECTS_FILE=" + effects}
	for _, kv := range env {
		fenv = append(fenv, "--env", kv)
	}
	event, envelope := sqsRecordEnvelope(t, dir, "payments", "charge-1", "ok")
	if code, out, errs := invokeCLI(t, "", append([]string{"--handler", bin, "--event", event, "--function-name", "payments"}, fenv...)...); code != 0 {
		t.Fatalf("invoke: exit %d\n%s\n%s", code, out, errs)
	}
	if n := effectsByID(t, effects)["charge-1"]; n != 1 {
		t.Fatalf("%d effects after the first delivery", n)
	}

	// Another function named: refused, nothing runs, the envelope stays.
	code, out, errs := runCLIEnv(t, env, append([]string{"redrive", "--from-file", envelope, "--handler", bin, "--quiet", "--function-name", "refunds"}, fenv...)...)
	if code != 1 || !strings.Contains(out, "other function 1") || !strings.Contains(out, "quarantined by function payments") ||
		!strings.Contains(out, "--force") || effectsByID(t, effects)["charge-1"] != 1 {
		t.Fatalf("mismatch: exit %d, %d effects\n%s\n%s", code, effectsByID(t, effects)["charge-1"], out, errs)
	}

	// No name given: the envelope's. The record is a duplicate.
	code, out, errs = runCLIEnv(t, env, append([]string{"redrive", "--from-file", envelope, "--handler", bin, "--quiet"}, fenv...)...)
	if code != 0 || !strings.Contains(out, "into function payments") || !strings.Contains(out, "replayed 1 (removed)  left 0") {
		t.Fatalf("redrive: exit %d\n%s\n%s", code, out, errs)
	}
	if n := effectsByID(t, effects)["charge-1"]; n != 1 {
		t.Fatalf("the redrive charged again: %d effects", n)
	}
}

// A redrive whose record fails again and is quarantined again (into the
// function's SLUICE_DLQ_FILE) is not a success: it is counted apart, and
// the exit status is 1 (before: "replayed 1 (removed) left 0", exit 0).
func TestRedriveQuarantinedAgain(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	from, _ := sqsEnvelopes(t, dir, "ok", "permanent")
	next := filepath.Join(dir, "dlq-next.jsonl")
	code, out, errs := runCLI(t, "redrive", "--from-file", from, "--handler", bin, "--quiet",
		"--env", "SLUICE_SOURCE=sqs", "--env", "SLUICE_DLQ_FILE="+next)
	if code != 1 || !strings.Contains(out, "replayed 1 (removed)  left 0") || !strings.Contains(out, "quarantined again 1") {
		t.Fatalf("exit %d, want 1 with one quarantined again:\n%s\n%s", code, out, errs)
	}
	if envs := readEnvelopes(t, next); len(envs) != 1 || payloadID(t, envs[0]) != "m1" || !strings.Contains(out, "record "+envs[0].RecordID) {
		t.Fatalf("the function's dead-letter file: %+v\n%s", envs, out)
	}
}
