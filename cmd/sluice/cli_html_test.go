package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testsupport/browser"
	"github.com/sluicehq/sluice/localtest"
)

// TestRunHTML: sluice run --html writes the run's page, the summary names
// it, and the page (in a real browser) counts what report.json counts. A
// page that cannot be created is a usage error before anything runs.
func TestRunHTML(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping, records := filepath.Join("..", "..", "examples", "runner", "kinesis-mapping.json"), filepath.Join("..", "..", "examples", "runner", "kinesis-records.jsonl")
	page, report := filepath.Join(dir, "run.html"), filepath.Join(dir, "report.json")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "10s",
		"--env", "SLUICE_SOURCE=kinesis", "--effects", filepath.Join(dir, "effects.jsonl"), "--report", report, "--html", page)
	if code != 0 || !strings.Contains(out, "  html report: "+page+"\n  PASS") {
		t.Fatalf("exit %d, want 0 with the page named before the verdict\n%s\n%s", code, out, errs)
	}
	var rep localtest.Report
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	p := browser.Open(t, page, 1280, 900)
	if pr := p.Problems(); len(pr) > 0 {
		t.Errorf("the page had problems: %q", pr)
	}
	got := browser.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll('td[data-count]')].map(e => [e.dataset.count, e.textContent]))`)
	for k, want := range map[string]int{"invocations": rep.Totals.Invocations, "records": rep.Totals.Records, "bisection": rep.Totals.Bisections,
		"fate:on-failure": rep.Totals.OnFailure, "fate:processed": rep.Totals.Processed} {
		if got[k] != strconv.Itoa(want) {
			t.Errorf("the page shows %s = %q, report.json %d", k, got[k], want)
		}
	}
	if v := browser.Eval[string](t, p, `document.querySelector('.verdict').textContent`); v != "PASS" {
		t.Errorf("the page's verdict is %q, the run passed", v)
	}

	code, out, errs = runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
		"--env", "SLUICE_SOURCE=kinesis", "--html", filepath.Join(dir, "missing", "run.html"))
	if code != 2 || !strings.Contains(errs, "--html "+filepath.Join(dir, "missing", "run.html")+": the page cannot be created") {
		t.Fatalf("exit %d, want 2 naming the page\n%s\n%s", code, out, errs)
	}
}
