package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// readEnvelopes reads a dead-letter file.
func readEnvelopes(t *testing.T, path string) []*dlq.Envelope {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*dlq.Envelope
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		e, err := dlq.Unmarshal(sc.Bytes())
		if err != nil {
			t.Fatalf("dead-letter line %.100s: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// receiveEnvelopes drains a queue of envelopes.
func receiveEnvelopes(t *testing.T, client *sqs.Client, url string) []*dlq.Envelope {
	t.Helper()
	var out []*dlq.Envelope
	for {
		res, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			e, err := dlq.Unmarshal([]byte(aws.ToString(m.Body)))
			if err != nil {
				t.Fatalf("message %.100s: %v", aws.ToString(m.Body), err)
			}
			out = append(out, e)
			client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// effectIDs reads the conformance function's effects: the payload ids.
func effectIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct{ ID string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("effects line %q: %v", line, err)
		}
		seen[e.ID]++
	}
	return seen
}

// payloadID digs the conformance payload id out of an envelope's record.
func payloadID(t *testing.T, e *dlq.Envelope) string {
	t.Helper()
	var cmd struct{ ID string }
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(e.Record, &rec); err != nil {
		t.Fatalf("record of %s is not a JSON object: %s", e.RecordID, e.Record)
	}
	var data []byte
	switch e.Source {
	case events.SourceKinesis:
		var k struct{ Data []byte }
		json.Unmarshal(rec["kinesis"], &k)
		data = k.Data
	case events.SourceKafka:
		var v []byte
		json.Unmarshal(rec["value"], &v)
		data = v
	case events.SourceSQS:
		var s string
		json.Unmarshal(rec["body"], &s)
		data = []byte(s)
	case events.SourceDynamoDB:
		var d struct {
			NewImage struct{ Payload struct{ S string } } `json:"NewImage"`
		}
		json.Unmarshal(rec["dynamodb"], &d)
		data = []byte(d.NewImage.Payload.S)
	}
	if err := json.Unmarshal(data, &cmd); err != nil {
		t.Fatalf("payload of %s (%s): %q: %v", e.RecordID, e.Source, data, err)
	}
	return cmd.ID
}

// TestRunQuarantineRoundTrip runs the compiled conformance function under
// `sluice run` for each source with quarantine on: the permanent failures
// and a record that fails twice (SLUICE_MAX_ATTEMPTS=2) go to the
// dead-letter destination (an SQS queue on fauxqs for Kinesis, a file for
// the others) with complete envelopes, and every other record is processed:
// the stream keeps moving.
func TestRunQuarantineRoundTrip(t *testing.T) {
	bin := conformance(t)
	const n = 30
	poison := map[int]string{7: "permanent", 12: "fail", 19: "permanent"}
	line := func(source events.Source, i int) string {
		action, expect := "ok", ""
		if a, ok := poison[i]; ok {
			action, expect = a, `,"expect":"quarantined"`
		}
		cmd := fmt.Sprintf(`{"id":"r%d","action":%q}`, i, action)
		switch source {
		case "kinesis":
			return fmt.Sprintf(`{"partitionKey":"pk-%d","data":%s%s}`, i%3, cmd, expect)
		case "dynamodb":
			return fmt.Sprintf(`{"keys":{"pk":"k%d"},"newImage":{"pk":"k%d","payload":%q},"eventName":"INSERT"%s}`, i, i, cmd, expect)
		case "kafka":
			return fmt.Sprintf(`{"partition":%d,"value":%s%s}`, i%2, cmd, expect)
		}
		return fmt.Sprintf(`{"body":%s%s}`, cmd, expect)
	}
	for _, tc := range []struct {
		source  events.Source
		mapping string
	}{
		{"kinesis", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":10,"BisectBatchOnFunctionError":true,
			"MaximumRetryAttempts":5,"FunctionResponseTypes":["ReportBatchItemFailures"]}`},
		{"dynamodb", `{"EventSource":"dynamodb","StartingPosition":"TRIM_HORIZON","BatchSize":10,"BisectBatchOnFunctionError":true,
			"MaximumRetryAttempts":5,"FunctionResponseTypes":["ReportBatchItemFailures"]}`},
		{"sqs", `{"EventSource":"sqs","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"]}`},
		{"kafka", `{"EventSource":"kafka","Mode":"provisioned","Partitions":2,"StartingPosition":"TRIM_HORIZON","BatchSize":10,
			"MaximumRetryAttempts":5,"FunctionResponseTypes":["ReportBatchItemFailures"]}`},
	} {
		t.Run(string(tc.source), func(t *testing.T) {
			dir := t.TempDir()
			var lines []string
			for i := range n {
				lines = append(lines, line(tc.source, i))
			}
			records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
			mapping := write(t, dir, "mapping.json", tc.mapping)
			effects, dlqFile := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "dlq.jsonl")
			args := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "10s",
				"--function-name", "orders", "--env", "SLUICE_SOURCE=" + string(tc.source), "--effects", effects,
				"--env", "SLUICE_MAX_ATTEMPTS=2"}
			var client *sqs.Client
			var queueURL string
			if tc.source == "kinesis" {
				srv := servers.SQS(t)
				client = sqs.NewFromConfig(srv.AWSConfig())
				q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
				if err != nil {
					t.Fatal(err)
				}
				queueURL = aws.ToString(q.QueueUrl)
				args = append(args, "--env", "SLUICE_DLQ_URL="+queueURL, "--env", "AWS_ENDPOINT_URL_SQS="+srv.Endpoint,
					"--env", "AWS_REGION="+servers.Region, "--env", "AWS_ACCESS_KEY_ID="+servers.AccessKeyID,
					"--env", "AWS_SECRET_ACCESS_KEY="+servers.SecretAccessKey, "--env", "AWS_CONFIG_FILE="+os.DevNull,
					"--env", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
			} else {
				args = append(args, "--env", "SLUICE_DLQ_FILE="+dlqFile)
			}
			code, out, errs := runCLI(t, args...)
			// The runner reads the dead letters it gave the function: the
			// poison records are quarantined, as expected, not "processed"
			// with an effect that never happened.
			if code != 0 || !strings.Contains(out, "invariant no-record-lost: held") || !strings.Contains(out, "invariant fate-as-expected: held") ||
				!strings.Contains(out, fmt.Sprintf("processed %d", n-len(poison))) || !strings.Contains(out, fmt.Sprintf("quarantined %d", len(poison))) {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			var envs []*dlq.Envelope
			if client != nil {
				envs = receiveEnvelopes(t, client, queueURL)
			} else {
				envs = readEnvelopes(t, dlqFile)
			}
			got := map[string]*dlq.Envelope{}
			for _, e := range envs {
				id := payloadID(t, e)
				if got[id] != nil {
					t.Errorf("record %s quarantined twice", id)
				}
				got[id] = e
			}
			if len(got) != len(poison) {
				t.Fatalf("quarantined %d records, want %d", len(got), len(poison))
			}
			for i, action := range poison {
				e := got[fmt.Sprintf("r%d", i)]
				if e == nil {
					t.Fatalf("record r%d (%s) is not in the dead-letter destination", i, action)
				}
				reason, attempts := dlq.ReasonPermanent, 1
				if action == "fail" {
					reason, attempts = dlq.ReasonAttempts, 2
				}
				if e.Reason != reason || e.Attempts != attempts || e.SourceARN == "" && tc.source != "kafka" || e.RecordID == "" ||
					e.EventID == "" || e.Error == "" || e.FunctionName != "orders" || e.RequestID == "" || e.LastFailure.IsZero() {
					t.Errorf("envelope of r%d: %+v", i, e)
				}
			}
			seen := effectIDs(t, effects)
			for i := range n {
				id := fmt.Sprintf("r%d", i)
				if _, bad := poison[i]; bad != (seen[id] == 0) {
					t.Errorf("record %s: %d effects", id, seen[id])
				}
			}
		})
	}
}

// TestRunQuarantineCrash: a record that makes the function exit mid-batch,
// on a Kinesis mapping with BisectBatchOnFunctionError, is isolated by the
// bisection, counted in the attempts table on DynamoDB Local across the
// restarts, and quarantined without running (reason "crash") with its
// attempts; every other record is processed.
func TestRunQuarantineCrash(t *testing.T) {
	bin := conformance(t)
	db := servers.DynamoDB(t)
	table := servers.UniqueName(t, "attempts")
	if code, out, errs := runCLIEnv(t, awsEnv(db), "tables", "create", "--attempts", table); code != 0 || !strings.Contains(out, "attempts table "+table+" is ready") {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	dir := t.TempDir()
	const n, crash = 40, 23
	var lines []string
	for i := range n {
		action := "ok"
		if i == crash {
			action = "exit"
		}
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"pk-%d","data":{"id":"r%d","action":%q}}`, i%4, i, action))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":16,
		"BisectBatchOnFunctionError":true,"MaximumRetryAttempts":10,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	effects, dlqFile := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "dlq.jsonl")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "10s",
		"--function-name", "crashfn", "--expect", fmt.Sprintf("%d=quarantined", crash+1), "--effects", effects,
		"--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_DLQ_FILE="+dlqFile,
		"--env", "SLUICE_MAX_ATTEMPTS=2", "--env", "SLUICE_ATTEMPTS_TABLE="+table)
	if code != 0 || !strings.Contains(out, "invariant no-record-lost: held") || !strings.Contains(out, "quarantined 1") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "bisect") {
		t.Fatalf("the run shows no bisection: did the record crash the function?\n%s", out)
	}
	envs := readEnvelopes(t, dlqFile)
	if len(envs) != 1 {
		t.Fatalf("%d envelopes, want 1:\n%s", len(envs), out)
	}
	e := envs[0]
	if payloadID(t, e) != fmt.Sprintf("r%d", crash) || e.Reason != dlq.ReasonCrash || e.Class != dlq.ClassCrash || e.Attempts != 2 ||
		!strings.Contains(e.Error, "crashed") || e.Shard == "" || e.SequenceNumber == "" {
		t.Fatalf("crash envelope %+v", e)
	}
	seen := effectIDs(t, effects)
	for i := range n {
		if id := fmt.Sprintf("r%d", i); (i == crash) != (seen[id] == 0) {
			t.Errorf("record %s: %d effects", id, seen[id])
		}
	}

	// The fix is deployed (CONFORMANCE_FIXED=exit) and the record redriven
	// into the same function, attempts table included: redrive resets the
	// record's count first, so it runs instead of being blamed again.
	again := filepath.Join(dir, "dlq-again.jsonl")
	code, out, errs = runCLIEnv(t, awsEnv(db), "redrive", "--from-file", dlqFile, "--handler", bin, "--function-name", "crashfn", "--quiet",
		"--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_EFFECTS_FILE="+effects, "--env", "SLUICE_DLQ_FILE="+again,
		"--env", "SLUICE_MAX_ATTEMPTS=2", "--env", "SLUICE_ATTEMPTS_TABLE="+table, "--env", "CONFORMANCE_FIXED=exit")
	if code != 0 || !strings.Contains(out, "replayed 1 (removed)") {
		t.Fatalf("redrive: exit %d\n%s\n%s", code, out, errs)
	}
	if got := effectIDs(t, effects)[fmt.Sprintf("r%d", crash)]; got != 1 {
		t.Fatalf("the redriven record has %d effects, want 1", got)
	}
	if b, err := os.ReadFile(again); err == nil && len(b) > 0 {
		t.Fatalf("the redriven record was quarantined again:\n%s", b)
	}
}
