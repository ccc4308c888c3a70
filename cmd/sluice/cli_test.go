package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/internal/rie"
	"github.com/sluicehq/sluice/internal/servers"
	"github.com/sluicehq/sluice/localtest"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func conformance(t *testing.T) string {
	return rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunKinesisFile(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":5,
		"BisectBatchOnFunctionError":true,"MaximumRetryAttempts":1,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"DestinationConfig":{"OnFailure":{"Destination":"file://`+filepath.Join(dir, "dlq.jsonl")+`"}}}`)
	var lines []string
	for i := 0; i < 20; i++ {
		action := "ok"
		if i == 7 {
			action = "fail"
		}
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"pk-%d","data":{"id":"r%d","action":%q}}`, i%3, i, action))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	trace, report, effects := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "report.json"), filepath.Join(dir, "effects.jsonl")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin,
		"--trace", trace, "--report", report, "--effects", effects, "--env", "SLUICE_SOURCE=kinesis", "--timeout", "10s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"kinesis mapping: 20 records", "invariant no-record-lost: held", "invariant order-per-key: held", `"condition":"RetryAttemptsExhausted"`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	var rep localtest.Report
	raw, _ := os.ReadFile(report)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Records != 20 || rep.Totals.OnFailure != 1 || rep.Totals.Processed != 19 || len(rep.OnFailureRecords) != 1 {
		t.Fatalf("report totals %+v", rep.Totals)
	}
	tr, _ := os.ReadFile(trace)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(tr)), "\n") {
		var e localtest.TraceEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.N != n+1 || e.Shard == "" || len(e.IDs) == 0 || e.Result == "" {
			t.Fatalf("trace line %q: %v", line, err)
		}
		n++
	}
	if n != rep.Totals.Invocations {
		t.Fatalf("%d trace lines for %d invocations", n, rep.Totals.Invocations)
	}
	dlq, _ := os.ReadFile(filepath.Join(dir, "dlq.jsonl"))
	if !strings.Contains(string(dlq), `"KinesisBatchInfo"`) {
		t.Fatalf("destination file: %s", dlq)
	}
}

func TestRunReportsLossWhenReportBatchItemFailuresIsOff(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":10}`)
	records := write(t, dir, "records.jsonl", `{"body":{"id":"a","action":"ok"}}
{"body":{"id":"b","action":"fail"}}
`)
	code, out, _ := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs")
	if code != 1 || !strings.Contains(out, "invariant no-record-lost: VIOLATED") || !strings.Contains(out, "payload b") {
		t.Fatalf("exit %d, want 1 and the lost record named:\n%s", code, out)
	}
}

func TestRunRejectsInvalidMapping(t *testing.T) {
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","MaximumRecordAgeInSeconds":30}`)
	code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", write(t, dir, "r.jsonl", ""), "--handler", "/bin/true")
	if code != 1 || !strings.Contains(errs, "MaximumRecordAgeInSeconds") || !strings.Contains(errs, "AWS would reject") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, _, _ := runCLI(t, "run", "--mapping", mapping); code != 2 {
		t.Fatalf("missing --handler: exit %d", code)
	}
	if code, _, _ := runCLI(t, "bogus"); code != 2 {
		t.Fatal("unknown command must be a usage error")
	}
	if _, err := parseFaults("error=2"); err == nil {
		t.Fatal("a rate above 1 must be rejected")
	}
	if f, err := parseFaults("error=0.1,crash=0.2,timeout=0.3,duplicate=0.4"); err != nil || f.DuplicateRate != 0.4 || f.CrashRate != 0.2 {
		t.Fatalf("%+v %v", f, err)
	}
}

// TestRunSQSEndpoint reads a real SQS queue (fauxqs) with a redrive policy.
func TestRunSQSEndpoint(t *testing.T) {
	bin := conformance(t)
	srv := servers.SQS(t)
	ctx := context.Background()
	client := sqs.NewFromConfig(srv.AWSConfig())
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "q")), Attributes: map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"maxReceiveCount":"2","deadLetterTargetArn":%q}`, attrs.Attributes["QueueArn"]),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, action := range []string{"ok", "fail", "ok", "transient:1"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprintf(`{"id":"m%d","action":%q}`, i, action))}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"sqs","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"Endpoint":%q,"QueueUrl":%q}`, srv.Endpoint, *q.QueueUrl))
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "5s",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "processed 3") || !strings.Contains(out, "dead-lettered 1") {
		t.Fatalf("want 3 processed and the failing message in the DLQ:\n%s", out)
	}
}

// TestRunKinesisEndpoint reads a real Kinesis stream (kinesalite).
func TestRunKinesisEndpoint(t *testing.T) {
	bin := conformance(t)
	srv := servers.Kinesis(t)
	ctx := context.Background()
	client := kinesis.NewFromConfig(srv.AWSConfig())
	name := servers.UniqueName(t, "orders")
	if _, err := client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && d.StreamDescriptionSummary.StreamStatus == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not active: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 30; i++ {
		data := fmt.Sprintf(`{"id":"k%d","action":"ok"}`, i)
		if _, err := client.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(name), PartitionKey: aws.String(fmt.Sprint("pk", i%4)), Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":7,
		"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":%q,"StreamName":%q}`, srv.Endpoint, name))
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "5s",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=kinesis")
	if code != 0 || !strings.Contains(out, "30 records") || !strings.Contains(out, "processed 30") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
