package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
)

func cmd(id, action string) []byte {
	b, _ := json.Marshal(Command{ID: id, Action: action})
	return b
}

// event builds an event of the source with one record per action, ids "0",
// "1", ...; it returns the event bytes and each record's item identifier as
// it appears in a partial batch response (Kafka: "<partition>@<offset>").
// Kafka records go to partition i%2; SQS FIFO records to group "g<i%2>".
func event(t *testing.T, source string, actions ...string) ([]byte, []string) {
	t.Helper()
	var ev any
	ids := make([]string, len(actions))
	switch source {
	case "kinesis":
		b := &sevents.KinesisBuilder{}
		for i, a := range actions {
			b.Add(fmt.Sprintf("pk-%d", i%2), cmd(fmt.Sprint(i), a))
		}
		e := b.Event()
		for i, r := range e.Records {
			ids[i] = r.Kinesis.SequenceNumber
		}
		ev = e
	case "dynamodb":
		b := &sevents.DynamoDBBuilder{}
		for i, a := range actions {
			if err := b.Insert(map[string]string{"pk": fmt.Sprint("item-", i%2)}, map[string]string{"pk": fmt.Sprint("item-", i%2), "payload": string(cmd(fmt.Sprint(i), a))}); err != nil {
				t.Fatal(err)
			}
		}
		e := b.Event()
		for i, r := range e.Records {
			ids[i] = r.Change.SequenceNumber
		}
		ev = e
	case "sqs", "sqs-fifo":
		b := &sevents.SQSBuilder{}
		if source == "sqs-fifo" {
			b.QueueARN = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
		}
		for i, a := range actions {
			b.AddFIFO(string(cmd(fmt.Sprint(i), a)), fmt.Sprint("g", i%2), "")
		}
		e := b.Event()
		for i, r := range e.Records {
			ids[i] = r.MessageId
		}
		ev = e
	case "kafka":
		b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/demo/1"}
		offsets := map[int]int{}
		for i, a := range actions {
			p := i % 2
			b.Add("orders", int64(p), nil, cmd(fmt.Sprint(i), a))
			ids[i] = fmt.Sprintf("orders-%d@%d", p, offsets[p])
			offsets[p]++
		}
		ev = b.Event()
	default:
		t.Fatalf("unknown source %s", source)
	}
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return raw, ids
}

// reported parses a partial batch response into item identifiers.
func reported(t *testing.T, source string, out []byte) []string {
	t.Helper()
	got := []string{}
	if source == "kafka" {
		var r sevents.KafkaEventResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("response %s: %v", out, err)
		}
		for _, f := range r.BatchItemFailures {
			got = append(got, fmt.Sprintf("%s@%d", f.ItemIdentifier.Partition, f.ItemIdentifier.Offset))
		}
		return got
	}
	var r events.SQSEventResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	for _, f := range r.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	return got
}

