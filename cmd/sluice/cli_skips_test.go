package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// s3Message is the body S3 sends to an SQS queue for objects keys.
func s3Message(keys ...string) string {
	var recs []string
	for i, k := range keys {
		recs = append(recs, fmt.Sprintf(`{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2024-01-01T00:00:00.000Z",`+
			`"eventName":"ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"photos","arn":"arn:aws:s3:::photos"},`+
			`"object":{"key":%q,"size":1,"sequencer":"%02d"}}}`, k, i))
	}
	return `{"Records":[` + strings.Join(recs, ",") + `]}`
}

const s3TestMessage = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2014-10-13T15:57:02.089Z","Bucket":"photos","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`

// TestRunS3Skipped: S3 notifications in an SQS queue. The s3:TestEvent
// message the handler acknowledges without running the function is
// skipped, its claim checked against its body; a message of two objects
// whose function makes one effect per object (named by its item) took
// effect once per object. Before, the test event read as lost and the
// message as "took effect 2 times". A function that claims a skip falsely
// fails the run.
func TestRunS3Skipped(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":2,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	line := func(body string) string { return `{"body":` + strconv.Quote(body) + `}` }
	records := write(t, dir, "s3.jsonl", strings.Join([]string{line(s3TestMessage), line(s3Message("ok.a", "ok.b")), line(s3Message("ok.c"))}, "\n")+"\n")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--exactly-once",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs-s3")
	if code != 0 || !strings.Contains(out, "processed 2") || !strings.Contains(out, "skipped 1") ||
		!strings.Contains(out, "line 1: s3-test-event; its payload is an s3:TestEvent message") || !strings.Contains(out, "invariant effect-once: held") {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}

	for _, tt := range []struct{ action, want string }{
		{"claim-skipped:s3-test-event", "as an s3:TestEvent message, but its payload is not one"},
		{"claim-skipped:duplicate", "NOT EVALUATED"},
	} {
		records := write(t, t.TempDir(), "records.jsonl", `{"body":{"id":"m1","action":"ok"}}`+"\n"+
			fmt.Sprintf(`{"body":{"id":"m2","action":%q}}`, tt.action)+"\n")
		code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
			"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs")
		if code != 1 || !strings.Contains(out, tt.want) || !strings.Contains(out, "FAIL: no-record-lost") {
			t.Fatalf("%s: exit %d, want 1 saying %q\n%s\n%s", tt.action, code, tt.want, out, errs)
		}
	}
}
