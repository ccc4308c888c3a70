package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
)

// TestKPLAggregates: sluice invoke sends an event holding a KPL aggregated
// record (the KPL's format, github.com/awslabs/amazon-kinesis-producer/
// blob/master/aggregation-format.md) to a Sluice handler, which runs its
// user records and reports the aggregate when one of them fails; sluice run
// takes records lines with "aggregate" and delivers each user record.
func TestKPLAggregates(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	b := &events.KinesisBuilder{Clock: fixedClock}
	b.Add("pk", command("p1", "ok"))
	b.AddAggregated(kpl.Record{PartitionKey: "a", Data: command("u1", "ok")}, kpl.Record{PartitionKey: "b", Data: command("u2", "fail")},
		kpl.Record{PartitionKey: "c", Data: command("u3", "ok")})
	ev := b.Event()
	path := prettyEvent(t, dir, "kpl.json", ev)
	t.Run("invoke", func(t *testing.T) {
		effects := filepath.Join(t.TempDir(), "effects.jsonl")
		seq := ev.Records[1].Kinesis.SequenceNumber
		code, out, errs := runCLI(t, "invoke", "--event", path, "--handler", bin, "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_EFFECTS_FILE="+effects)
		if code != 1 || !strings.Contains(out, seq) || !strings.HasSuffix(lastLine(errs), "partial: 1 item reported: "+seq) {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		raw, _ := os.ReadFile(effects)
		if got := strings.Count(string(raw), "\n"); got != 2 || !strings.Contains(string(raw), `"id":"u1"`) || strings.Contains(string(raw), `"id":"u3"`) {
			t.Fatalf("effects (want p1 and u1, the function stopping at u2):\n%s", raw)
		}
	})
	t.Run("run", func(t *testing.T) {
		var lines []string
		n := 0
		for i := range 6 {
			var users []string
			for k := range 4 {
				n++
				users = append(users, fmt.Sprintf(`{"partitionKey":"cust-%d","data":{"id":"u%d-%d","action":"ok"}}`, (i+k)%3, i, k))
			}
			lines = append(lines, `{"aggregate":[`+strings.Join(users, ",")+`]}`)
		}
		lines = append(lines, `{"partitionKey":"pk","data":{"id":"plain","action":"ok"}}`)
		n++
		records := write(t, t.TempDir(), "records.jsonl", strings.Join(lines, "\n")+"\n")
		mapping := write(t, t.TempDir(), "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":3,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
		effects := filepath.Join(t.TempDir(), "effects.jsonl")
		code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
			"--effects", effects, "--env", "SLUICE_SOURCE=kinesis")
		if code != 0 || !strings.Contains(out, "kinesis mapping: 7 records") || !strings.Contains(out, "invariant no-record-lost: held") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		raw, _ := os.ReadFile(effects)
		if got := strings.Count(string(raw), "\n"); got != n || !strings.Contains(string(raw), `"id":"u5-3"`) {
			t.Fatalf("%d effects, want one per user record (%d):\n%s", got, n, raw)
		}
	})
}
