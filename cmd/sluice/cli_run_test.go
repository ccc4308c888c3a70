package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/localtest"
)

func readReport(t *testing.T, path string) localtest.Report {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep localtest.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestRunEffectsThatCannotBeCheckedFail is the false green of a FIFO mapping
// without ReportBatchItemFailures whose payloads carry "paymentId", not
// "id": the messages were deleted without being processed. Whatever the
// effects file says, the check never reports "held".
func TestRunEffectsThatCannotBeCheckedFail(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs-fifo","BatchSize":10}`)
	failing := write(t, dir, "failing.jsonl", `{"body":{"paymentId":"p1","action":"fail"},"messageGroupId":"g"}
{"body":{"paymentId":"p2","action":"fail"},"messageGroupId":"g"}
`)
	mixed := write(t, dir, "mixed.jsonl", `{"body":{"paymentId":"p1","action":"ok"},"messageGroupId":"g"}
{"body":{"paymentId":"p2","action":"fail"},"messageGroupId":"g"}
`)
	// A function that does not check the mapping contract.
	careless := []string{"--env", "SLUICE_SOURCE=sqs-fifo", "--env", "SLUICE_REPORT_BATCH_ITEM_FAILURES=true"}
	for _, c := range []struct {
		name    string
		records string
		extra   []string
		want    []string
	}{
		{"a queue that never settles", failing, append([]string{"--max-invocations", "5"}, careless...),
			[]string{"stopped early: MaxInvocations (5) reached", "invariant no-record-lost: NOT EVALUATED: the run stopped before every record was resolved"}},
		{"matched by record, one effect missing", mixed, careless,
			[]string{"invariant no-record-lost: VIOLATED", "record line 2 was acknowledged as processed but no effect names it"}},
		{"matched by a payload field the payloads lack", mixed, append([]string{"--effects-key", "id"}, careless...),
			[]string{`invariant no-record-lost: NOT EVALUATED: 2 processed records have no top-level payload field "id"`, "(line 1; line 2)"}},
		{"matched by a payload field no effect carries", mixed, append([]string{"--effects-key", "paymentId"}, careless...),
			[]string{`NOT EVALUATED: 1 of 1 effects name no record of this run by the payload field "paymentId"`}},
		{"a function that honours the contract refuses to start", failing, []string{"--env", "SLUICE_SOURCE=sqs-fifo"},
			[]string{"RUN FAILED (init)", "SLUICE_REPORT_BATCH_ITEM_FAILURES=false", "ReportBatchItemFailures off",
				"invariant no-record-lost: NOT EVALUATED: the run could not test the function (init)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--mapping", mapping, "--records", c.records, "--handler", bin, "--quiet",
				"--effects", filepath.Join(t.TempDir(), "effects.jsonl")}, c.extra...)
			code, out, errs := runCLI(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("summary lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "no-record-lost: held") {
				t.Errorf("no-record-lost may not be reported held:\n%s", out)
			}
		})
	}
}

// TestRunEffectsNeverWritten: a function that acknowledges every record
// and never writes the --effects file cannot have its effects checked.
func TestRunEffectsNeverWritten(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer srv.Close()
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	records := write(t, dir, "records.jsonl", `{"body":{"paymentId":"p1"}}`+"\n"+`{"body":{"paymentId":"p2"}}`+"\n")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", srv.URL, "--quiet",
		"--effects", filepath.Join(dir, "effects.jsonl"))
	if code != 1 || !strings.Contains(out, "invariant no-record-lost: NOT EVALUATED: no effect was recorded") ||
		!strings.Contains(out, "2 records were acknowledged as processed") {
		t.Fatalf("exit %d, want 1 and the check not evaluated:\n%s\n%s", code, out, errs)
	}
}

