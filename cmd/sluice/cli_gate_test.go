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

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

// sqsEnv points the function's SQS client at srv.
func sqsEnv(srv *servers.Server) []string {
	return []string{"--env", "AWS_ENDPOINT_URL_SQS=" + srv.Endpoint, "--env", "AWS_REGION=" + servers.Region,
		"--env", "AWS_ACCESS_KEY_ID=" + servers.AccessKeyID, "--env", "AWS_SECRET_ACCESS_KEY=" + servers.SecretAccessKey,
		"--env", "AWS_CONFIG_FILE=" + os.DevNull, "--env", "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
}

// TestRunFailsRecordsThatWereNotProcessed: every message panics and the
// queue's redrive policy moves it to its dead-letter queue. Nothing is
// lost, but nothing was processed either: the run fails, naming each
// record, its expected and its actual fate, unless the user said that is
// what should happen (--expect, --allow, "expect" on the line).
func TestRunFailsRecordsThatWereNotProcessed(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"RedrivePolicy":{"maxReceiveCount":2}}`)
	lines := write(t, dir, "records.jsonl", `{"body":{"id":"a","action":"panic"}}
{"body":{"id":"b","action":"panic"}}
`)
	expectLine := write(t, dir, "expect.jsonl", `{"body":{"id":"a","action":"panic"},"expect":"dead-lettered"}
{"body":{"id":"b","action":"panic"},"expect":"dead-lettered"}
`)
	b := &sevents.SQSBuilder{}
	b.Add(`{"id":"a","action":"panic"}`)
	b.Add(`{"id":"b","action":"panic"}`)
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		t.Fatal(err)
	}
	eventFile := write(t, dir, "event.json", string(raw))
	for _, c := range []struct {
		name    string
		records string
		extra   []string
		code    int
		want    []string
		unwant  []string
	}{
		{"nothing said", lines, nil, 1, []string{"invariant no-record-lost: held", "invariant fate-as-expected: VIOLATED",
			"line 1 (id a): expected processed, got dead-lettered (the queue's redrive policy moved it to its dead-letter queue)",
			"line 2 (id b): expected processed, got dead-lettered", `"expect" on its records line, --expect FATE, N=FATE or N:S=FATE, or --allow FATE`,
			"FAIL: fate-as-expected violated\n"}, []string{"PASS"}},
		{"--expect for every record", lines, []string{"--expect", "dead-lettered"}, 0, []string{"invariant fate-as-expected: held", "PASS"}, nil},
		{"--allow", lines, []string{"--allow", "on-failure,dead-lettered"}, 0, []string{"invariant fate-as-expected: held", "PASS"}, nil},
		{"expect on the lines", expectLine, nil, 0, []string{"dead-lettered 2", "invariant fate-as-expected: held", "PASS"}, nil},
		{"--expect for one line", lines, []string{"--expect", "2=dead-lettered"}, 1,
			[]string{"line 1 (id a): expected processed, got dead-lettered"}, []string{"line 2 (id b): expected"}},
		{"an event file, --expect for every record", eventFile, []string{"--expect", "dead-lettered"}, 0, []string{"PASS"}, nil},
		{"an event file, --expect for one record", eventFile, []string{"--expect", "1=dead-lettered"}, 1,
			[]string{"record 2 (id b): expected processed, got dead-lettered"}, []string{"record 1 (id a): expected"}},
		{"an expectation that did not come true", lines, []string{"--expect", "quarantined"}, 1,
			[]string{"line 1 (id a): expected quarantined, got dead-lettered"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.json")
			args := append([]string{"run", "--mapping", mapping, "--records", c.records, "--handler", bin, "--quiet",
				"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--report", report, "--env", "SLUICE_SOURCE=sqs"}, c.extra...)
			code, out, errs := runCLI(t, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("summary lacks %q:\n%s", w, out)
				}
			}
			for _, w := range c.unwant {
				if strings.Contains(out, w) {
					t.Errorf("summary has %q:\n%s", w, out)
				}
			}
			rep := readReport(t, report)
			if rep.Totals.DeadLettered != 2 || rep.Held() != (c.code == 0) {
				t.Fatalf("totals %+v, held %v", rep.Totals, rep.Held())
			}
			if c.name == "nothing said" && (len(rep.Unexpected) != 2 || rep.Unexpected[0].Line != 1 || rep.Unexpected[0].PayloadID != "a" ||
				rep.Unexpected[0].Expected != localtest.FateProcessed || rep.Unexpected[0].Fate != localtest.FateDeadLettered) {
				t.Fatalf("the report names each unexpected record: %+v", rep.Unexpected)
			}
		})
	}
}

// TestRunHealthyFIFOMessageDeadLettered: on a FIFO queue a healthy message
// behind one that always fails is reported failed with it (order within
// its group) and rides along to the dead-letter queue. The poison message
// is expected there; the healthy one is not, and the run fails naming it.
func TestRunHealthyFIFOMessageDeadLettered(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs-fifo","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"RedrivePolicy":{"maxReceiveCount":2}}`)
	records := write(t, dir, "records.jsonl", `{"body":{"id":"poison","action":"fail"},"messageGroupId":"g","expect":"dead-lettered"}
{"body":{"id":"healthy","action":"ok"},"messageGroupId":"g"}
`)
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs-fifo")
	if code != 1 || !strings.Contains(out, "dead-lettered 2") || !strings.Contains(out, "invariant no-record-lost: held") ||
		!strings.Contains(out, "line 2 (id healthy): expected processed, got dead-lettered") || strings.Contains(out, "line 1 (id poison): expected") {
		t.Fatalf("exit %d, want 1 naming the healthy message\n%s\n%s", code, out, errs)
	}
}

