package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/jaeger"
)

// sluice run and sluice invoke show a traced run end to end: with
// OpenTelemetry's variables in the function's environment, the
// conformance function exports every invocation's spans to Jaeger, though
// the runner's trace header says Sampled=0 (OTEL_TRACES_SAMPLER decides).
func TestTracedRunAndInvoke(t *testing.T) {
	bin := conformance(t)
	j := jaeger.Start(t)
	otel := func(service string) []string {
		return []string{"--env", "OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLP, "--env", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"--env", "OTEL_SERVICE_NAME=" + service, "--env", "OTEL_TRACES_SAMPLER=always_on"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("run", func(t *testing.T) {
		dir := t.TempDir()
		var lines strings.Builder
		for i := range 12 {
			action := "ok"
			if i == 5 {
				action = "transient:1"
			}
			fmt.Fprintf(&lines, `{"body":{"id":"m%d","action":%q}}`+"\n", i, action)
		}
		records := write(t, dir, "records.jsonl", lines.String())
		mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":4,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
		args := append([]string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
			"--report", filepath.Join(dir, "report.json"), "--env", "SLUICE_SOURCE=sqs", "--env", "SLUICE_RETRY_BACKOFF=1ms"}, otel("run-consumer")...)
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		var records12 map[string]bool
		var batches, retried int
		count := func(spans []jaeger.Span) bool {
			records12, batches, retried = map[string]bool{}, 0, 0
			for _, s := range spans {
				if s.Attr("messaging.batch.message_count") != "" {
					batches++
				}
				if id := s.Attr("messaging.message.id"); id != "" {
					records12[id] = true
					if len(s.Events) > 0 && s.Events[0].Name == "sluice.retry" {
						retried++
					}
				}
			}
			return len(records12) >= 12 && batches >= 3
		}
		// Jaeger indexes what it receives over time: ask until every
		// record's and batch's span is there.
		if _, err := j.SpansUntil(ctx, "run-consumer", "12 record spans and 3 batch spans", count); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out, errs)
		}
		if len(records12) != 12 || batches < 3 || retried != 1 {
			t.Errorf("Jaeger has %d records, %d batches, %d retried; want 12, at least 3, 1\n%s", len(records12), batches, retried, out)
		}
	})
	t.Run("invoke", func(t *testing.T) {
		path, ids := sqsEvent(t, t.TempDir(), "ok", "fail")
		code, out, errs := runCLI(t, append([]string{"invoke", "--event", path, "--handler", bin, "--env", "SLUICE_SOURCE=sqs"}, otel("invoke-consumer")...)...)
		if code != 1 { // the failing message is reported: sluice invoke exits 1
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
		}
		var got map[string]string
		both := func(spans []jaeger.Span) bool {
			got = map[string]string{}
			for _, s := range spans {
				if id := s.Attr("messaging.message.id"); id != "" {
					got[id] = s.Attr("sluice.outcome")
				}
			}
			return got[ids[0]] != "" && got[ids[1]] != ""
		}
		if _, err := j.SpansUntil(ctx, "invoke-consumer", "both records' spans", both); err != nil {
			t.Fatal(err)
		}
		if got[ids[0]] != "succeeded" || got[ids[1]] != "failed" {
			t.Errorf("record spans %v, want %s succeeded and %s failed", got, ids[0], ids[1])
		}
	})
}