// TestRunFunctionThatCannotStart: a function that crashes at start, refuses
// its configuration, or hangs at start fails the run with its last words,
// and the run stops early.
func TestRunFunctionThatCannotStart(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	records := write(t, dir, "records.jsonl", strings.Repeat(`{"partitionKey":"k","data":{"id":"r","action":"ok"}}`+"\n", 20))
	withRBIF := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":1,
		"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	withoutRBIF := write(t, dir, "plain.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":1}`)
	for _, c := range []struct {
		name        string
		mapping     string
		env         []string
		invocations int
		words       string // in the last output lines
		reason      string
	}{
		{"crash at start", withRBIF, []string{"CONFORMANCE_INIT=fatal"}, 3, "asked to fail at init", "failed its init 3 times in a row"},
		{"init refusal", withoutRBIF, nil, 3, "ReportBatchItemFailures off", "failed its init 3 times in a row"},
		{"hang at start", withRBIF, []string{"CONFORMANCE_INIT=hang"}, 1, "never finishing", "init timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.json")
			args := []string{"run", "--mapping", c.mapping, "--records", records, "--handler", bin, "--quiet",
				"--init-timeout", "500ms", "--report", report, "--env", "SLUICE_SOURCE=kinesis"}
			for _, e := range c.env {
				args = append(args, "--env", e)
			}
			code, out, errs := runCLI(t, args...)
			if code != 1 || !strings.Contains(out, "RUN FAILED (init)") || !strings.Contains(out, c.reason) || !strings.Contains(out, c.words) {
				t.Fatalf("exit %d, want 1 with the reason %q and the last words %q:\n%s\n%s", code, c.reason, c.words, out, errs)
			}
			rep := readReport(t, report)
			if rep.Failure == nil || rep.Failure.Kind != localtest.FailureInit || rep.Totals.Invocations != c.invocations ||
				rep.Totals.InitFailures != c.invocations {
				t.Fatalf("failure %+v, totals %+v", rep.Failure, rep.Totals)
			}
			if f := rep.LastFailedInvocation; f == nil || !strings.Contains(strings.Join(f.Logs, "\n"), c.words) {
				t.Fatalf("the report must carry the last words: %+v", f)
			}
		})
	}
}

// A Kinesis function given an SQS mapping answers SourceMismatchError: the
// run stops at once and fails, saying which sources disagree.
func TestRunSourceMismatch(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	records := write(t, dir, "records.jsonl", strings.Repeat(`{"body":{"id":"m","action":"ok"}}`+"\n", 5))
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	report := filepath.Join(dir, "report.json")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
		"--report", report, "--env", "SLUICE_SOURCE=kinesis")
	if code != 1 || !strings.Contains(out, "RUN FAILED (source-mismatch)") ||
		!strings.Contains(out, "event records come from aws:sqs but this handler expects aws:kinesis") {
		t.Fatalf("exit %d, want 1 naming both sources:\n%s\n%s", code, out, errs)
	}
	rep := readReport(t, report)
	if rep.Failure == nil || rep.Failure.Kind != localtest.FailureSourceMismatch || rep.Totals.Invocations != 1 || rep.Held() {
		t.Fatalf("failure %+v, totals %+v", rep.Failure, rep.Totals)
	}
}

// TestRunLogsAndErrorDocuments streams the function's output with --logs
// and records the function's error documents in the trace and summary.
func TestRunLogsAndErrorDocuments(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":1,
		"MaximumRetryAttempts":1,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	records := write(t, dir, "records.jsonl", `{"partitionKey":"k","data":{"id":"r1","action":"ok"}}
{"partitionKey":"k","data":{"id":"r2","action":"fail"},"expect":"on-failure"}
`)
	trace, report := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "report.json")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--logs",
		"--trace", trace, "--report", report, "--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=kinesis")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// Invocation 2 is r2's first attempt; its output carries its prefix.
	if !strings.Contains(errs, "[#1 00000001-0000-4000-8000-000000000001] ") || !strings.Contains(errs, "[#2 00000001-0000-4000-8000-000000000002] ") {
		t.Fatalf("--logs must prefix each line by its invocation:\n%s", errs)
	}
	if !strings.Contains(out, "last failed invocation #3") || !strings.Contains(out, "NoProgressError: no record of the batch succeeded") ||
		!strings.Contains(out, "record r2: asked to fail") {
		t.Fatalf("the summary must show the last function error and its output:\n%s", out)
	}
	// The lines the function wrote before it answered are that
	// invocation's, not the next one's.
	if f := readReport(t, report).LastFailedInvocation; f == nil || f.N != 3 ||
		!strings.Contains(strings.Join(f.Logs, "\n"), `record failed" source=kinesis`) {
		t.Fatalf("last failed invocation %+v", f)
	}
	raw, _ := os.ReadFile(trace)
	var failed int
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e localtest.TraceEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Result == localtest.ResultFunctionError {
			failed++
			if e.ErrorType != "NoProgressError" || !strings.Contains(e.ErrorMessage, "asked to fail") {
				t.Fatalf("trace entry without the error document: %s", line)
			}
		}
	}
	if failed != 2 {
		t.Fatalf("%d failed invocations in the trace, want 2:\n%s", failed, raw)
	}
}

