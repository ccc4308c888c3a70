package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
)

func TestAcknowledged(t *testing.T) {
	tests := []struct {
		name  string
		lanes [][]string
		v     invocation.Verdict
		want  []int
	}{
		{"success", [][]string{{"1", "2", "3"}}, invocation.Verdict{Outcome: invocation.OutcomeSuccess}, []int{3}},
		{"function error", [][]string{{"1", "2"}}, invocation.Verdict{Outcome: invocation.OutcomeFunctionError}, []int{0}},
		{"invalid answer", [][]string{{"1", "2"}}, invocation.Verdict{Outcome: invocation.OutcomeBatchFailure}, []int{0}},
		{"partial: the head of the first reported", [][]string{{"1", "2", "3", "4"}}, invocation.Verdict{Outcome: invocation.OutcomePartial, Reported: []string{"3"}}, []int{2}},
		{"partial: the lowest of several", [][]string{{"1", "2", "3", "4"}}, invocation.Verdict{Outcome: invocation.OutcomePartial, Reported: []string{"4", "2"}}, []int{1}},
		{"partial: the first fails", [][]string{{"1", "2"}}, invocation.Verdict{Outcome: invocation.OutcomePartial, Reported: []string{"1"}}, []int{0}},
		{"kafka: per partition", [][]string{{"t-0@0", "t-0@1"}, {"t-1@5", "t-1@6", "t-1@7"}, {"t-2@0"}},
			invocation.Verdict{Outcome: invocation.OutcomePartial, Reported: []string{"t-1@6"}}, []int{2, 1, 1}},
		{"kafka: function error stops all", [][]string{{"t-0@0"}, {"t-1@0"}}, invocation.Verdict{Outcome: invocation.OutcomeFunctionError}, []int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := acknowledged(tt.lanes, tt.v); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("acknowledged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParsePosition(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want Position
		err  bool
	}{
		{"", Position{}, false},
		{"now", Position{}, false},
		{"TRIM_HORIZON", Position{TrimHorizon: true}, false},
		{"trim_horizon", Position{TrimHorizon: true}, false},
		{"2026-12-01T10:00:00Z", Position{Time: at}, false},
		{"49590338271490256608559692538361571095921575989136588898", Position{Number: "49590338271490256608559692538361571095921575989136588898"}, false},
		{"42", Position{Number: "42"}, false},
		{"-1", Position{}, true},
		{"2026-12-01", Position{}, true},
		{"LATEST", Position{}, true},
	}
	for _, tt := range tests {
		got, err := ParsePosition(tt.in)
		if (err != nil) != tt.err || !got.Time.Equal(tt.want.Time) || got.Number != tt.want.Number || got.TrimHorizon != tt.want.TrimHorizon {
			t.Errorf("ParsePosition(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestPickLanes(t *testing.T) {
	all := []string{"s-0", "s-1"}
	tests := []struct {
		name string
		want []string
		r    Range
		out  string
		err  string
	}{
		{"all", nil, Range{}, "[s-0 s-1]", ""},
		{"one", []string{"s-1"}, Range{}, "[s-1]", ""},
		{"twice", []string{"s-1", "s-1"}, Range{}, "[s-1]", ""},
		{"unknown", []string{"s-9"}, Range{}, "", "has no shard s-9 (it has s-0, s-1)"},
		{"a number needs one", nil, Range{From: Position{Number: "5"}}, "", "belongs to one shard, and stream has 2"},
		{"a number with one", []string{"s-0"}, Range{To: Position{Number: "5"}}, "[s-0]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickLanes(all, tt.want, tt.r, "shard", "stream")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tt.out {
				t.Fatalf("%v, %v; want %s", got, err, tt.out)
			}
		})
	}
	if _, err := pickLanes(nil, nil, Range{}, "shard", "stream"); err == nil {
		t.Error("a stream without shards must be an error")
	}
}

func TestCompareNumbers(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"9", "10", -1}, {"10", "9", 1}, {"007", "7", 0}, {"123", "124", -1}} {
		if got := compareNumbers(tt.a, tt.b); got != tt.want {
			t.Errorf("compareNumbers(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp.json")
	if cp, err := readCheckpoint(path); cp != nil || err != nil {
		t.Fatalf("a missing file: %v %v", cp, err)
	}
	cp := &checkpoint{Version: checkpointVersion, Source: "kinesis", Stream: "arn:s", Function: "f", Positions: map[string]string{"s-0": "12"}}
	if err := cp.write(path, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got, err := readCheckpoint(path)
	if err != nil || got.Positions["s-0"] != "12" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for _, tt := range []struct {
		source           events.Source
		stream, function string
		shadow           bool
		err              string
	}{
		{"kinesis", "arn:s", "f", false, ""},
		{"kinesis", "arn:other", "f", false, "it is of kinesis arn:s, not kinesis arn:other"},
		{"kinesis", "arn:s", "g", false, `it is function "f"'s, not "g"'s`},
		{"kinesis", "arn:s", "f", true, "a production replay, and this is a shadow replay"},
	} {
		err := got.matches(tt.source, tt.stream, tt.function, tt.shadow)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("matches(%s %s %s %v) = %v, want %q", tt.source, tt.stream, tt.function, tt.shadow, err, tt.err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the write left %d files, want the checkpoint alone", len(entries))
	}
	for name, body := range map[string]string{
		"not json":    "{",
		"old version": `{"version":7}`,
		"bad number":  `{"version":1,"positions":{"s-0":"x"}}`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := readCheckpoint(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// fakeStream is a stream of Kinesis records in memory: one lane per shard.
type fakeStream struct {
	shards map[string][]rec
	order  []string
	kafka  bool
}

func kinesisRec(shard string, i int) rec {
	seq := fmt.Sprintf("%03d", i)
	ev := fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"%s:%s","eventName":"aws:kinesis:record","eventSource":"aws:kinesis",`+
		`"eventSourceARN":"arn:aws:kinesis:us-east-1:1:stream/s","eventVersion":"1.0","invokeIdentityArn":"arn:aws:iam::1:role/r",`+
		`"kinesis":{"approximateArrivalTimestamp":1,"data":"e30=","partitionKey":"pk","sequenceNumber":"%s","kinesisSchemaVersion":"1.0"}}`, shard, seq, seq)
	return rec{id: seq, pos: seq, env: &dlq.Envelope{Version: dlq.Version, Source: events.SourceKinesis, SourceARN: "arn:aws:kinesis:us-east-1:1:stream/s",
		Shard: shard, RecordID: seq, Record: json.RawMessage(ev)}}
}

func newFake(shards map[string]int) *fakeStream {
	f := &fakeStream{shards: map[string][]rec{}}
	for sh, n := range shards {
		for i := range n {
			f.shards[sh] = append(f.shards[sh], kinesisRec(sh, i))
		}
		f.order = append(f.order, sh)
	}
	return f
}

func (f *fakeStream) open(_ context.Context, r Range, cp map[string]string, _ time.Time) (events.Source, string, []*lane, error) {
	var lanes []*lane
	for _, sh := range f.order {
		recs := f.shards[sh]
		next := 0
		if p := cp[sh]; p != "" {
			for i, rc := range recs {
				if rc.pos == p {
					next = i + 1
				}
			}
		}
		lanes = append(lanes, &lane{id: sh, fill: func(_ context.Context, n int) ([]rec, bool, error) {
			end := min(next+n, len(recs))
			out := recs[next:end]
			next = end
			return out, next == len(recs), nil
		}})
	}
	if f.kafka {
		return events.SourceKafka, "t", lanes, nil
	}
	return events.SourceKinesis, "arn:aws:kinesis:us-east-1:1:stream/s", lanes, nil
}

func kafkaRec(partition, offset int64) rec {
	id := fmt.Sprintf("t-%d@%d", partition, offset)
	p, o := partition, offset
	ev := fmt.Sprintf(`{"topic":"t","partition":%d,"offset":%d,"timestamp":1,"timestampType":"CREATE_TIME","value":"e30=","headers":[]}`, p, o)
	return rec{id: id, pos: fmt.Sprint(o), env: &dlq.Envelope{Version: dlq.Version, Source: events.SourceKafka, Topic: "t", Partition: &p, Offset: &o,
		RecordID: id, Record: json.RawMessage(ev)}}
}
func (f *fakeStream) payload(recs []rec) ([]byte, error) { return envelopeEvent(recs) }
func (f *fakeStream) close()                             {}

// fakeInvoker answers each event: records whose sequence number is in
// fail are reported in a partial batch response.
type fakeInvoker struct {
	fail   map[string]bool
	events [][]string
}

func (f *fakeInvoker) Invoke(_ context.Context, inv invocation.Invocation) (invocation.Response, error) {
	ev, err := invocation.ParseEvent(inv.Payload)
	if err != nil {
		return invocation.Response{}, err
	}
	f.events = append(f.events, ev.Items())
	var failures []string
	for _, id := range ev.Items() {
		if !f.fail[id] {
			continue
		}
		if part, off, ok := strings.Cut(id, "@"); ok { // Kafka: {partition, offset}
			failures = append(failures, fmt.Sprintf(`{"itemIdentifier":{"partition":%q,"offset":%s}}`, part, off))
			continue
		}
		failures = append(failures, fmt.Sprintf(`{"itemIdentifier":%q}`, id))
	}
	return invocation.Response{Payload: []byte(`{"batchItemFailures":[` + strings.Join(failures, ",") + `]}`)}, nil
}
func (f *fakeInvoker) Close() error { return nil }

func TestRunBatchesCheckpointsAndStops(t *testing.T) {
	dir := t.TempDir()
	cp := filepath.Join(dir, "cp.json")
	s := newFake(map[string]int{"shardId-0": 5})
	s.order = []string{"shardId-0"}
	inv := &fakeInvoker{}
	sum, err := Run(context.Background(), s, Range{}, Options{Invoker: inv, BatchSize: 2, Checkpoint: cp, MaxBatches: 2})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(inv.events) != "[[000 001] [002 003]]" || !strings.Contains(sum.Stopped, "after 2 events") || sum.Positions["shardId-0"] != "003" {
		t.Fatalf("first run: events %v, summary %+v", inv.events, sum)
	}
	// Resumed: the rest, and a failure in it stops the shard.
	s = newFake(map[string]int{"shardId-0": 5})
	inv = &fakeInvoker{}
	sum, err = Run(context.Background(), s, Range{}, Options{Invoker: inv, BatchSize: 2, Checkpoint: cp})
	if err != nil || fmt.Sprint(inv.events) != "[[004]]" || sum.Resumed["shardId-0"] != "003" || sum.Stopped != "" || len(sum.Failures) != 0 {
		t.Fatalf("resumed: events %v, summary %+v, %v", inv.events, sum, err)
	}
	// MaxBatches reached with nothing left is not a stop.
	sum, _ = Run(context.Background(), newFake(map[string]int{"shardId-0": 5}), Range{}, Options{Invoker: &fakeInvoker{}, BatchSize: 10, MaxBatches: 1})
	if sum.Stopped != "" || sum.Events != 1 {
		t.Fatalf("one event of all records with MaxBatches 1: %+v", sum)
	}

	cp2 := filepath.Join(dir, "cp2.json")
	inv = &fakeInvoker{fail: map[string]bool{"002": true}}
	s = newFake(map[string]int{"shardId-0": 5, "shardId-1": 2})
	s.order = []string{"shardId-0", "shardId-1"}
	sum, err = Run(context.Background(), s, Range{}, Options{Invoker: inv, BatchSize: 2, Checkpoint: cp2})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(inv.events) != "[[000 001] [002 003] [000 001]]" {
		t.Fatalf("events %v: the failed shard must stop at 002 and the other go on", inv.events)
	}
	if len(sum.Failures) != 1 || sum.Failures[0].Lane != "shardId-0" || sum.Failures[0].Record != "002" || sum.Positions["shardId-0"] != "001" || sum.Positions["shardId-1"] != "001" {
		t.Fatalf("summary %+v", sum)
	}
	got, _ := readCheckpoint(cp2)
	if got.Positions["shardId-0"] != "001" {
		t.Fatalf("checkpoint %+v: want shardId-0 before the failed record", got.Positions)
	}
}

func TestRunDryRun(t *testing.T) {
	var out bytes.Buffer
	cp := filepath.Join(t.TempDir(), "cp.json")
	sum, err := Run(context.Background(), newFake(map[string]int{"shardId-0": 3}), Range{}, Options{DryRun: true, DryRunOut: &out, BatchSize: 2, Checkpoint: cp})
	if err != nil || sum.Events != 2 || sum.Records != 3 {
		t.Fatalf("%+v %v", sum, err)
	}
	if !strings.Contains(out.String(), "event 1: kinesis, 2 records from arn:aws:kinesis:us-east-1:1:stream/s shardId-0: 000, 001\n{\"Records\":[") {
		t.Fatalf("dry run output:\n%s", out.String())
	}
	if _, err := os.Stat(cp); !os.IsNotExist(err) {
		t.Fatal("a dry run wrote a checkpoint")
	}
}

func TestPace(t *testing.T) {
	now := time.Unix(1000, 0)
	var slept []time.Duration
	r := &run{opts: Options{Rate: 10, BatchRate: 1, now: func() time.Time { return now },
		sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); now = now.Add(d); return nil }}}
	r.next = now
	for _, n := range []int{5, 20, 1} {
		if err := r.pace(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	// 5 records: max(0.5 s, 1 s) = 1 s; 20 records: 2 s.
	if fmt.Sprint(slept) != "[1s 2s]" {
		t.Fatalf("slept %v, want [1s 2s]", slept)
	}
}

func TestKafkaPayloadAddsBootstrapServers(t *testing.T) {
	p, o := int64(0), int64(4)
	k := &kafkaStream{env: invocation.KafkaEnvelope{EventSource: "aws:kafka", EventSourceARN: "arn:aws:kafka:us-east-1:1:cluster/c/1", BootstrapServers: "b:9092"}}
	record := `{"topic":"t","partition":0,"offset":4,"timestamp":1,"timestampType":"CREATE_TIME","value":"e30=","headers":[]}`
	b, err := k.payload([]rec{{id: "t-0@4", env: &dlq.Envelope{Version: dlq.Version, Source: events.SourceKafka, SourceARN: k.env.EventSourceARN,
		Topic: "t", Partition: &p, Offset: &o, RecordID: "t-0@4", Record: json.RawMessage(record)}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:us-east-1:1:cluster/c/1","bootstrapServers":"b:9092","records":{"t-0":[` + record + `]}}`
	if string(b) != want {
		t.Fatalf("payload\n%s\nwant\n%s", b, want)
	}
}

// Kafka partitions share an event and take turns at its head; a failed
// record stops its partition only.
func TestRunKafkaPartitionsShareEvents(t *testing.T) {
	f := &fakeStream{kafka: true, shards: map[string][]rec{}, order: []string{"t-0", "t-1"}}
	for o := range int64(4) {
		f.shards["t-0"] = append(f.shards["t-0"], kafkaRec(0, o))
	}
	f.shards["t-1"] = []rec{kafkaRec(1, 0), kafkaRec(1, 1)}
	inv := &fakeInvoker{fail: map[string]bool{"t-1@1": true}}
	sum, err := Run(context.Background(), f, Range{}, Options{Invoker: inv, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Event 1: t-0 first (2 records); event 2: t-1 first (t-1@0, t-1@1,
	// which fails); then t-0 alone.
	if got := fmt.Sprint(inv.events); got != "[[t-0@0 t-0@1] [t-1@0 t-1@1] [t-0@2 t-0@3]]" {
		t.Fatalf("events %s", got)
	}
	if len(sum.Failures) != 1 || sum.Failures[0].Record != "t-1@1" || sum.Positions["t-1"] != "0" || sum.Positions["t-0"] != "3" {
		t.Fatalf("summary %+v", sum)
	}
}
