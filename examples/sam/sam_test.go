package sam_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/localtest"
)

// samBuild lays out what sam build writes for the example, by hand: the
// template, and each function's bootstrap under .aws-sam/build/<Id>/.
func samBuild(t *testing.T) (dir, sluice string) {
	t.Helper()
	dir = t.TempDir()
	for _, f := range []string{"template.yaml", "orders.jsonl", "jobs.jsonl"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for id, pkg := range map[string]string{"OrdersFunction": "orders", "JobsFunction": "jobs"} {
		bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/sam/"+pkg)
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, ".aws-sam", "build", id, "bootstrap")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, rie.BuildHandler(t, "github.com/sluicehq/sluice/cmd/sluice")
}

// arch is this machine's architecture as the template's Architecture
// parameter names it: sam build builds for the template's, and the test
// builds for this machine.
func arch() string {
	if runtime.GOARCH == "arm64" {
		return "arm64"
	}
	return "x86_64"
}

func sluiceRun(t *testing.T, dir, sluice string, args ...string) (string, *localtest.Report) {
	t.Helper()
	report := filepath.Join(dir, "report.json")
	cmd := exec.Command(sluice, append([]string{"run", "--template", "template.yaml", "--parameter-overrides", "Architecture=" + arch(),
		"--effects", "effects.jsonl", "--report", report, "--trace", "trace.jsonl", "--quiet"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sluice run %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var rep localtest.Report
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return string(out), &rep
}

// TestOrders runs the Kinesis consumer's mapping as the template deploys
// it: batches of 4, bisection, two retries, the refused order o4 sent to
// the on-failure queue (a file here) and every other order booked.
func TestOrders(t *testing.T) {
	dir, sluice := samBuild(t)
	out, rep := sluiceRun(t, dir, sluice, "--mapping", "OrdersFunction", "--records", "orders.jsonl")
	for _, want := range []string{"kinesis mapping: 8 records", "not processed: line 4 (id o4): on-failure",
		`"condition":"RetryAttemptsExhausted","approximateInvokeCount":4`, "on-failure records, which AWS sends to OrdersFailures, go to file://OrdersFailures.onfailure.jsonl",
		"PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if rep.Totals.Processed != 7 || rep.Totals.OnFailure != 1 || rep.Totals.Bisections == 0 || rep.Totals.Retries != 2 {
		t.Errorf("totals %+v", rep.Totals)
	}
	m := rep.Mapping
	if *m.BatchSize != 4 || !*m.BisectBatchOnFunctionError || *m.MaximumRetryAttempts != 2 || *m.Shards != 2 {
		t.Errorf("mapping %+v", m)
	}
	onFailure, err := os.ReadFile(filepath.Join(dir, "OrdersFailures.onfailure.jsonl"))
	if err != nil || strings.Count(string(onFailure), "\n") != 1 || !strings.Contains(string(onFailure), `"KinesisBatchInfo"`) {
		t.Fatalf("on-failure file: %v\n%s", err, onFailure)
	}
	trace, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
	for _, line := range strings.Split(strings.TrimSpace(string(trace)), "\n") {
		var e localtest.TraceEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if len(e.IDs) > 4 {
			t.Errorf("invocation #%d got %d records; BatchSize is 4", e.N, len(e.IDs))
		}
	}
}

// TestJobs runs the SQS consumer's mapping: the job no kind fits is
// redelivered until the queue's redrive policy (maxReceiveCount 3) moves
// it to the dead-letter queue; the function's own Timeout wins over
// Globals'.
func TestJobs(t *testing.T) {
	dir, sluice := samBuild(t)
	out, rep := sluiceRun(t, dir, sluice, "--mapping", "JobsFunction.Jobs", "--records", "jobs.jsonl")
	if !strings.Contains(out, "not processed: line 3 (id j3): dead-lettered") || !strings.Contains(out, "PASS") {
		t.Errorf("output:\n%s", out)
	}
	if rep.Totals.Processed != 5 || rep.Totals.DeadLettered != 1 || rep.Totals.Redeliveries != 2 {
		t.Errorf("totals %+v", rep.Totals)
	}
	if m := rep.Mapping; *m.BatchSize != 5 || *m.VisibilityTimeout != 60 || m.RedrivePolicy.MaxReceiveCount != 3 {
		t.Errorf("mapping %+v", m)
	}
}
