package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

// The template infra's tests synthesize from Sluice's constructs.
var templatePath = filepath.Join("..", "..", "localtest", "testdata", "cdk", "sluice.template.json")

// TestRunTemplateNeedsDeployTimeValues: a variable CloudFormation names
// at deploy stops the run, naming the variable and the flag that sets it,
// before any function starts: a usage error (exit 2).
func TestRunTemplateNeedsDeployTimeValues(t *testing.T) {
	code, _, errs := runCLI(t, "run", "--template", templatePath, "--mapping", "sluice-orders", "--records", "unused.jsonl",
		"--handler", "unused-bootstrap", "--env", "SLUICE_DLQ_URL=http://127.0.0.1:1/q")
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, errs)
	}
	for _, want := range []string{"reads variables known only once deployed",
		"SLUICE_ATTEMPTS_TABLE: a Ref to the AWS::DynamoDB::Table", "pass --env SLUICE_ATTEMPTS_TABLE=VALUE",
		"SLUICE_IDEMPOTENCY_TABLE: a Ref to the AWS::DynamoDB::Table"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "SLUICE_DLQ_URL:") {
		t.Errorf("--env SLUICE_DLQ_URL was given but is reported missing:\n%s", errs)
	}
	code, _, errs = runCLI(t, "run", "--template", templatePath, "--mapping", "Nope", "--handler", "unused-bootstrap")
	if code != 2 || !strings.Contains(errs, `no event source mapping is "Nope"`) || !strings.Contains(errs, "named sluice-orders") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// TestRunTemplateFIFO runs the conformance bootstrap on the FIFO mapping
// the constructs synthesize: batch size, visibility timeout, redrive and
// partial responses as deployed.
func TestRunTemplateFIFO(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	var lines []string
	for i := 0; i < 12; i++ {
		action, expect := "ok", ""
		if i == 4 {
			action, expect = "fail", `,"expect":"quarantined"`
		}
		lines = append(lines, fmt.Sprintf(`{"messageGroupId":"g%d","body":{"id":"m%d","action":%q}%s}`, i%2, i, action, expect))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	report := filepath.Join(dir, "report.json")
	// The function's own dead letters (SLUICE_DLQ_URL, which the template
	// resolves at deploy) on the SQS emulator: the runner reads them back.
	srv := servers.SQS(t)
	client := sqs.NewFromConfig(srv.AWSConfig())
	q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	// A FIFO consumer counts its messages' failed runs in an attempts table
	// (SLUICE_ATTEMPTS_TABLE, named at deploy): one on DynamoDB Local.
	db := servers.DynamoDB(t)
	attempts := servers.UniqueName(t, "attempts")
	if code, out, errs := runCLIEnv(t, awsEnv(db), "tables", "create", "--attempts", attempts); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "run", "--template", templatePath, "--mapping", "LedgerFunction155C71ED", "--records", records,
		"--handler", bin, "--report", report, "--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs-fifo",
		"--env", "SLUICE_DLQ_URL="+aws.ToString(q.QueueUrl), "--env", "AWS_ENDPOINT_URL_SQS="+srv.Endpoint,
		"--env", "SLUICE_ATTEMPTS_TABLE="+attempts, "--env", "AWS_ENDPOINT_URL_DYNAMODB="+db.Endpoint,
		"--env", "AWS_REGION="+servers.Region, "--env", "AWS_ACCESS_KEY_ID="+servers.AccessKeyID,
		"--env", "AWS_SECRET_ACCESS_KEY="+servers.SecretAccessKey, "--env", "AWS_CONFIG_FILE="+os.DevNull,
		"--env", "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	// m4 always fails: past the template's SLUICE_MAX_ATTEMPTS the function
	// quarantines it in its dead-letter queue, before the queue's own
	// maxReceiveCount (5) would move it, and its group moves on: as its
	// line expects, and every other message is processed.
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"sqs-fifo mapping: 12 records", "line 5 (id m4): quarantined", "processed 11", "quarantined 1",
		"dead-lettered 0", "invariant no-record-lost: held", "invariant fate-as-expected: held", "PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errs)
		}
	}
	rep := readReport(t, report)
	if rep.Fates[rep.Unprocessed[0].ID] != localtest.FateQuarantined || len(rep.Unexpected) != 0 {
		t.Fatalf("report: unprocessed %+v, unexpected %+v", rep.Unprocessed, rep.Unexpected)
	}
	if envs := receiveEnvelopes(t, client, aws.ToString(q.QueueUrl)); len(envs) != 1 || payloadID(t, envs[0]) != "m4" {
		t.Fatalf("dead-letter queue: %d envelopes, want m4's", len(envs))
	}
}
