package redrive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/invocation"
)

// The event rebuilt from the envelopes of a Lambda event's records is that
// event, byte for byte.
func TestEventIsByteIdentical(t *testing.T) {
	ddb := &sevents.DynamoDBBuilder{}
	for i := range 3 {
		if err := ddb.Insert(map[string]any{"pk": fmt.Sprint("k", i)}, map[string]any{"pk": fmt.Sprint("k", i), "n": i, "tags": []string{"a", "b"}}); err != nil {
			t.Fatal(err)
		}
	}
	fifo := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}
	fifo.AddFIFO(`{"id":"a"}`, "g1", "d1").AddFIFO(`{"id":"b"}`, "g2", "d2").AddRedelivered(`{"id":"c"}`, 4)
	tests := []struct {
		name string
		ev   any
	}{
		{"kinesis", kinesisEvent(4, func(i int) string { return fmt.Sprintf(`{"id":"k%d","note":"<&>\u2028"}`, i) })},
		{"kinesis binary", kinesisEvent(2, func(i int) string { return string([]byte{0xff, 0, byte(i)}) })},
		{"dynamodb", ddb.Event()},
		{"sqs", sqsEvent(3, func(i int) string { return fmt.Sprintf(`{"id":"m%d","html":"<b>"}`, i) })},
		{"sqs fifo", fifo.Event()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := marshal(t, tt.ev)
			envs := envelopes(t, want)
			// Through the wire format and back, as a redrive reads them.
			var back []*dlq.Envelope
			for _, line := range strings.Split(strings.TrimSpace(lines(t, envs)), "\n") {
				e, err := dlq.Unmarshal([]byte(line))
				if err != nil {
					t.Fatal(err)
				}
				back = append(back, e)
			}
			got, err := Event(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("rebuilt event differs:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestEventSAMSample(t *testing.T) {
	raw, err := os.ReadFile("../../localtest/testdata/events/sam-kinesis-get-records.json")
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		t.Fatal(err)
	}
	got, err := Event(envelopes(t, compact.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, compact.Bytes()) {
		t.Fatalf("got %s\nwant %s", got, compact.Bytes())
	}
}

func TestEventKafka(t *testing.T) {
	for _, arn := range []string{"arn:aws:kafka:us-east-1:123456789012:cluster/c/1", ""} {
		b := &sevents.KafkaBuilder{EventSourceARN: arn}
		b.Add("orders", 1, []byte("k"), []byte(`{"id":"a"}`), sevents.KafkaHeader{Key: "h", Value: []byte{0x80, 1}})
		b.Add("orders", 0, nil, []byte(`{"id":"b"}`))
		b.Add("orders", 1, []byte("k2"), []byte(`{"id":"c"}`))
		b.Add("audit", 3, nil, []byte(`{"id":"d"}`))
		orig := marshal(t, b.Event())
		envs := envelopes(t, orig)
		sortForEvent(envs)
		got, err := Event(envs)
		if err != nil {
			t.Fatal(err)
		}
		var o, g map[string]json.RawMessage
		if err := json.Unmarshal(orig, &o); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		wantSource := `"aws:kafka"`
		if arn == "" {
			wantSource = `"SelfManagedKafka"`
		}
		if string(g["eventSource"]) != wantSource || string(g["eventSourceArn"]) != string(o["eventSourceArn"]) {
			t.Errorf("envelope fields: %s", got)
		}
		// Each partition's list is the original's, byte for byte.
		var op, gp map[string]json.RawMessage
		json.Unmarshal(o["records"], &op)
		json.Unmarshal(g["records"], &gp)
		if len(op) != len(gp) {
			t.Fatalf("partitions: got %s, want %s", g["records"], o["records"])
		}
		for k, v := range op {
			if !bytes.Equal(v, gp[k]) {
				t.Errorf("partition %s: got %s, want %s", k, gp[k], v)
			}
		}
		if !strings.HasPrefix(string(g["records"]), `{"audit-3":`) {
			t.Errorf("partitions not in order: %s", g["records"])
		}
	}
}

func TestEventRefuses(t *testing.T) {
	kin := envelopes(t, marshal(t, kinesisEvent(2, func(i int) string { return "x" })))
	sqs := envelopes(t, marshal(t, sqsEvent(1, func(int) string { return "{}" })))
	other := *kin[1]
	other.Shard = "shardId-000000000007"
	truncated := *kin[0]
	truncated.Truncated = &dlq.Truncation{OriginalBytes: 2_000_000, Marker: "cut"}
	truncated.Record = json.RawMessage(`"{\"kinesis\":"`)
	wrongID := *kin[0]
	wrongID.RecordID = "123"
	wrongSource := *sqs[0]
	wrongSource.Source = sevents.SourceKinesis
	notObject := *sqs[0]
	notObject.Record = json.RawMessage(`[1]`)
	tests := []struct {
		name string
		envs []*dlq.Envelope
		want string
	}{
		{"none", nil, "no envelopes"},
		{"two shards", []*dlq.Envelope{kin[0], &other}, "cannot share an event"},
		{"two sources", []*dlq.Envelope{kin[0], sqs[0]}, "cannot share an event"},
		{"truncated", []*dlq.Envelope{&truncated}, "sluice fetch-failed"},
		{"record id differs", []*dlq.Envelope{&wrongID}, `own identifier is "4959`},
		{"source differs", []*dlq.Envelope{&wrongSource}, "says source kinesis but the record is of SQS"},
		{"record not an object", []*dlq.Envelope{&notObject}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Event(tt.envs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if tt.name == "truncated" && !errors.Is(err, ErrTruncated) {
				t.Errorf("not ErrTruncated: %v", err)
			}
		})
	}
}

func TestCompareSequence(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"9", "10", -1},
		{"49590338271490256608559692538361571095921575989136588898", "49590338271490256608559692538361571095921575989136588899", -1},
		{"010", "9", 1},
		{"5", "5", 0},
		{"5", "x", -1},
		{"x", "5", 1},
		{"a", "b", -1},
	}
	for _, tt := range tests {
		if got := compareSequence(tt.a, tt.b); got != tt.want {
			t.Errorf("compareSequence(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestAcknowledged(t *testing.T) {
	partial := func(ids ...string) invocation.Verdict {
		return invocation.Verdict{Outcome: invocation.OutcomePartial, Reported: ids}
	}
	tests := []struct {
		name   string
		source sevents.Source
		ids    []string
		v      invocation.Verdict
		want   string // acknowledged ids, in order
	}{
		{"success", sevents.SourceKinesis, []string{"1", "2"}, invocation.Verdict{Outcome: invocation.OutcomeSuccess}, "1 2"},
		{"function error", sevents.SourceSQS, []string{"a", "b"}, invocation.Verdict{Outcome: invocation.OutcomeFunctionError}, ""},
		{"batch failure", sevents.SourceKafka, []string{"t-0@1"}, invocation.Verdict{Outcome: invocation.OutcomeBatchFailure}, ""},
		{"sqs partial", sevents.SourceSQS, []string{"a", "b", "c"}, partial("b"), "a c"},
		{"fifo partial", sevents.SourceSQSFIFO, []string{"a", "b", "c"}, partial("b", "c"), "a"},
		{"kinesis partial", sevents.SourceKinesis, []string{"1", "2", "3", "4"}, partial("3"), "1 2"},
		{"dynamodb partial at head", sevents.SourceDynamoDB, []string{"1", "2"}, partial("1"), ""},
		{"kafka partial", sevents.SourceKafka, []string{"a-0@5", "a-0@6", "a-0@7", "a-1@1", "b-0@9"}, partial("a-0@6"), "a-0@5 a-1@1 b-0@9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := acknowledged(tt.source, tt.ids, tt.v)
			var got []string
			for _, id := range tt.ids {
				if ok[id] {
					got = append(got, id)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("got %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	a := &sevents.KinesisBuilder{ShardID: "shardId-000000000001"}
	b := &sevents.KinesisBuilder{ShardID: "shardId-000000000002"}
	for i := range 5 {
		a.Add("pk", []byte(fmt.Sprint(i)))
		b.Add("pk", []byte(fmt.Sprint(i)))
	}
	ea := envelopes(t, marshal(t, a.Event()))
	eb := envelopes(t, marshal(t, b.Event()))
	// Read out of order and interleaved.
	order := []*dlq.Envelope{ea[3], eb[0], ea[0], ea[4], eb[1], ea[1], ea[2]}
	var items []*item
	for _, e := range order {
		items = append(items, &item{env: e})
	}
	var got []string
	for _, batch := range plan(items, 2) {
		var ids []string
		for _, it := range batch {
			ids = append(ids, it.env.Shard[len(it.env.Shard)-1:]+":"+it.env.RecordID[len(it.env.RecordID)-1:])
		}
		got = append(got, strings.Join(ids, ","))
	}
	// Shard 1 first (met first), in sequence order, two per event.
	want := "1:0,1:1 1:2,1:3 1:4 2:0,2:1"
	if strings.Join(got, " ") != want {
		t.Fatalf("plan: %s, want %s", strings.Join(got, " "), want)
	}
}
