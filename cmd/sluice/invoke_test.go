package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
)

// command is a conformance record's payload.
func command(id, action string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"action":%q}`, id, action)
}

// prettyEvent writes ev as sam local generate-event does: indented.
func prettyEvent(t *testing.T, dir, name string, ev any) string {
	t.Helper()
	raw, err := events.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	return write(t, dir, name, buf.String()+"\n")
}

func fixedClock() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func sqsEvent(t *testing.T, dir string, actions ...string) (path string, ids []string) {
	b := &events.SQSBuilder{Clock: fixedClock}
	for i, a := range actions {
		b.Add(string(command(fmt.Sprintf("m%d", i+1), a)))
	}
	ev := b.Event()
	for _, m := range ev.Records {
		ids = append(ids, m.MessageId)
	}
	return prettyEvent(t, dir, "sqs.json", ev), ids
}

func kinesisEvent(t *testing.T, dir string, actions ...string) (path string, seqs []string) {
	b := &events.KinesisBuilder{Clock: fixedClock}
	for i, a := range actions {
		b.Add("pk", command(fmt.Sprintf("k%d", i+1), a))
	}
	ev := b.Event()
	for _, r := range ev.Records {
		seqs = append(seqs, r.Kinesis.SequenceNumber)
	}
	return prettyEvent(t, dir, "kinesis.json", ev), seqs
}

// kafkaEvent puts the actions in partitions 0 and 1 of topic orders, in
// turn, on one line (as a logged event would be).
func kafkaEvent(t *testing.T, dir string, actions ...string) string {
	b := &events.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1", Clock: fixedClock}
	for i, a := range actions {
		b.Add("orders", int64(i%2), []byte("key"), command(fmt.Sprintf("f%d", i+1), a))
	}
	raw, err := events.MarshalEvent(b.Event())
	if err != nil {
		t.Fatal(err)
	}
	return write(t, dir, "kafka.json", string(raw))
}

func invokeCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := invokeCommand(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// lastLine is sluice's verdict line: the last line of stderr.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestInvokeConformance(t *testing.T) {
	bin := conformance(t)
	type want struct {
		code    int
		verdict string // suffix of the last stderr line
		stdout  []string
		stderr  []string
	}
	sqsOK, _ := sqsEvent(t, t.TempDir(), "ok", "ok")
	sqsPartial, sqsIDs := sqsEvent(t, t.TempDir(), "ok", "fail", "ok")
	sqsAllFail, _ := sqsEvent(t, t.TempDir(), "fail")
	kinOK, _ := kinesisEvent(t, t.TempDir(), "ok", "ok", "ok")
	kinPartial, seqs := kinesisEvent(t, t.TempDir(), "ok", "fail", "ok")
	kafkaOK := kafkaEvent(t, t.TempDir(), "ok", "ok", "ok")
	kafkaPartial := kafkaEvent(t, t.TempDir(), "ok", "ok", "fail", "ok")
	for _, tc := range []struct {
		name string
		args []string
		want want
	}{
		{"sqs success", []string{"--event", sqsOK, "--env", "SLUICE_SOURCE=sqs"},
			want{0, ": SQS event, 2 records in", []string{`"batchItemFailures": []`}, []string{"localtest: started"}}},
		{"sqs partial", []string{"--event", sqsPartial, "--env", "SLUICE_SOURCE=sqs"},
			want{1, ": partial: 1 item reported: " + sqsIDs[1], []string{"\"itemIdentifier\": \"" + sqsIDs[1] + "\""}, []string{"record m2: asked to fail"}}},
		{"sqs function error", []string{"--event", sqsAllFail, "--env", "SLUICE_SOURCE=sqs"},
			want{1, ": function error: ", []string{`"errorMessage"`}, []string{"asked to fail"}}},
		{"sqs crash at start", []string{"--event", sqsOK},
			want{1, ": function error: Runtime.ExitError: ", []string{`"errorType": "Runtime.ExitError"`}, []string{`conformance: SLUICE_SOURCE=""`}}},
		{"kinesis success", []string{"--event", kinOK, "--env", "SLUICE_SOURCE=kinesis"},
			want{0, ": Kinesis event, 3 records in", nil, nil}},
		{"kinesis partial", []string{"--event", kinPartial, "--env", "SLUICE_SOURCE=kinesis"},
			want{1, ": partial: 1 item reported: " + seqs[1], []string{seqs[1]}, nil}},
		{"kinesis crash at start", []string{"--event", kinOK, "--env", "SLUICE_SOURCE=nope"},
			want{1, ": function error: Runtime.ExitError: ", nil, []string{`SLUICE_SOURCE="nope"`}}},
		{"kafka success", []string{"--event", kafkaOK, "--env", "SLUICE_SOURCE=kafka"},
			want{0, ": Kafka event, 3 records in", []string{`"batchItemFailures": []`}, nil}},
		{"kafka partial", []string{"--event", kafkaPartial, "--env", "SLUICE_SOURCE=kafka"},
			want{1, ": partial: 1 item reported: orders-0@1", []string{`"partition": "orders-0"`, `"offset": 1`}, nil}},
		{"kafka crash at start", []string{"--event", kafkaOK},
			want{1, ": function error: Runtime.ExitError: ", nil, []string{"conformance: SLUICE_SOURCE"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := invokeCLI(t, "", append([]string{"--handler", bin}, tc.args...)...)
			if code != tc.want.code || !strings.HasPrefix(lastLine(errs), "sluice invoke: ") || !strings.Contains(lastLine(errs), tc.want.verdict) {
				t.Fatalf("exit %d, last line %q; want %d and %q\nstdout:\n%s\nstderr:\n%s", code, lastLine(errs), tc.want.code, tc.want.verdict, out, errs)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("stdout is not the JSON response:\n%s", out)
			}
			for _, w := range tc.want.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(errs, "killing pid") || strings.Contains(errs, "signal: killed") {
				t.Errorf("stderr tells of the process sluice stopped after it answered:\n%s", errs)
			}
			for _, w := range tc.want.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

// The event is sent exactly as in the file: the function sees the file's
// bytes (here, pretty-printed, through standard input).
func TestInvokeSendsTheEventUnchanged(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	path, ids := sqsEvent(t, dir, "ok", "fail")
	raw := string(mustRead(t, path))
	// An answer that names a message of the file proves the function saw
	// the file's ids: the runner would have assigned its own.
	code, out, errs := invokeCLI(t, raw, "--event", "-", "--handler", bin, "--env", "SLUICE_SOURCE=sqs", "--function-name", "orders")
	if code != 1 || !strings.Contains(out, ids[1]) || !strings.HasSuffix(lastLine(errs), "partial: 1 item reported: "+ids[1]) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// An http(s):// handler is an Invoke API endpoint: here the Runtime
// Interface Emulator running the conformance bootstrap.
func TestInvokeThroughTheInvokeAPI(t *testing.T) {
	fn := rie.Start(t, conformance(t), rie.Env("SLUICE_SOURCE", "kafka"))
	ev := kafkaEvent(t, t.TempDir(), "ok", "fail", "ok")
	code, out, errs := runCLI(t, "invoke", "--event", ev, "--handler", fn.Endpoint())
	if code != 1 || !strings.HasSuffix(lastLine(errs), "partial: 1 item reported: orders-1@0") || !strings.Contains(out, `"partition": "orders-1"`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestInvokeErrors(t *testing.T) {
	dir := t.TempDir()
	ev, _ := sqsEvent(t, dir, "ok")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no flags", nil, 2, "--event and --handler are required"},
		{"no handler", []string{"--event", ev}, 2, "--event and --handler are required"},
		{"no event", []string{"--handler", "/bin/true"}, 2, "--event and --handler are required"},
		{"an argument", []string{"--event", ev, "--handler", "/bin/true", "extra"}, 2, `unexpected argument "extra"`},
		{"bad env", []string{"--event", ev, "--handler", "/bin/true", "--env", "NOVALUE"}, 2, `--env "NOVALUE" is not KEY=VALUE`},
		{"zero timeout", []string{"--event", ev, "--handler", "/bin/true", "--timeout", "0s"}, 2, "must be positive"},
		{"unknown flag", []string{"--event", ev, "--handler", "/bin/true", "--mapping", "m.json"}, 2, "flag provided but not defined: -mapping"},
		{"aws without a name", []string{"--event", ev, "--handler", "aws:"}, 2, "needs the function's NAME"},
		// The file cannot be read: a usage error, not the function's.
		{"missing file", []string{"--event", filepath.Join(dir, "nope.json"), "--handler", "/bin/true"}, 2, "no such file"},
		{"a directory", []string{"--event", dir, "--handler", "/bin/true"}, 2, "is a directory"},
		// Nothing to start, or nothing answering: not the function's doing either.
		{"no bootstrap", []string{"--event", ev, "--handler", filepath.Join(dir, "bootstrap")}, 3, "the function could not be started"},
		{"not executable", []string{"--event", ev, "--handler", ev}, 3, "is not an executable file"},
		{"an endpoint that does not answer", []string{"--event", ev, "--handler", "http://127.0.0.1:1"}, 3, "the function could not be invoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append([]string{"invoke"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.want) || out != "" {
				t.Fatalf("exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, tc.want, out, errs)
			}
		})
	}
}

// sluice invoke sends any file byte for byte, however little it looks like
// an event (as sam local invoke -e does), and reports what the function
// answered: before, {}, null, an empty file, truncated JSON and bad base64
// were refused before the function started, with the exit status of a
// function error.
func TestInvokeSendsAnyFileAsItIs(t *testing.T) {
	echo := rie.BuildHandler(t, "github.com/sluicehq/sluice/cmd/sluice/testdata/echo")
	dir := t.TempDir()
	sqs, _ := sqsEvent(t, dir, "ok")
	records := `{"body":{"id":"a","action":"ok"}}` + "\n"
	for _, tc := range []struct {
		name, content string
		code          int
		note, verdict string
	}{
		{"an empty object", `{}`, 0, "want a JSON object with a Records list or a Kafka records map", "a payload that is not an event in"},
		{"null", `null`, 0, "want a JSON object with a Records list", "a payload that is not an event in"},
		{"an empty file", ``, 0, "it is empty", ": success"},
		{"truncated JSON", `{"Records":[{"eventSource":"aws:sqs","bo`, 0, "", ": success"},
		{"bad base64 in a Kinesis event", `{"Records":[{"eventSource":"aws:kinesis","kinesis":{"partitionKey":"k","data":"!!"}}]}`, 0, "base64", ": success"},
		{"records, not an event", records, 0, "", ": success"},
		{"two events", "[" + string(mustRead(t, sqs)) + "," + string(mustRead(t, sqs)) + "]", 0, "one invocation sends one event", ": success"},
		{"an event", string(mustRead(t, sqs)), 0, "", ": SQS event, 1 record in"},
		{"a function error", `{"fail-me":1}`, 1, "not one event", ": function error: errorString: asked to fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, t.TempDir(), "event.json", tc.content)
			code, out, errs := runCLI(t, "invoke", "--event", path, "--handler", echo)
			if code != tc.code || !strings.Contains(lastLine(errs), tc.verdict) {
				t.Fatalf("exit %d, want %d; last line %q, want %q\nstdout:\n%s\nstderr:\n%s", code, tc.code, lastLine(errs), tc.verdict, out, errs)
			}
			if tc.note != "" && !strings.Contains(errs, "sluice invoke: note: ") || !strings.Contains(errs, tc.note) {
				t.Errorf("stderr lacks the note %q:\n%s", tc.note, errs)
			}
			if tc.code == 0 {
				var got struct{ Received string }
				if err := json.Unmarshal([]byte(out), &got); err != nil || got.Received != base64.StdEncoding.EncodeToString([]byte(tc.content)) {
					t.Fatalf("the function received %q (%v), the file holds %q", got.Received, err, tc.content)
				}
			}
		})
	}
	// Standard input too, with its surrounding whitespace.
	code, out, errs := invokeCLI(t, "\n  {}  \n", "--event", "-", "--handler", echo)
	if code != 0 || !strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("\n  {}  \n"))) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// sluice invoke -h documents the exit statuses.