// TestRunQuarantinedIsItsOwnFate: records the function parks in its own
// dead letters (SLUICE_DLQ_FILE) are quarantined, read back from the file
// the function was given: not "processed" with an effect that never
// happened. When the runner cannot read the destination it gave the
// function, the check that depends on it is not evaluated.
func TestRunQuarantinedIsItsOwnFate(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs-fifo","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"RedrivePolicy":{"maxReceiveCount":3}}`)
	records := func(expect string) string {
		return write(t, t.TempDir(), "records.jsonl", `{"body":{"id":"p1","action":"ok"},"messageGroupId":"g"}
{"body":{"id":"p2","action":"permanent"},"messageGroupId":"g"`+expect+`}
{"body":{"id":"p3","action":"ok"},"messageGroupId":"g"}
`)
	}
	base := []string{"run", "--mapping", mapping, "--handler", bin, "--quiet", "--env", "SLUICE_SOURCE=sqs-fifo"}
	t.Run("unexpected", func(t *testing.T) {
		dlqFile := filepath.Join(t.TempDir(), "dlq.jsonl")
		// An envelope of an earlier run in the file does not count.
		os.WriteFile(dlqFile, []byte(`{"version":1,"source":"sqs","recordId":"00000001-0000-4000-8000-000000000001","record":{}}`+"\n"), 0o644)
		code, out, errs := runCLI(t, append(base, "--records", records(""), "--effects", filepath.Join(t.TempDir(), "effects.jsonl"),
			"--env", "SLUICE_DLQ_FILE="+dlqFile)...)
		if code != 1 || !strings.Contains(out, "processed 2 ") || !strings.Contains(out, "quarantined 1 ") || !strings.Contains(out, "invariant no-record-lost: held") ||
			!strings.Contains(out, "line 2 (id p2): expected processed, got quarantined (the function parked it in its own dead letters)") {
			t.Fatalf("exit %d, want 1 naming the quarantined record\n%s\n%s", code, out, errs)
		}
		if strings.Contains(out, "effect never happened") || strings.Contains(out, "line 1 (id p1): expected") {
			t.Fatalf("only the quarantined record is named:\n%s", out)
		}
	})
	t.Run("expected", func(t *testing.T) {
		code, out, errs := runCLI(t, append(base, "--records", records(`,"expect":"quarantined"`),
			"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_DLQ_FILE="+filepath.Join(t.TempDir(), "dlq.jsonl"))...)
		if code != 0 || !strings.Contains(out, "quarantined 1") || !strings.Contains(out, "PASS") {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		// A queue that does not exist: the function never sends to it (no
		// record fails), and the runner cannot read it.
		srv := servers.SQS(t)
		missing := srv.Endpoint + "/000000000000/" + servers.UniqueName(t, "missing")
		code, out, errs := runCLI(t, append(append(base, "--records", records(""), "--effects", filepath.Join(t.TempDir(), "effects.jsonl"),
			"--env", "SLUICE_DLQ_URL="+missing, "--env", "CONFORMANCE_FIXED=permanent"), sqsEnv(srv)...)...)
		// Every record has its effect, so none is lost; whether a record
		// ended processed or quarantined is not known.
		if code != 1 || !strings.Contains(out, "invariant fate-as-expected: NOT EVALUATED: the function's dead letters could not be read") ||
			!strings.Contains(out, "invariant no-record-lost: held") || strings.Contains(out, "PASS") {
			t.Fatalf("exit %d, want 1 with the check not evaluated\n%s\n%s", code, out, errs)
		}
	})
	t.Run("on a queue", func(t *testing.T) {
		srv := servers.SQS(t)
		client := sqs.NewFromConfig(srv.AWSConfig())
		q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
		if err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, append(append(base, "--records", records(`,"expect":"quarantined"`),
			"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_DLQ_URL="+aws.ToString(q.QueueUrl)), sqsEnv(srv)...)...)
		if code != 0 || !strings.Contains(out, "quarantined 1") || !strings.Contains(out, "PASS") {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
		}
		// The dead letter is still in the queue, to be redriven.
		if envs := receiveEnvelopes(t, client, aws.ToString(q.QueueUrl)); len(envs) != 1 {
			t.Fatalf("%d envelopes left in the dead-letter queue, want 1", len(envs))
		}
	})
}

// TestRunNothingToTestIsAUsageError: an empty records file, or effects
// that cannot be written, stop the run before it starts (exit 2).
func TestRunNothingToTestIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	records := write(t, dir, "records.jsonl", `{"body":"x"}`+"\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an empty file", []string{"--records", write(t, dir, "empty.jsonl", "")}, "holds no record: a run over nothing tests nothing"},
		{"blank lines", []string{"--records", write(t, dir, "blank.jsonl", "\n  \n")}, "holds no record"},
		{"an event without records", []string{"--records", write(t, dir, "event.json", `{"Records":[]}`)}, "holds no record"},
		{"effects into a missing directory", []string{"--records", records, "--effects", filepath.Join(dir, "no", "such", "effects.jsonl")},
			"the effects file cannot be created"},
		{"an unknown fate to allow", []string{"--records", records, "--allow", "processed,lost"}, `--allow: "lost" is not a fate`},
		{"an unknown fate to expect", []string{"--records", records, "--expect", "done"}, `"done" is not a fate`},
		{"a list to expect", []string{"--records", records, "--expect", "quarantined,left"}, "is not a fate"},
		{"a line number from 0", []string{"--records", records, "--expect", "0=left"}, "N a line (record) number from 1"},
		{"a line that is no record", []string{"--records", records, "--expect", "7=left"}, "no record is line 7"},
		{"two expectations for every record", []string{"--records", records, "--expect", "left", "--expect", "filtered"}, "given twice"},
		{"an unknown fate on a line", []string{"--records", write(t, dir, "bad.jsonl", `{"body":"x","expect":"parked"}`+"\n")},
			`records line 1: expect: "parked" is not a fate`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append([]string{"run", "--mapping", mapping, "--handler", "/bin/true"}, c.args...)...)
			if c.name == "an unknown fate on a line" { // the file is not records: exit 1, as any bad line
				if code != 1 || !strings.Contains(errs, c.want) {
					t.Fatalf("exit %d, want 1 with %q\n%s\n%s", code, c.want, out, errs)
				}
				return
			}
			if code != 2 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, want 2 with %q\n%s\n%s", code, c.want, out, errs)
			}
		})
	}
	// The effects file is emptied before the run: what an earlier run left
	// there is not taken for this run's effects.
	bin := conformance(t)
	effects := write(t, dir, "effects.jsonl", `{"record":"00000001-0000-4000-8000-000000000001"}`+"\n")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", write(t, dir, "fail.jsonl", `{"body":{"id":"a","action":"fail"}}`+"\n"),
		"--handler", bin, "--quiet", "--effects", effects, "--env", "SLUICE_SOURCE=sqs", "--max-invocations", "3")
	if b, _ := os.ReadFile(effects); code != 1 || len(b) != 0 {
		t.Fatalf("exit %d, effects %q\n%s\n%s", code, b, out, errs)
	}
}

// TestRunWithoutEffectsNeverPasses: without --effects order-per-key is
// listed as not evaluated, and the run fails: never a false green.
func TestRunWithoutEffectsNeverPasses(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	records := write(t, dir, "records.jsonl", `{"partitionKey":"k","data":{"id":"a"}}`+"\n"+`{"partitionKey":"k","data":{"id":"b"}}`+"\n")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--env", "SLUICE_SOURCE=kinesis")
	if code != 1 || !strings.Contains(out, "invariant order-per-key: NOT EVALUATED: no effects were given to check") ||
		!strings.Contains(out, "invariant no-record-lost: held") || !strings.Contains(out, "FAIL: order-per-key not evaluated") {
		t.Fatalf("exit %d, want 1 with order-per-key not evaluated\n%s\n%s", code, out, errs)
	}
	// The same run with effects passes.
	code, out, errs = runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--env", "SLUICE_SOURCE=kinesis",
		"--effects", filepath.Join(dir, "effects.jsonl"))
	if code != 0 || !strings.Contains(out, "invariant order-per-key: held") || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
}

// TestRunRecommendedSetup runs a payments function as the docs recommend
// it: SQS FIFO with the queue's redrive policy, idempotency by business key
// (the payment id, on DynamoDB Local), dead letters to a file, under
// injected function errors and duplicate deliveries; a producer sends one
// payment twice and one payment is poison. The right function passes,
// every payment taking effect once; the same function without idempotency,
// or with idempotency keyed by the message instead of the payment, fails.
func TestRunRecommendedSetup(t *testing.T) {
	bin := conformance(t)
	db := servers.DynamoDB(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs-fifo","BatchSize":3,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"VisibilityTimeout":30,"RedrivePolicy":{"maxReceiveCount":10}}`)
	var lines []string
	for i := 1; i <= 24; i++ {
		action, expect := "ok", ""
		switch {
		case i == 9:
			action, expect = "permanent", `,"expect":"quarantined"`
		case i%7 == 3:
			action = "transient:1"
		}
		lines = append(lines, fmt.Sprintf(`{"body":{"id":"pay-%03d","action":%q},"messageGroupId":"acct-%d","messageDeduplicationId":"d%d"%s}`,
			i, action, i%3, i, expect))
		if i == 20 { // the producer sends payment 5 again, with a new deduplication id
			lines = append(lines, `{"body":{"id":"pay-005","action":"ok"},"messageGroupId":"acct-2","messageDeduplicationId":"d5-again"}`)
		}
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	table := func(t *testing.T) []string {
		name := servers.UniqueName(t, "pay")
		if code, out, errs := runCLIEnv(t, awsEnv(db), "tables", "create", "--idempotency", name); code != 0 {
			t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
		}
		env := []string{"--env", "SLUICE_IDEMPOTENCY_TABLE=" + name}
		for _, kv := range awsEnv(db) {
			env = append(env, "--env", kv)
		}
		return env
	}
	run := func(t *testing.T, env ...string) (int, string, localtest.Report) {
		t.Helper()
		tmp := t.TempDir()
		report := filepath.Join(tmp, "report.json")
		args := append([]string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "10s",
			"--faults", "error=0.3,duplicate=0.3", "--seed", "4", "--exactly-once", "--effects", filepath.Join(tmp, "effects.jsonl"),
			"--effects-key", "id", "--report", report, "--function-name", "payments",
			"--env", "SLUICE_SOURCE=sqs-fifo", "--env", "SLUICE_RETRY_BACKOFF=1ms", "--env", "SLUICE_DLQ_FILE=" + filepath.Join(tmp, "dlq.jsonl")}, env...)
		code, out, errs := runCLI(t, args...)
		if errs != "" {
			t.Logf("stderr:\n%s", errs)
		}
		return code, out, readReport(t, report)
	}
	t.Run("the right function", func(t *testing.T) {
		code, out, rep := run(t, append(table(t), "--env", "CONFORMANCE_IDEMPOTENCY_KEY=id")...)
		if code != 0 || !strings.Contains(out, "PASS") || !strings.Contains(out, "invariant effect-once: held") {
			t.Fatalf("exit %d, want 0\n%s", code, out)
		}
		tt := rep.Totals
		t.Logf("totals %+v", tt)
		if tt.Records != 25 || tt.Processed != 23 || tt.Quarantined != 1 || tt.DeadLettered != 0 || tt.FunctionErrors == 0 || tt.Duplicates == 0 {
			t.Fatalf("totals %+v: every fault must have fired, and every payment but the poison one been processed", tt)
		}
		// The producer's second payment 5 was answered as a duplicate of
		// the first, without the function: skipped, its claim shown by the
		// payment's effect.
		if tt.Skipped != 1 || len(rep.Skipped) != 1 || rep.Skipped[0].Line != 21 || rep.Skipped[0].Reason != "duplicate" ||
			!strings.Contains(rep.Skipped[0].Checked, `id "pay-005" took effect in this run`) {
			t.Fatalf("skipped %+v", rep.Skipped)
		}
	})
	t.Run("without idempotency", func(t *testing.T) {
		code, out, _ := run(t)
		// The injected duplicate deliveries repeat effects, not only the
		// producer's duplicate.
		if code != 1 || !strings.Contains(out, "invariant effect-once: VIOLATED") || strings.Count(out, "took effect 2 times") < 2 {
			t.Fatalf("exit %d, want 1 with effect-once violated\n%s", code, out)
		}
	})
	t.Run("idempotent by message, not by payment", func(t *testing.T) {
		code, out, _ := run(t, table(t)...)
		if code != 1 || !strings.Contains(out, "invariant effect-once: VIOLATED") ||
			!strings.Contains(out, `id "pay-005" (records line 5 (id pay-005), line 21 (id pay-005)) took effect 2 times`) {
			t.Fatalf("exit %d, want 1 naming the payment sent twice\n%s", code, out)
		}
		if strings.Count(out, "took effect") != 1 {
			t.Fatalf("only the producer's duplicate takes effect twice:\n%s", out)
		}
	})
}