// TestRunNamesAndShapes: records that do not fit the source are rejected
// by line; SQS counts redeliveries and its trace names message groups.
func TestRunNamesAndShapes(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	sqsMapping := write(t, dir, "sqs.json", `{"EventSource":"sqs","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	kinesisShaped := write(t, dir, "kinesis.jsonl", `{"body":{"id":"a"}}
{"partitionKey":"k","data":{"id":"b"}}
`)
	code, out, errs := runCLI(t, "run", "--mapping", sqsMapping, "--records", kinesisShaped, "--handler", bin, "--quiet")
	if code != 1 || !strings.Contains(errs, `records line 2: "partitionKey", "data" belong to a Kinesis record`) ||
		!strings.Contains(errs, `an SQS record is {"body" | "bodyBase64", "attributes"?, "messageAttributes"?}`) {
		t.Fatalf("exit %d, want 1 naming the line, the foreign fields and the SQS shape:\n%s\n%s", code, out, errs)
	}

	fifo := write(t, dir, "fifo.json", `{"EventSource":"sqs-fifo","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"RedrivePolicy":{"maxReceiveCount":5}}`)
	records := write(t, dir, "fifo.jsonl", `{"body":{"id":"a","action":"transient:3"},"messageGroupId":"g1"}
{"body":{"id":"b"},"messageGroupId":"g2"}
`)
	trace := filepath.Join(dir, "trace.jsonl")
	code, out, errs = runCLI(t, "run", "--mapping", fifo, "--records", records, "--handler", bin, "--quiet", "--trace", trace,
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs-fifo")
	// a fails its first delivery (three calls, two in-process retries), so
	// the FIFO batch fails as a whole and both messages come again.
	if code != 0 || !strings.Contains(out, "redeliveries 2") || strings.Contains(out, "bisections") {
		t.Fatalf("exit %d, want 0 and SQS counts named redeliveries:\n%s\n%s", code, out, errs)
	}
	raw, _ := os.ReadFile(trace)
	var first localtest.TraceEntry
	if err := json.Unmarshal([]byte(strings.SplitN(string(raw), "\n", 2)[0]), &first); err != nil {
		t.Fatal(err)
	}
	if strings.Join(first.Groups, ",") != "g1,g2" || first.Shard != "" {
		t.Fatalf("an SQS FIFO trace entry names its message groups: %s", raw)
	}
}

// TestRunUsageErrors: every flag-value error exits 2.
func TestRunUsageErrors(t *testing.T) {
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs"}`)
	records := write(t, dir, "records.jsonl", `{"body":"x"}`+"\n")
	base := []string{"run", "--mapping", mapping, "--records", records, "--handler", "/bin/true"}
	for _, extra := range [][]string{
		{"--env", "X"},
		{"--env", "=x"},
		{"--faults", "crsh=0.1"},
		{"--faults", "error=2"},
		{"--timeout", "0s"},
		{"--init-timeout", "-1s"},
		{"--max-invocations", "-1"},
		{"--effects-key", "id"},
		{"--timeout", "soon"},
		{"extra-argument"},
	} {
		code, _, errs := runCLI(t, append(base, extra...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (a usage error)\n%s", extra, code, errs)
		}
	}
	if code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", "aws:"); code != 2 {
		t.Errorf("--handler aws: without a name: exit %d, want 2\n%s", code, errs)
	}
}