func readEffects(t *testing.T, path string) []Effect {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Effect
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Effect
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("effects line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

func effectIDs(es []Effect) []string {
	ids := []string{}
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	return ids
}

// scenario is one invocation and what must come of it, per source.
type scenario struct {
	name    string
	actions []string
	// report and effects per source; a source missing from report expects
	// a function error.
	report  map[string][]int
	effects map[string][]string
}

var scenarios = []scenario{
	{
		name:    "all succeed",
		actions: []string{"ok", "ok", "transient:1", "sleep:5"},
		report:  map[string][]int{"kinesis": {}, "dynamodb": {}, "sqs": {}, "sqs-fifo": {}, "kafka": {}},
		effects: all([]string{"0", "1", "2", "3"}),
	},
	{
		// Kinesis/DynamoDB stop at record 2 and report it; SQS reports only
		// it; FIFO reports it and everything after; Kafka (partitions 0,1)
		// reports it and the later record of its partition (4).
		name:    "plain failure in the middle",
		actions: []string{"ok", "ok", "fail", "ok", "ok"},
		report:  map[string][]int{"kinesis": {2}, "dynamodb": {2}, "sqs": {2}, "sqs-fifo": {2, 3, 4}, "kafka": {2, 4}},
		effects: map[string][]string{"kinesis": {"0", "1"}, "dynamodb": {"0", "1"}, "sqs": {"0", "1", "3", "4"}, "sqs-fifo": {"0", "1"}, "kafka": {"0", "1", "3"}},
	},
	{
		name:    "panic, permanent and bad payload fail their records",
		actions: []string{"ok", "panic", "ok", "permanent", "ok", "!notjson"},
		report:  map[string][]int{"kinesis": {1}, "dynamodb": {1}, "sqs": {1, 3, 5}, "sqs-fifo": {1, 2, 3, 4, 5}, "kafka": {1, 3, 5}},
		effects: map[string][]string{"kinesis": {"0"}, "dynamodb": {"0"}, "sqs": {"0", "2", "4"}, "sqs-fifo": {"0"}, "kafka": {"0", "2", "4"}},
	},
	{
		name:    "nothing succeeds: function error so Lambda can bisect",
		actions: []string{"fail", "transient:9"},
		report:  map[string][]int{},
		effects: all(nil),
	},
}

func all(ids []string) map[string][]string {
	m := map[string][]string{}
	for _, s := range Sources {
		m[s] = ids
	}
	return m
}

// replaceBadPayload swaps the "!notjson" command for bytes that are not
// JSON at all, in whatever encoding the source uses.
func replaceBadPayload(t *testing.T, source string, raw []byte, actions []string) []byte {
	for i, a := range actions {
		if a != "!notjson" {
			continue
		}
		var m any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		good := string(cmd(fmt.Sprint(i), a))
		bad := "{not json"
		s := string(raw)
		switch source {
		case "kinesis", "kafka":
			s = strings.Replace(s, b64(good), b64(bad), 1)
		case "sqs", "sqs-fifo", "dynamodb":
			g, _ := json.Marshal(good)
			bb, _ := json.Marshal(bad)
			s = strings.Replace(s, string(g[1:len(g)-1]), string(bb[1:len(bb)-1]), 1)
		}
		if s == string(raw) {
			t.Fatalf("%s: bad payload not substituted", source)
		}
		raw = []byte(s)
	}
	return raw
}

func b64(s string) string {
	b, _ := json.Marshal([]byte(s))
	return string(b[1 : len(b)-1])
}

func check(t *testing.T, source string, sc scenario, ids []string, out []byte, err error, effects []Effect) {
	t.Helper()
	want, partial := sc.report[source]
	if !partial {
		if err == nil {
			t.Fatalf("want a function error, got %s", out)
		}
	} else {
		if err != nil {
			t.Fatalf("unexpected function error: %v", err)
		}
		var wantIDs []string
		for _, i := range want {
			wantIDs = append(wantIDs, ids[i])
		}
		if got := reported(t, source, out); !slices.Equal(got, wantIDs) && !(len(got) == 0 && len(wantIDs) == 0) {
			t.Fatalf("reported %v, want %v", got, wantIDs)
		}
	}
	// Each effect names its record as the runner and partial batch
	// responses do.
	for _, e := range effects {
		if !slices.Contains(ids, e.Record) {
			t.Fatalf("effect %+v: record is not one of the batch's identifiers %v", e, ids)
		}
	}
	wantEff := slices.Clone(sc.effects[source])
	slices.Sort(wantEff)
	if got := effectIDs(effects); !slices.Equal(got, wantEff) && !(len(got) == 0 && len(wantEff) == 0) {
		t.Fatalf("effects %v, want %v", got, wantEff)
	}
}

func TestInProcess(t *testing.T) {
	for _, source := range Sources {
		for _, sc := range scenarios {
			t.Run(source+"/"+sc.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "effects.jsonl")
				h, err := newHandler(source, path, handlers.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					t.Fatal(err)
				}
				raw, ids := event(t, source, sc.actions...)
				raw = replaceBadPayload(t, source, raw, sc.actions)
				out, err := h.Invoke(context.Background(), raw)
				check(t, source, sc, ids, out, err, readEffects(t, path))
			})
		}
	}
}

func TestUnknownSource(t *testing.T) {
	if _, err := newHandler("kinesis-firehose", ""); err == nil || !strings.Contains(err.Error(), "kinesis | ") && !strings.Contains(err.Error(), "kinesis, dynamodb") {
		t.Fatalf("want an error listing the sources, got %v", err)
	}
}

func TestEffectsKeepOrderPerKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "effects.jsonl")
	h, _ := newHandler("kinesis", path, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithKeyConcurrency(3))
	actions := make([]string, 200)
	for i := range actions {
		actions[i] = "ok"
	}
	raw, _ := event(t, "kinesis", actions...)
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	last := map[string]int{}
	for _, e := range readEffects(t, path) {
		var n int
		fmt.Sscan(e.ID, &n)
		if p, ok := last[e.Key]; ok && p > n {
			t.Fatalf("key %s: %d after %d", e.Key, n, p)
		}
		last[e.Key] = n
	}
	if len(last) != 2 {
		t.Fatalf("keys %v", last)
	}
}

