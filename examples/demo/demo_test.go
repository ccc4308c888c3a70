package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, "all", ""); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, unwanted := range []string{"(plain)", "(permanent)", `"…`} {
		if strings.Contains(s, unwanted) {
			t.Errorf("output shows %q: outcomes in plain words and full ids in the answer, please:\n%s", unwanted, s)
		}
	}
	for _, want := range []string{
		"ord-1003  succeeded on attempt 2",
		"ord-1004  failed permanently: not retried in process",
		"-         not attempted: Lambda redelivers it with the failed record",
		`answer to Lambda: {"batchItemFailures":[{"itemIdentifier":"49590338271490256608559690000000000000000000000000000003"}]}`,
		"redelivers records 4-8",
		"failed: will be retried by Lambda",
		"panic: runtime error",
		`{"itemIdentifier":"00000004-0000-4000-8000-000000000004"},{"itemIdentifier":"00000005-0000-4000-8000-000000000005"},{"itemIdentifier":"00000007-0000-4000-8000-000000000007"}`,
		"deletes the 5 processed messages",
		"ord-1001  skipped: its effect already happened",
		"ord-1004  quarantined: sent to the dead-letter queue",
		"ord-1007  failed: will be retried by Lambda",
		`answer to Lambda: {"batchItemFailures":[{"itemIdentifier":"00000007-0000-4000-8000-000000000007"}]}`,
		"after two deliveries: 5 orders charged, each once; 5 duplicates skipped on the second delivery.",
		"4 dead letters",
		"reason permanent, attempts 1: order ord-1004: amount -5.00 is not positive",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestDemoFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, "kafka", ""); err == nil {
		t.Fatal("an unknown source must be an error")
	}
	if err := run(&out, "all", "x.json"); err == nil {
		t.Fatal("-event without -source must be an error")
	}
	if err := run(&out, "sqs", filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing event file must be an error")
	}
	path := filepath.Join(t.TempDir(), "ev.json")
	os.WriteFile(path, sqsSample, 0o644)
	out.Reset()
	if err := run(&out, "sqs", path); err != nil || !strings.Contains(out.String(), "SQS standard queue") || strings.Contains(out.String(), "Kinesis") {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
