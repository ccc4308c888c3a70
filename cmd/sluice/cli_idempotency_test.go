package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// awsEnv points the standard AWS environment at srv.
func awsEnv(srv *servers.Server) []string { return awsEnvAt("AWS_ENDPOINT_URL_DYNAMODB", srv) }

// awsEnvAt is the CLI's AWS environment with srv's endpoint in variable
// (AWS_ENDPOINT_URL_KINESIS, ...) and the test servers' credentials.
func awsEnvAt(variable string, srv *servers.Server) []string {
	return []string{
		variable + "=" + srv.Endpoint,
		"AWS_REGION=" + servers.Region,
		"AWS_ACCESS_KEY_ID=" + servers.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + servers.SecretAccessKey,
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

func TestTablesCreateIdempotency(t *testing.T) {
	srv := servers.DynamoDB(t)
	table := servers.UniqueName(t, "idem")
	for run := range 2 { // the second run finds the table and succeeds
		code, out, errs := runCLIEnv(t, awsEnv(srv), "tables", "create", "--idempotency", table)
		if code != 0 || !strings.Contains(out, table+" is ready") {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, out, errs)
		}
	}
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	ttl, err := db.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != ddbtypes.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "expiration" {
		t.Fatalf("TTL %+v", d)
	}
	for _, args := range [][]string{{"tables"}, {"tables", "drop"}, {"tables", "create"}, {"tables", "create", "--idempotency", table, "extra"}} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestConformanceIdempotentAcrossRuns runs the compiled conformance function
// twice over the same SQS batch with idempotency on (DynamoDB Local): every
// effect happens exactly once across both runs, the second run skips every
// completed message, and a failing message is reported both times (its claim
// is released, so the second run tries it again) and has no effect.
func TestConformanceIdempotentAcrossRuns(t *testing.T) {
	bin := conformance(t)
	srv := servers.DynamoDB(t)
	table := servers.UniqueName(t, "idem")
	if code, out, errs := runCLIEnv(t, awsEnv(srv), "tables", "create", "--idempotency", table); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	b := &sevents.SQSBuilder{}
	const n = 60
	for i := range n {
		action := "ok"
		switch {
		case i == 17:
			action = "fail"
		case i%10 == 3:
			action = "transient:1" // retried in process, inside its claim
		}
		b.Add(fmt.Sprintf(`{"id":"m%d","action":%q}`, i, action))
	}
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	effects := filepath.Join(t.TempDir(), "effects.jsonl")
	env := append(awsEnv(srv), "SLUICE_SOURCE=sqs", "SLUICE_EFFECTS_FILE="+effects, "SLUICE_RETRY_BACKOFF=1ms",
		"SLUICE_IDEMPOTENCY_TABLE="+table, "AWS_LAMBDA_FUNCTION_NAME=conformance")
	for run := range 2 {
		// A fresh process each run, as a redelivery may land on a new
		// execution environment: nothing is remembered in memory.
		inv, err := invoke.RuntimeAPI(bin, env)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := inv.Invoke(context.Background(), invocation.Invocation{Payload: raw, Timeout: 30 * time.Second, N: 1})
		inv.Close()
		if err != nil || resp.Failed() {
			t.Fatalf("run %d: %v %+v", run, err, resp)
		}
		var out struct {
			BatchItemFailures []struct{ ItemIdentifier string }
		}
		if err := json.Unmarshal(resp.Payload, &out); err != nil {
			t.Fatalf("run %d: %s: %v", run, resp.Payload, err)
		}
		if len(out.BatchItemFailures) != 1 || out.BatchItemFailures[0].ItemIdentifier != ev.Records[17].MessageId {
			t.Fatalf("run %d: reported %s, want only message 17 (%s)", run, resp.Payload, ev.Records[17].MessageId)
		}
	}
	data, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct{ Record, ID string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("effects line %q: %v", line, err)
		}
		seen[e.Record]++
	}
	var twice, missing []string
	for i, r := range ev.Records {
		switch c := seen[r.MessageId]; {
		case i == 17 && c != 0:
			t.Errorf("failing message 17 has %d effects", c)
		case i != 17 && c == 0:
			missing = append(missing, r.MessageId)
		case c > 1:
			twice = append(twice, r.MessageId)
		}
	}
	if len(twice) > 0 || len(missing) > 0 || len(seen) != n-1 {
		t.Fatalf("effects: %d distinct; twice %v; missing %v", len(seen), twice, missing)
	}
}

// runCLIEnv runs the CLI with env set in the process environment for the
// duration of the call (the test must not be parallel).
func runCLIEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return runCLI(t, args...)
}

// sluice run checks effect-once when asked, or by itself when the function
// has idempotency on: duplicate deliveries of every successful batch break
// it without idempotency and cannot break it with idempotency on.
func TestRunExactlyOnce(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 20 {
		fmt.Fprintf(&lines, `{"body":{"id":"m%d","action":"ok"}}`+"\n", i)
	}
	records := write(t, dir, "records.jsonl", lines.String())
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":5,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	base := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--faults", "duplicate=1",
		"--env", "SLUICE_SOURCE=sqs"}

	t.Run("without idempotency", func(t *testing.T) {
		code, out, errs := runCLI(t, append(base, "--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--exactly-once")...)
		if code != 1 || !strings.Contains(out, "invariant effect-once: VIOLATED") || !strings.Contains(out, "took effect 2 times") {
			t.Fatalf("exit %d, want 1 with effect-once violated:\n%s\n%s", code, out, errs)
		}
	})
	t.Run("needs effects", func(t *testing.T) {
		if code, _, errs := runCLI(t, append(base, "--exactly-once")...); code != 2 || !strings.Contains(errs, "--exactly-once goes with --effects") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	t.Run("with idempotency", func(t *testing.T) {
		srv := servers.DynamoDB(t)
		table := servers.UniqueName(t, "once")
		if code, out, errs := runCLIEnv(t, awsEnv(srv), "tables", "create", "--idempotency", table); code != 0 {
			t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
		}
		args := append(base, "--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_IDEMPOTENCY_TABLE="+table)
		for _, kv := range awsEnv(srv) {
			args = append(args, "--env", kv)
		}
		code, out, errs := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "invariant effect-once: held") || !strings.Contains(out, "duplicates 4") {
			t.Fatalf("exit %d, want 0 with effect-once held after 4 duplicate deliveries:\n%s\n%s", code, out, errs)
		}
	})
}