// The same scenarios through the real Lambda Runtime Interface Emulator,
// with the handler built as Lambda runs it.
func TestThroughRuntimeInterfaceEmulator(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	for _, source := range Sources {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for i, sc := range scenarios {
				path := filepath.Join(dir, fmt.Sprintf("effects-%d.jsonl", i))
				fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", source), rie.Env("SLUICE_EFFECTS_FILE", path), rie.Timeout(10*time.Second))
				raw, ids := event(t, source, sc.actions...)
				raw = replaceBadPayload(t, source, raw, sc.actions)
				out, err := fn.Invoke(context.Background(), raw)
				var fe *rie.FunctionError
				if err != nil && !errors.As(err, &fe) {
					t.Fatalf("%s: invoke: %v", sc.name, err)
				}
				t.Run(sc.name, func(t *testing.T) { check(t, source, sc, ids, out, err, readEffects(t, path)) })
				if err := fn.Stop(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestRIEDeadlineGuardAnswersBeforeTimeout(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	path := filepath.Join(t.TempDir(), "effects.jsonl")
	fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "kinesis"), rie.Env("SLUICE_EFFECTS_FILE", path), rie.Timeout(2*time.Second))
	// Each record sleeps 600 ms; the 2 s timeout minus the 500 ms margin
	// leaves room for two, the third is cut short by its context, the rest
	// are never started. Lambda must get an answer, not a timeout.
	raw, ids := event(t, "kinesis", "sleep:600", "sleep:600", "sleep:600", "sleep:600", "sleep:600")
	out, err := fn.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatalf("want a partial response before the timeout, got %v", err)
	}
	if got := reported(t, "kinesis", out); !slices.Equal(got, []string{ids[2]}) {
		t.Fatalf("reported %v, want [%s]", got, ids[2])
	}
	if got := effectIDs(readEffects(t, path)); !slices.Equal(got, []string{"0", "1"}) {
		t.Fatalf("effects %v", got)
	}
}

func TestRIETimeoutWithoutMarginKillsTheFunction(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "sqs"), rie.Timeout(time.Second))
	// A record that sleeps past the deadline on a handler whose records
	// honour ctx still answers; Lambda's timeout is the backstop for code
	// that does not. Here the margin saves the invocation.
	raw, ids := event(t, "sqs", "sleep:3000", "ok")
	out, err := fn.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatalf("want a partial response, got %v", err)
	}
	if got := reported(t, "sqs", out); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("reported %v, want [%s]", got, ids[0])
	}
}

func TestRIEContractCheckFailsInit(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "kinesis"), rie.Env(handlers.EnvReportBatchItemFailures, "false"), rie.Timeout(5*time.Second))
	raw, _ := event(t, "kinesis", "ok")
	// The process exits at init; RIE answers 502 (Lambda: Runtime.ExitError).
	if out, err := fn.Invoke(context.Background(), raw); err == nil {
		t.Fatalf("want the function to fail at init, got %s", out)
	}
	// The process's last words reach the test through the emulator's pipe,
	// possibly after the failed answer: wait for them (5 s at most).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	waitFor(ctx, t, "the init failure to say why (ReportBatchItemFailures) in the function's output", func() (bool, error) {
		return strings.Contains(fn.Logs(), "ReportBatchItemFailures"), nil
	})
}

func TestRIETransientAcrossInvocations(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	path := filepath.Join(t.TempDir(), "effects.jsonl")
	fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "sqs"), rie.Env("SLUICE_EFFECTS_FILE", path), rie.Timeout(10*time.Second))
	// transient:4 fails 3 calls (1 + 2 retries) in the first invocation and
	// succeeds on the second call of the next: the process keeps its count.
	raw, ids := event(t, "sqs", "ok", "transient:4")
	out, err := fn.Invoke(context.Background(), raw)
	if err != nil || !slices.Equal(reported(t, "sqs", out), []string{ids[1]}) {
		t.Fatalf("first invocation: %s %v", out, err)
	}
	out, err = fn.Invoke(context.Background(), raw)
	if err != nil || len(reported(t, "sqs", out)) != 0 {
		t.Fatalf("second invocation: %s %v", out, err)
	}
	if got := effectIDs(readEffects(t, path)); !slices.Equal(got, []string{"0", "0", "1"}) {
		t.Fatalf("effects %v", got)
	}
}

func TestRIEWritesMetricsWithoutConfiguration(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "sqs"), rie.Timeout(10*time.Second))
	raw, _ := event(t, "sqs", "ok", "fail")
	if _, err := fn.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	// The output reaches the test through the emulator's pipe, possibly
	// after the answer: wait for the metrics line (5 s at most).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	waitFor(ctx, t, "an Embedded Metric Format line in the function's output", func() (bool, error) {
		return strings.Contains(fn.Logs(), `{"_aws":`), nil
	})
	var found bool
	for _, line := range strings.Split(fn.Logs(), "\n") {
		i := strings.Index(line, `{"_aws":`)
		if i < 0 {
			continue
		}
		var m struct {
			AWS struct {
				CloudWatchMetrics []struct{ Namespace string }
			} `json:"_aws"`
			Received float64 `json:"RecordsReceived"`
			Failed   float64 `json:"RecordsFailed"`
		}
		if err := json.Unmarshal([]byte(line[i:]), &m); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		if len(m.AWS.CloudWatchMetrics) != 1 || m.AWS.CloudWatchMetrics[0].Namespace != "Sluice/Conformance" || m.Received != 2 || m.Failed != 1 {
			t.Fatalf("metrics line %s", line[i:])
		}
		found = true
	}
	if !found {
		t.Fatalf("no Embedded Metric Format line in the function's output:\n%s", fn.Logs())
	}
}
