package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

// An injected crash kills the function's process inside the invocation,
// so its memory is gone: a function whose idempotency store lives in
// memory repeats the effects of a redelivered batch, and sluice run
// --exactly-once fails it (it passed while crashes were only a lost
// answer). The same function with its store on DynamoDB passes. The
// summary, the trace and --logs say where the process was killed and show
// the new process's init.
func TestRunCrashKillsTheProcess(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 20 {
		fmt.Fprintf(&lines, `{"body":{"id":"m%d","action":"ok"}}`+"\n", i)
	}
	records := write(t, dir, "records.jsonl", lines.String())
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":5,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	base := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--exactly-once",
		"--faults", "crash=0.5,duplicate=0.5", "--seed", "4", "--logs", "--env", "SLUICE_SOURCE=sqs"}

	t.Run("idempotency in memory", func(t *testing.T) {
		d := t.TempDir()
		trace, report := filepath.Join(d, "trace.jsonl"), filepath.Join(d, "report.json")
		code, out, errs := runCLI(t, append(base, "--effects", filepath.Join(d, "effects.jsonl"), "--trace", trace, "--report", report,
			"--env", "CONFORMANCE_IDEMPOTENCY=memory")...)
		if code != 1 || !strings.Contains(out, "invariant effect-once: VIOLATED") {
			t.Fatalf("exit %d, want 1 with effect-once violated (the store died with the process):\n%s\n%s", code, out, errs)
		}
		if !strings.Contains(out, "process killed ") || !strings.Contains(out, "crashed: the process was killed") {
			t.Fatalf("the summary does not say the process was killed:\n%s", out)
		}
		if n := strings.Count(errs, "[init] localtest: started"); n < 2 {
			t.Fatalf("--logs shows %d inits, want one per process (a new one after each kill):\n%s", n, errs)
		}
		raw, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var rep localtest.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Kills) == 0 || rep.Totals.Crashes != len(rep.Kills) {
			t.Fatalf("report kills %+v, totals %+v", rep.Kills, rep.Totals)
		}
		effects := 0
		for _, k := range rep.Kills {
			if k.Effects < 0 || !strings.Contains(k.What, "effect") {
				t.Fatalf("kill %+v: its effects were not counted", k)
			}
			effects += k.Effects
		}
		if effects == 0 {
			t.Fatalf("no kill left an effect behind, so nothing was redelivered after work: %+v", rep.Kills)
		}
		tr, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(tr), `"killed":"crashed: the process was killed`); n != len(rep.Kills) {
			t.Fatalf("%d trace entries say the process was killed, want %d:\n%s", n, len(rep.Kills), tr)
		}
	})
	t.Run("idempotency on DynamoDB", func(t *testing.T) {
		srv := servers.DynamoDB(t)
		table := servers.UniqueName(t, "crash")
		if code, out, errs := runCLIEnv(t, awsEnv(srv), "tables", "create", "--idempotency", table); code != 0 {
			t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
		}
		// A kill between a record's effect and its completion repeats that
		// effect (the window no store closes): accepted, and only that.
		args := append(base, "--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_IDEMPOTENCY_TABLE="+table,
			"--allow-kill-repeats")
		for _, kv := range awsEnv(srv) {
			args = append(args, "--env", kv)
		}
		code, out, errs := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "invariant effect-once: held") || !strings.Contains(out, "process killed ") {
			t.Fatalf("exit %d, want 0 with effect-once held after real crashes:\n%s\n%s", code, out, errs)
		}
	})
	t.Run("an Invoke API endpoint", func(t *testing.T) {
		code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", "http://127.0.0.1:1", "--faults", "timeout=0.1")
		if code != 2 || !strings.Contains(errs, "need a bootstrap --handler") {
			t.Fatalf("exit %d, want 2 (crash and timeout faults need a process to kill): %s", code, errs)
		}
	})
}

// Crash faults drawn at random may kill nothing in a short run: the
// summary says so, so that checks which held are not read as having held
// through a kill. A run whose faults killed something does not say it.
func TestRunSaysWhenNoKillLanded(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	records := write(t, dir, "records.jsonl", `{"body":{"id":"m0","action":"ok"}}`+"\n")
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":5,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	for _, tc := range []struct {
		faults string
		want   bool
	}{
		{"crash=0.000001", true},
		{"timeout=0.000001", true},
		{"crash=1", false},
		{"duplicate=1", false}, // no kill was asked for
	} {
		args := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--max-invocations", "3",
			"--faults", tc.faults, "--env", "SLUICE_SOURCE=sqs"}
		_, out, errs := runCLI(t, args...)
		if got := strings.Contains(out, "process killed 0 times: crash or timeout faults were asked for, but none landed in"); got != tc.want {
			t.Errorf("--faults %s: says no kill landed %v, want %v:\n%s\n%s", tc.faults, got, tc.want, out, errs)
		}
	}
}