func TestApplyExpects(t *testing.T) {
	lines := func() []localtest.InputRecord { // lines 1, 3 and 4 of a file with a blank line 2
		return []localtest.InputRecord{{Line: 1}, {Line: 3, Expect: "on-failure"}, {Line: 4}}
	}
	events := func() []localtest.InputRecord { return make([]localtest.InputRecord, 3) } // an event file: no lines
	for _, tt := range []struct {
		name  string
		recs  []localtest.InputRecord
		flags []string
		want  []string // per record
		err   string
	}{
		{"none", lines(), nil, []string{"", "on-failure", ""}, ""},
		{"every record without its own", lines(), []string{"quarantined"}, []string{"quarantined", "on-failure", "quarantined"}, ""},
		{"a line", lines(), []string{"4=left"}, []string{"", "on-failure", "left"}, ""},
		{"a line wins over its own and over every record", lines(), []string{"3=processed", "left"}, []string{"left", "processed", "left"}, ""},
		{"a line that is blank", lines(), []string{"2=left"}, nil, "no record is line 2"},
		{"a record of an event file", events(), []string{"2=dead-lettered"}, []string{"", "dead-lettered", ""}, ""},
		{"past the last record", events(), []string{"4=left"}, nil, "no record is record 4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := parseExpects(tt.flags)
			if err == nil {
				err = applyExpects(tt.recs, ex)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range tt.recs {
				if r.Expect != tt.want[i] {
					t.Fatalf("record %d expects %q, want %q", i+1, r.Expect, tt.want[i])
				}
			}
		})
	}
}

func TestVerdictLine(t *testing.T) {
	held := localtest.InvariantResult{Name: localtest.InvariantNoLoss, Status: localtest.StatusHeld}
	for _, tt := range []struct {
		name string
		rep  localtest.Report
		want string
	}{
		{"pass", localtest.Report{Invariants: []localtest.InvariantResult{held}}, "PASS: the run ended and every check held"},
		{"checks", localtest.Report{Invariants: []localtest.InvariantResult{held,
			{Name: localtest.InvariantOrder, Status: localtest.StatusNotEvaluated},
			{Name: localtest.InvariantFates, Status: localtest.StatusViolated}}},
			"FAIL: order-per-key not evaluated; fate-as-expected violated"},
		{"stopped", localtest.Report{Stopped: "MaxInvocations (5) reached", Invariants: []localtest.InvariantResult{held}},
			"FAIL: the run stopped early"},
		{"failed", localtest.Report{Failure: &localtest.RunFailure{Kind: localtest.FailureInit}, Stopped: "x"},
			"FAIL: the run could not test the function (init)"},
	} {
		if got := verdictLine(&tt.rep); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
