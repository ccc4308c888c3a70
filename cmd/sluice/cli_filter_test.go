package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/localtest"
)

// A mapping file with FilterCriteria: the records that match no filter
// never reach the function (here they would fail it) and are reported
// filtered; the rest are processed with their effects.
func TestRunFilterCriteria(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":4,
		"MaximumRetryAttempts":0,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"FilterCriteria":{"Filters":[{"Pattern":"{\"data\":{\"action\":[\"ok\"]}}"}]}}`)
	var lines []string
	for i := 0; i < 9; i++ {
		action := "ok"
		if i%3 == 1 {
			action = "fail"
		}
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"pk-%d","data":{"id":"r%d","action":%q}}`, i%2, i, action))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	report, effects := filepath.Join(dir, "report.json"), filepath.Join(dir, "effects.jsonl")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin,
		"--report", report, "--effects", effects, "--env", "SLUICE_SOURCE=kinesis", "--timeout", "10s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"kinesis mapping: 9 records", "processed 6", "filtered 3", "invariant no-record-lost: held", "invariant order-per-key: held"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"on-failure:", "not processed:"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("summary has %q:\n%s", unwanted, out)
		}
	}
	var rep localtest.Report
	raw, _ := os.ReadFile(report)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Filtered != 3 || rep.Totals.Processed != 6 || rep.Totals.FunctionErrors != 0 || len(rep.OnFailureRecords) != 0 ||
		rep.Mapping.FilterCriteria == nil || len(rep.Mapping.FilterCriteria.Filters) != 1 {
		t.Fatalf("report totals %+v, mapping %+v", rep.Totals, rep.Mapping.FilterCriteria)
	}
}

// An invalid pattern stops `sluice run` before anything runs, naming the
// filter.
func TestRunFilterCriteriaInvalid(t *testing.T) {
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs",
		"FilterCriteria":{"Filters":[{"Pattern":"{\"body\":{\"a\":[\"x\"]}}"},{"Pattern":"{\"body\":{\"a\":[{\"between\":[1,2]}]}}"}]}}`)
	records := write(t, dir, "records.jsonl", `{"body":{"a":"x"}}`+"\n")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", "./does-not-matter")
	if code == 0 || !strings.Contains(out+errs, `InvalidParameterValueException: Invalid filter pattern definition. FilterCriteria.Filters[1].Pattern: body.a[0]: unknown operator "between"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
