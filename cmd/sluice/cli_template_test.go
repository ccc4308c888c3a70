package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The template infra's tests synthesize from Sluice's constructs.
var templatePath = filepath.Join("..", "..", "localtest", "testdata", "cdk", "sluice.template.json")

// TestRunTemplateNeedsDeployTimeValues: a variable CloudFormation names
// at deploy stops the run, naming the variable and the flag that sets it,
// before any function starts.
func TestRunTemplateNeedsDeployTimeValues(t *testing.T) {
	code, _, errs := runCLI(t, "run", "--template", templatePath, "--mapping", "sluice-orders", "--records", "unused.jsonl",
		"--handler", "unused-bootstrap", "--env", "SLUICE_DLQ_URL=http://127.0.0.1:1/q")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errs)
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
	if code != 1 || !strings.Contains(errs, `no event source mapping is "Nope"`) || !strings.Contains(errs, "named sluice-orders") {
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
		action := "ok"
		if i == 4 {
			action = "fail"
		}
		lines = append(lines, fmt.Sprintf(`{"messageGroupId":"g%d","body":{"id":"m%d","action":%q}}`, i%2, i, action))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	report := filepath.Join(dir, "report.json")
	code, out, errs := runCLI(t, "run", "--template", templatePath, "--mapping", "LedgerFunction155C71ED", "--records", records,
		"--handler", bin, "--report", report, "--env", "SLUICE_SOURCE=sqs-fifo", "--env", "SLUICE_DLQ_URL=http://127.0.0.1:1/dead")
	// m4 always fails: after the template's maxReceiveCount (5) receives
	// the queue moves it to its redrive queue; nothing is lost.
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"sqs-fifo mapping: 12 records", "line 5 (id m4): dead-lettered", "invariant no-record-lost: held"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errs)
		}
	}
}
