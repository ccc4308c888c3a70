package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

// samApp writes a SAM template into a directory with sam build's layout
// (.aws-sam/build/<Id>/bootstrap, the conformance function for each id),
// makes it the working directory (on-failure files land there) and
// returns it.
func samApp(t *testing.T, template string, ids ...string) string {
	t.Helper()
	bin := conformance(t)
	dir := t.TempDir()
	write(t, dir, "template.yaml", template)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		p := filepath.Join(dir, ".aws-sam", "build", id, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return dir
}

func readTrace(t *testing.T, path string) []localtest.TraceEntry {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []localtest.TraceEntry
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e localtest.TraceEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("trace line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// hostArchitecture is this machine's, as a template names it.
func hostArchitecture() string {
	if runtime.GOARCH == "arm64" {
		return "arm64"
	}
	return "x86_64"
}

const samStreamTemplate = `Transform: AWS::Serverless-2016-10-31
Parameters:
  Architecture: {Type: String, Default: x86_64}
Globals:
  Function:
    Timeout: 1
    Architectures: [!Ref Architecture]
    Environment:
      Variables:
        SLUICE_SOURCE: kinesis
Resources:
  Stream:
    Type: AWS::Kinesis::Stream
    Properties: {ShardCount: 1}
  Failures:
    Type: AWS::SQS::Queue
  Consumer:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: consumer/
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        Records:
          Type: Kinesis
          Properties:
            Stream: !GetAtt Stream.Arn
            StartingPosition: TRIM_HORIZON
            BatchSize: 3
            BisectBatchOnFunctionError: true
            MaximumRetryAttempts: 1
            FunctionResponseTypes: [ReportBatchItemFailures]
            FilterCriteria:
              Filters:
                - Pattern: '{"data": {"skip": [{"exists": false}]}}'
            DestinationConfig:
              OnFailure:
                Type: SQS
                Destination: !GetAtt Failures.Arn
`

// TestRunSAMTemplate runs a Kinesis event of a SAM template from sam
// build's layout, and its trace shows the template's settings at work:
// batches of at most 3, a bisection, retries, the on-failure records, the
// filtered record, and the Globals timeout (1 s) cutting short a record
// that sleeps 1.5 s.
func TestRunSAMTemplate(t *testing.T) {
	dir := samApp(t, samStreamTemplate, "Consumer")
	var lines []string
	for i := 0; i < 10; i++ {
		body, expect := fmt.Sprintf(`{"id":"r%d","action":"ok"}`, i), ""
		switch i {
		case 3:
			body, expect = `{"id":"r3","action":"fail"}`, `,"expect":"on-failure"`
		case 5:
			body, expect = `{"id":"r5","action":"ok","skip":true}`, `,"expect":"filtered"`
		case 8:
			body, expect = `{"id":"r8","action":"sleep:1500"}`, `,"expect":"on-failure"`
		}
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"k%d","data":%s%s}`, i%2, body, expect))
	}
	write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	code, out, errs := runCLI(t, "run", "--template", "template.yaml", "--mapping", "Consumer", "--records", "records.jsonl",
		"--parameter-overrides", "Architecture="+hostArchitecture(), "--effects", "effects.jsonl", "--trace", "trace.jsonl", "--report", "report.json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"line 4 (id r3): on-failure", "filtered 1", "line 9 (id r8): on-failure", "PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "on-failure records, which AWS sends to Failures, go to file://Failures.onfailure.jsonl") {
		t.Errorf("stderr lacks the on-failure note:\n%s", errs)
	}
	var bisected, retried, timedOut bool
	for _, e := range readTrace(t, "trace.jsonl") {
		if len(e.IDs) > 3 {
			t.Errorf("invocation #%d: %d records, BatchSize is 3", e.N, len(e.IDs))
		}
		bisected = bisected || e.Bisect
		retried = retried || e.Retry > 0
		// The handler stops r8's sleep at the deadline the Globals timeout
		// (1 s) sets; with Lambda's default (3 s) it would finish.
		timedOut = timedOut || strings.Contains(e.ErrorMessage, "record r8: sleep interrupted: context deadline exceeded")
	}
	if !bisected || !retried || !timedOut {
		t.Errorf("trace: bisected %v, retried %v, timed out %v", bisected, retried, timedOut)
	}
	rep := readReport(t, "report.json")
	if len(rep.OnFailureRecords) != 2 || rep.Totals.Filtered != 1 || rep.Totals.Processed != 7 {
		t.Errorf("report: %d on-failure records, totals %+v", len(rep.OnFailureRecords), rep.Totals)
	}
	onFailure, err := os.ReadFile(filepath.Join(dir, "Failures.onfailure.jsonl"))
	if err != nil || strings.Count(string(onFailure), "RetryAttemptsExhausted") != 2 {
		t.Fatalf("on-failure file: %v\n%s", err, onFailure)
	}
}

// TestRunSAMTemplateRefusals: a template that cannot be read as it
// deploys, or a function sam build has not built, is a usage error (exit
// 2) naming the resource, the property and what to do.
func TestRunSAMTemplateRefusals(t *testing.T) {
	samApp(t, samStreamTemplate, "Consumer")
	cases := []struct {
		name     string
		template string
		args     []string
		want     []string
	}{
		{"misspelt property", strings.Replace(samStreamTemplate, "BatchSize: 3", "BatchSise: 3", 1), nil,
			[]string{"template.yaml: template: line 29: resource Consumer, Events.Records.Properties.BatchSise: SAM refuses it: property BatchSise not defined for resource of type Kinesis"}},
		{"import", strings.Replace(samStreamTemplate, "!GetAtt Stream.Arn", "!ImportValue orders-stream", 1), nil,
			[]string{"resource Consumer, Events.Records.Properties.Stream: Fn::ImportValue \"orders-stream\"", "pass --parameter-overrides NAME=VALUE"}},
		{"unknown override", samStreamTemplate, []string{"--parameter-overrides", "Arch=arm64"},
			[]string{"--parameter-overrides Arch: the template has no parameter Arch (its parameters: Architecture)"}},
		{"bad override", samStreamTemplate, []string{"--parameter-overrides", "just-words"},
			[]string{`--parameter-overrides "just-words" is not a valid format`}},
		{"not built", strings.ReplaceAll(samStreamTemplate, "Consumer:", "Producer:"), nil,
			[]string{"no --handler, and sam build's output for Producer is not there", "run sam build, or pass --handler"}},
		{"another architecture", samStreamTemplate, []string{"--parameter-overrides", "Architecture=" + map[string]string{"x86_64": "arm64", "arm64": "x86_64"}[hostArchitecture()]},
			[]string{"but the template deploys the function on", "run sam build again"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write(t, ".", "template.yaml", c.template)
			mapping := "Consumer"
			if c.name == "not built" {
				mapping = "Producer"
			}
			args := append([]string{"run", "--template", "template.yaml", "--mapping", mapping, "--records", "unused.jsonl"}, c.args...)
			code, out, errs := runCLI(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

// TestInvokeSAMTemplate invokes a function of a SAM template as sam local
// invoke does: its environment (the conformance function refuses to start
// without SLUICE_SOURCE, which only the template gives) and its Globals
// timeout, whose deadline cuts short a record that sleeps past it.
func TestInvokeSAMTemplate(t *testing.T) {
	tmpl := strings.Replace(samStreamTemplate, "SLUICE_SOURCE: kinesis", "SLUICE_SOURCE: sqs", 1)
	dir := samApp(t, tmpl, "Consumer")
	event := func(action string) string {
		return write(t, dir, action+".json", fmt.Sprintf(`{"Records":[{"messageId":"m1","receiptHandle":"h","body":"{\"id\":\"a\",\"action\":\"%s\"}",
			"attributes":{"ApproximateReceiveCount":"1"},"messageAttributes":{},"eventSource":"aws:sqs",
			"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:q","awsRegion":"us-east-1"}]}`, action))
	}
	args := func(ev string) []string {
		return []string{"invoke", "--template", "template.yaml", "--function", "Consumer", "--event", ev,
			"--parameter-overrides", "Architecture=" + hostArchitecture()}
	}
	code, out, errs := runCLI(t, args(event("ok"))...)
	if code != 0 || !strings.Contains(errs, "SQS event, 1 record") || !strings.Contains(errs, ": success") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, args(event("sleep:1500"))...)
	// The handler cuts the sleep short at the deadline the template's 1 s
	// sets (Lambda's default, 3 s, would let it finish).
	if code != 1 || !strings.Contains(errs, "function error: NoProgressError") || !strings.Contains(errs, "sleep interrupted: context deadline exceeded") {
		t.Fatalf("exit %d, want 1 and the deadline of the template's 1 s\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "invoke", "--template", "template.yaml", "--function", "Nope", "--event", event("ok"))
	if code != 2 || !strings.Contains(errs, `no function is "Nope"; the template's functions: Consumer`) {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// TestRunSAMTemplateEndpoint reads the queue an SQS event names from a
// real server (fauxqs) with --endpoint: the queue is found by the name the
// template gives it.
func TestRunSAMTemplateEndpoint(t *testing.T) {
	srv := servers.SQS(t)
	name := servers.UniqueName(t, "jobs")
	tmpl := fmt.Sprintf(`Transform: AWS::Serverless-2016-10-31
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties: {QueueName: %s}
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: worker/
      Handler: bootstrap
      Runtime: provided.al2023
      Architectures: [%s]
      Timeout: 10
      Environment: {Variables: {SLUICE_SOURCE: sqs}}
      Events:
        Jobs:
          Type: SQS
          Properties:
            Queue: !GetAtt Jobs.Arn
            BatchSize: 2
            FunctionResponseTypes: [ReportBatchItemFailures]
`, name, hostArchitecture())
	samApp(t, tmpl, "Worker")
	client := sqs.NewFromConfig(srv.AWSConfig())
	q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl,
			MessageBody: aws.String(fmt.Sprintf(`{"id":"m%d","action":"ok"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLIEnv(t, []string{"AWS_ACCESS_KEY_ID=" + servers.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + servers.SecretAccessKey},
		"run", "--template", "template.yaml", "--mapping", "Worker", "--endpoint", srv.Endpoint, "--effects", "effects.jsonl", "--report", "report.json")
	if code != 0 || !strings.Contains(out, "sqs mapping: 4 records") || !strings.Contains(out, "processed 4") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if rep := readReport(t, "report.json"); rep.Mapping.QueueURL != aws.ToString(q.QueueUrl) || *rep.Mapping.BatchSize != 2 {
		t.Errorf("mapping %+v", rep.Mapping)
	}
	code, _, errs = runCLI(t, "run", "--template", "template.yaml", "--mapping", "Worker", "--endpoint", "kafka://127.0.0.1:1")
	if code != 1 || !strings.Contains(errs, "a sqs mapping reads an AWS API endpoint") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}