func TestInvokeUsageNamesTheExitStatuses(t *testing.T) {
	code, _, errs := runCLI(t, "invoke", "-h")
	for _, w := range []string{"Exit status:", "0  the function answered", "1  the function failed", "2  usage", "3  the function could not be started"} {
		if !strings.Contains(errs, w) {
			t.Errorf("sluice invoke -h lacks %q:\n%s", w, errs)
		}
	}
	if code != 2 && code != 0 {
		t.Errorf("exit %d", code)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sluice run replays an event file's records through the mapping: here
// pretty-printed SQS and one-line Kafka events, as sam local
// generate-event and a function's log would hold them.
func TestRunEventFile(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	sqsPath, _ := sqsEvent(t, dir, "ok", "ok", "transient:1")
	kafkaPath := kafkaEvent(t, dir, "ok", "ok", "ok", "ok")
	for _, tc := range []struct {
		name, mapping, records, source, want string
	}{
		{"sqs", `{"EventSource":"sqs","BatchSize":2,"FunctionResponseTypes":["ReportBatchItemFailures"]}`, sqsPath, "sqs", "sqs mapping: 3 records"},
		{"kafka", `{"EventSource":"kafka","Mode":"provisioned","FunctionResponseTypes":["ReportBatchItemFailures"],"Partitions":2,"StartingPosition":"TRIM_HORIZON"}`, kafkaPath, "kafka", "kafka mapping: 4 records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mapping := write(t, t.TempDir(), "mapping.json", tc.mapping)
			code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", tc.records, "--handler", bin, "--quiet",
				"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_SOURCE="+tc.source, "--env", "SLUICE_RETRY_BACKOFF=1ms")
			if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "invariant no-record-lost: held") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
		})
	}
	t.Run("wrong source", func(t *testing.T) {
		mapping := write(t, t.TempDir(), "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON"}`)
		code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", sqsPath, "--handler", bin)
		if code != 1 || !strings.Contains(errs, "holds SQS events but the mapping's EventSource is \"kinesis\"") || !strings.Contains(errs, sqsPath) {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	t.Run("neither", func(t *testing.T) {
		mapping := write(t, t.TempDir(), "mapping.json", `{"EventSource":"sqs"}`)
		code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", write(t, dir, "x.json", "{\n  \"body\": \"x\"\n}\n"), "--handler", bin)
		if code != 1 || !strings.Contains(errs, "neither records (JSON lines) nor a Lambda event") || !strings.Contains(errs, "self-managed Kafka") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	// A binary key goes through as it is: no note, no U+FFFD.
	t.Run("binary key", func(t *testing.T) {
		b := &events.KafkaBuilder{Clock: fixedClock}
		b.Add("orders", 0, []byte{0xff, 'k'}, command("f1", "ok"))
		raw, err := events.MarshalEvent(b.Event())
		if err != nil {
			t.Fatal(err)
		}
		mapping := write(t, t.TempDir(), "mapping.json", `{"EventSource":"kafka","Mode":"provisioned","FunctionResponseTypes":["ReportBatchItemFailures"],"StartingPosition":"TRIM_HORIZON"}`)
		code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", write(t, dir, "binary-key.json", string(raw)), "--handler", bin,
			"--quiet", "--env", "SLUICE_SOURCE=kafka", "--effects", filepath.Join(t.TempDir(), "effects.jsonl"))
		if code != 0 || strings.Contains(errs, "note:") || !strings.Contains(out, "kafka mapping: 1 records") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
	})
}

func TestWithoutCloseLines(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"none", "a\nb\n", "a\nb\n"},
		{"adjacent", "localtest: started x (pid 7)\nout\nlocaltest: killing pid 7: closed\nlocaltest: pid 7 exited: signal: killed\n",
			"localtest: started x (pid 7)\nout\n"},
		{"output between", "localtest: killing pid 7: closed\nlate output\nlocaltest: pid 7 exited: signal: killed\n", "late output\n"},
		{"a timeout kill stays", "localtest: killing pid 6: timed out after 3s\nlocaltest: pid 6 exited: signal: killed\n" +
			"localtest: killing pid 7: closed\nlocaltest: pid 7 exited: signal: killed\n",
			"localtest: killing pid 6: timed out after 3s\nlocaltest: pid 6 exited: signal: killed\n"},
		{"a crash stays", "boom\nlocaltest: pid 8 exited: exit status 2\n", "boom\nlocaltest: pid 8 exited: exit status 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withoutCloseLines(tc.in); got != tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}

// The README's sluice invoke example, as written there: the event in
// examples/runner succeeds (the SAM samples' bodies are not the
// conformance function's commands, and fail to decode, as the README says).
func TestReadmeInvokeExample(t *testing.T) {
	bin := conformance(t)
	code, out, errs := runCLI(t, "invoke", "--event", "../../examples/runner/sqs-event.json", "--handler", bin, "--env", "SLUICE_SOURCE=sqs")
	if code != 0 || !strings.Contains(lastLine(errs), "sluice invoke: SQS event, 2 records in") || !strings.HasSuffix(lastLine(errs), ": success") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	readme := string(mustRead(t, "../../README.md"))
	if !strings.Contains(readme, "`sluice invoke --event examples/runner/sqs-event.json\n--handler ./bootstrap --env SLUICE_SOURCE=sqs`") {
		t.Fatal("the README's invoke example is no longer the one this test runs")
	}
	code, _, errs = runCLI(t, "invoke", "--event", "../../localtest/testdata/events/sam-sqs-receive-message.json", "--handler", bin, "--env", "SLUICE_SOURCE=sqs")
	if code != 1 || !strings.Contains(lastLine(errs), "function error: NoProgressError") || !strings.Contains(lastLine(errs), "invalid character 'H'") {
		t.Fatalf("the SAM sample: exit %d\n%s", code, errs)
	}
}
