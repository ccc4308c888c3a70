package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/engine"
)

// effects records each run of a record, by its id, in order.
type effects struct {
	mu   sync.Mutex
	runs []string
}

func (e *effects) add(id string) {
	e.mu.Lock()
	e.runs = append(e.runs, id)
	e.mu.Unlock()
}

func (e *effects) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.runs
	e.runs = nil
	return out
}

// kinesisLane is a Kinesis handler with idempotency on store whose
// function runs a record as its payload's action says (act), unless
// broken lets every record through: it records each run in e.
func kinesisLane(t *testing.T, store idempotency.Store, e *effects, extra ...Option) *KinesisHandler[msg] {
	t.Helper()
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		e.add(r.Value.ID)
		return act(r.Value.Action)
	}, append([]Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(fnEnv), WithoutRetry(), WithIdempotency(store)}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// addRecords adds records of one shard with ids and actions.
func addRecords(b *sevents.KinesisBuilder, pk string, idActions ...string) {
	for _, ia := range idActions {
		id, action, _ := strings.Cut(ia, ":")
		if action == "" {
			action = "ok"
		}
		b.Add(pk, payload(id, action))
	}
}

// eventOf is a Kinesis event of some of b's records (by index).
func eventOf(t *testing.T, b *sevents.KinesisBuilder, idx ...int) []byte {
	t.Helper()
	all := b.Event().Records
	var ev events.KinesisEvent
	for _, i := range idx {
		ev.Records = append(ev.Records, all[i])
	}
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func span(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestLanesQuarantineAndRedrive: a Kinesis record quarantined (it fails
// permanently) lets its shard go on; the same batch delivered again runs
// only it; once its cause is mended, its redrive runs it once, and a
// second redrive finds it done.
func TestLanesQuarantineAndRedrive(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	b := &sevents.KinesisBuilder{}
	addRecords(b, "pk", "r0", "r1", "r2:permanent", "r3", "r4")
	dest := &sink{}
	var rep BatchReport
	mended := false
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		e.add(r.Value.ID)
		if mended {
			return nil
		}
		return act(r.Value.Action)
	}, dlOpts(&rep, dest, []dlq.Option{dlq.WithAttempts(dlq.NewMemory(0))}, WithIdempotency(store))...)
	if err != nil {
		t.Fatal(err)
	}
	all := eventOf(t, b, span(0, 4)...)
	if f := invoke(t, h, all); len(f) != 0 || len(dest.ids()) != 1 {
		t.Fatalf("reported %v, quarantined %v; want r2 quarantined and the shard on", f, dest.ids())
	}
	if got := e.take(); !slices.Equal(got, []string{"r0", "r1", "r2", "r3", "r4"}) {
		t.Fatalf("ran %v", got)
	}
	// Delivered again (Lambda at least once): only the quarantined record
	// runs (and is quarantined again: it still fails).
	invoke(t, h, all)
	if got := e.take(); !slices.Equal(got, []string{"r2"}) {
		t.Fatalf("the batch again ran %v, want only r2 (not covered by the checkpoint)", got)
	}
	mended = true
	redrive := eventOf(t, b, 2)
	for i, want := range [][]string{{"r2"}, nil} {
		if f := invoke(t, h, redrive); len(f) != 0 {
			t.Fatalf("redrive %d reported %v", i+1, f)
		}
		if got := e.take(); !slices.Equal(got, want) {
			t.Fatalf("redrive %d ran %v, want %v", i+1, got, want)
		}
	}
	invoke(t, h, all)
	if got := e.take(); len(got) != 0 {
		t.Fatalf("everything again ran %v", got)
	}
}

// TestLanesPartialFailureAndRetry: a record fails; Lambda retries the
// shard from it (the records before it are not delivered again): it and
// those after it run, once each; the whole batch again runs nothing.
func TestLanesPartialFailureAndRetry(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	b := &sevents.KinesisBuilder{}
	addRecords(b, "pk", "r0", "r1", "r2:fail", "r3", "r4")
	h := kinesisLane(t, store, e)
	if f := invoke(t, h, eventOf(t, b, span(0, 4)...)); len(f) != 1 || f[0] != b.Event().Records[2].Kinesis.SequenceNumber {
		t.Fatalf("reported %v, want r2", f)
	}
	if got := e.take(); !slices.Equal(got, []string{"r0", "r1", "r2"}) {
		t.Fatalf("ran %v", got)
	}
	h2 := kinesisLane(t, store, e) // r2 heals: the retry is in a new container, say
	b2 := &sevents.KinesisBuilder{}
	addRecords(b2, "pk", "r0", "r1", "r2", "r3", "r4")
	if f := invoke(t, h2, eventOf(t, b2, span(2, 4)...)); len(f) != 0 {
		t.Fatalf("retry reported %v", f)
	}
	if got := e.take(); !slices.Equal(got, []string{"r2", "r3", "r4"}) {
		t.Fatalf("the retry ran %v, want r2 to r4", got)
	}
	invoke(t, h2, eventOf(t, b2, span(0, 4)...))
	if got := e.take(); len(got) != 0 {
		t.Fatalf("the batch again ran %v", got)
	}
}

// TestLanesBisection: a process killed mid-batch (as r3 starts, r2's
// checkpoint written: depth 0 writes each before the next record), then
// Lambda's bisection: the halves run each record once, the first finding
// r0 to r2 done.
func TestLanesBisection(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	b := &sevents.KinesisBuilder{}
	addRecords(b, "pk", "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7")
	ctx, kill := context.WithCancel(context.Background())
	var rep BatchReport
	h, err := NewKinesis(func(c context.Context, r KinesisRecord[msg]) error {
		if r.Value.ID == "r3" {
			kill() // the process dies (the runner kills it)
			return c.Err()
		}
		e.add(r.Value.ID)
		return nil
	}, idemOpts(store, &rep, WithIdempotency(store, idempotency.WithOrderedDepth(0), idempotency.WithRenewedLease(30*time.Millisecond)))...)
	if err != nil {
		t.Fatal(err)
	}
	h.Invoke(ctx, eventOf(t, b, span(0, 7)...)) // its answer is lost with the process
	if got := e.take(); !slices.Equal(got, []string{"r0", "r1", "r2"}) {
		t.Fatalf("before the kill ran %v", got)
	}
	time.Sleep(50 * time.Millisecond) // the dead process's lease lapses
	h2 := kinesisLane(t, store, e)
	for _, half := range [][]int{span(0, 3), span(4, 7)} {
		if f := invoke(t, h2, eventOf(t, b, half...)); len(f) != 0 {
			t.Fatalf("half %v reported %v", half, f)
		}
	}
	if got := e.take(); !slices.Equal(got, []string{"r3", "r4", "r5", "r6", "r7"}) {
		t.Fatalf("the halves ran %v, want r3 to r7", got)
	}
}

// TestLanesParallelizationFactor: with a ParallelizationFactor of 2,
// Lambda runs two batches of one shard at once, each with the records of
// some partition keys, their positions interleaved. Told so, the handler
// keeps a checkpoint per shard and partition key: every record runs once,
// whichever batch comes first, and a batch again is all duplicates.
func TestLanesParallelizationFactor(t *testing.T) {
	for _, how := range []string{"option", "env"} {
		t.Run(how, func(t *testing.T) {
			store := idempotency.NewMemoryStore()
			e := &effects{}
			b := &sevents.KinesisBuilder{}
			for i := range 6 {
				pk := []string{"a", "b"}[i%2]
				b.Add(pk, payload(fmt.Sprintf("%s%d", pk, i), "ok"))
			}
			var pf Option = WithParallelizationFactor(2)
			if how == "env" {
				pf = withLookupEnv(func(k string) (string, bool) {
					switch k {
					case EnvFunctionName:
						return "orders-fn", true
					case EnvParallelizationFactor:
						return "2", true
					}
					return "", false
				})
			}
			h := kinesisLane(t, store, e, pf)
			var wg sync.WaitGroup
			for _, idx := range [][]int{{1, 3, 5}, {0, 2, 4}} { // b's batch first, then a's
				wg.Go(func() { invoke(t, h, eventOf(t, b, idx...)) })
			}
			wg.Wait()
			got := e.take()
			slices.Sort(got)
			if !slices.Equal(got, []string{"a0", "a2", "a4", "b1", "b3", "b5"}) {
				t.Fatalf("ran %v, want every record once", got)
			}
			invoke(t, h, eventOf(t, b, 0, 2, 4))
			if got := e.take(); len(got) != 0 {
				t.Fatalf("a's batch again ran %v", got)
			}
			shard := "orders-fn#lane#kinesis#" + b.Event().Records[0].EventSourceArn + "#shardId-000000000000"
			if !laneCovers(t, store, shard+"#a", b.Event().Records[4].Kinesis.SequenceNumber) ||
				!laneCovers(t, store, shard+"#b", b.Event().Records[5].Kinesis.SequenceNumber) {
				t.Fatal("no checkpoint per shard and partition key")
			}
		})
	}
	if _, err := NewKinesis(func(context.Context, KinesisRecord[msg]) error { return nil }, WithParallelizationFactor(11)); err == nil {
		t.Fatal("WithParallelizationFactor(11) accepted")
	}
	_, err := NewKinesis(func(context.Context, KinesisRecord[msg]) error { return nil }, WithIdempotency(idempotency.NewMemoryStore()),
		withLookupEnv(func(k string) (string, bool) {
			if k == EnvParallelizationFactor {
				return "many", true
			}
			return "", false
		}))
	if err == nil || !strings.Contains(err.Error(), EnvParallelizationFactor) {
		t.Fatalf("a bad %s: %v", EnvParallelizationFactor, err)
	}
}

// TestLanesDynamoDBShardSplit: a DynamoDB stream's shard closes and its
// children carry the item's later changes (Lambda finishes the parent
// first). The checkpoint is the item's: every change runs once across the
// split, and a replay of both shards runs nothing.
func TestLanesDynamoDBShardSplit(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	var rep BatchReport
	h, err := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[map[string]any]) error {
		e.add(fmt.Sprint((*r.New)["id"], "@", (*r.New)["v"]))
		return nil
	}, idemOpts(store, &rep)...)
	if err != nil {
		t.Fatal(err)
	}
	parent := &sevents.DynamoDBBuilder{}
	child := &sevents.DynamoDBBuilder{FirstSequence: 1000} // the child's sequence numbers follow the parent's
	for v := range 3 {
		for _, id := range []string{"x", "y"} {
			b := parent
			if v == 2 {
				b = child
			}
			if err := b.Modify(map[string]any{"id": id}, map[string]any{"id": id, "v": v - 1}, map[string]any{"id": id, "v": v}); err != nil {
				t.Fatal(err)
			}
		}
	}
	events := func(b *sevents.DynamoDBBuilder) []byte {
		raw, err := sevents.MarshalEvent(b.Event())
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	for _, raw := range [][]byte{events(parent), events(child)} {
		if f := invoke(t, h, raw); len(f) != 0 {
			t.Fatalf("reported %v", f)
		}
	}
	if got := e.take(); !slices.Equal(got, []string{"x@0", "y@0", "x@1", "y@1", "x@2", "y@2"}) {
		t.Fatalf("ran %v", got)
	}
	for _, raw := range [][]byte{events(parent), events(child)} {
		invoke(t, h, raw)
	}
	if got := e.take(); len(got) != 0 {
		t.Fatalf("the replay ran %v", got)
	}
	if rep.Duplicates != 2 {
		t.Fatalf("the child's replay counted %d duplicates, want 2", rep.Duplicates)
	}
}

// TestLanesShadowReplay: a replay into a shadow sink runs every record
// once more, in its own lanes; a replay into production runs nothing.
func TestLanesShadowReplay(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	b := &sevents.KinesisBuilder{}
	addRecords(b, "pk", "r0", "r1", "r2")
	raw := eventOf(t, b, 0, 1, 2)
	prod := kinesisLane(t, store, e)
	var rep BatchReport
	shadow, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		e.add("shadow:" + r.Value.ID)
		return nil
	}, append(idemOpts(store, &rep), withLookupEnv(shadowEnv("1")))...)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		h    *KinesisHandler[msg]
		want []string
	}{
		{prod, []string{"r0", "r1", "r2"}},
		{prod, nil},
		{shadow, []string{"shadow:r0", "shadow:r1", "shadow:r2"}},
		{shadow, nil},
		{prod, nil},
	} {
		invoke(t, step.h, raw)
		if got := e.take(); !slices.Equal(got, step.want) {
			t.Fatalf("ran %v, want %v", got, step.want)
		}
	}
}

// TestLanesFIFOGroups: an SQS FIFO batch of three groups, one of which
// fails: its group's checkpoint stops before the failed message; the
// redelivery (the failed message and the rest of its group) runs those
// once; the other groups' messages are duplicates.
func TestLanesFIFOGroups(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}
	for i := range 9 {
		action := "ok"
		if i == 4 {
			action = "fail"
		}
		sb.AddFIFO(string(payload(fmt.Sprint("m", i), action)), fmt.Sprint("g", i%3), "")
	}
	raw, err := sevents.MarshalEvent(sb.Event())
	if err != nil {
		t.Fatal(err)
	}
	var rep BatchReport
	broken := true
	h, err := NewSQSFIFO(func(ctx context.Context, r SQSRecord[msg]) error {
		e.add(r.Value.ID)
		if broken {
			return act(r.Value.Action)
		}
		return nil
	}, idemOpts(store, &rep, WithSkipGroupOnFailure())...)
	if err != nil {
		t.Fatal(err)
	}
	f := invoke(t, h, raw)
	if got := e.take(); len(got) != 8 || len(f) != 2 { // m7 (g1, after m4) does not run
		t.Fatalf("ran %v, reported %v", got, f)
	}
	broken = false
	invoke(t, h, raw) // SQS delivers everything not deleted; here, all again
	if got := e.take(); !slices.Equal(got, []string{"m4", "m7"}) {
		t.Fatalf("the redelivery ran %v, want m4 and m7", got)
	}
}

// TestLanesKafkaPartitions: Kafka partitions are lanes; a batch of two
// partitions again runs nothing; the checkpoint stands per partition.
func TestLanesKafkaPartitions(t *testing.T) {
	store := idempotency.NewMemoryStore()
	e := &effects{}
	kb := &sevents.KafkaBuilder{}
	for i := range 6 {
		kb.Add("orders", int64(i%2), nil, payload(fmt.Sprint("k", i), "ok"))
	}
	raw, err := sevents.MarshalEvent(kb.Event())
	if err != nil {
		t.Fatal(err)
	}
	var rep BatchReport
	h, err := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error { e.add(r.Value.ID); return nil }, idemOpts(store, &rep)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{6, 0} {
		out, err := h.Invoke(context.Background(), raw)
		var resp struct{ BatchItemFailures []json.RawMessage }
		if err != nil || json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s %v", out, err)
		}
		if got := e.take(); len(got) != want {
			t.Fatalf("ran %v, want %d", got, want)
		}
	}
	for p := range 2 {
		if !laneCovers(t, store, fmt.Sprintf("orders-fn#lane#kafka#orders-%d", p), "2") {
			t.Errorf("partition %d's checkpoint is not at offset 2", p)
		}
	}
}

// TestLanesCost: a Kinesis batch of 40 new records on an established
// shard (not its first) costs one lane claim and five writes (a group of
// eight each), and a replay one refused claim; per-record claims cost a
// claim and a share of a grouped complete per record.
func TestLanesCost(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	for i := range 80 {
		b.Add("pk", payload(fmt.Sprint(i), "ok"))
	}
	earlier, next := eventOf(t, b, span(0, 39)...), eventOf(t, b, span(40, 79)...)
	// A store 50 ms away: the records (microseconds each) complete long
	// before a write would have waited a round trip, however loaded the
	// machine.
	store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), rtt: 50 * time.Millisecond}
	e := &effects{}
	h := kinesisLane(t, store, e)
	invoke(t, h, earlier)
	store.reset()
	invoke(t, h, next)
	if c, s, g := store.laneClaims.Load(), store.laneSaves.Load(), store.gets.Load(); c != 1 || s != 5 || g != 0 || store.claims.Load() != 0 {
		t.Fatalf("%d lane claims, %d lane writes, %d reads, %d record claims; want 1, 5, 0, 0", c, s, g, store.claims.Load())
	}
	store.reset()
	invoke(t, h, next)
	if c, s := store.laneClaims.Load(), store.laneSaves.Load(); c != 1 || s != 0 || store.calls() != 1 {
		t.Fatalf("replay: %d lane claims, %d writes, %d calls; want one claim", c, s, store.calls())
	}
	if got := e.take(); len(got) != 80 {
		t.Fatalf("%d runs, want 80", len(got))
	}
}

func TestCheckpointDecisions(t *testing.T) {
	for _, tc := range []struct {
		laneStore, valueKey, payload, onDup, perRecord, want bool
	}{
		{true, false, false, false, false, true},
		{false, false, false, false, false, false},
		{true, true, false, false, false, false},
		{true, false, true, false, false, false},
		{true, false, false, true, false, false},
		{true, false, false, false, true, false},
	} {
		if got := checkpointMode(tc.laneStore, tc.valueKey, tc.payload, tc.onDup, tc.perRecord); got != tc.want {
			t.Errorf("checkpointMode(%+v) = %v", tc, got)
		}
	}
	for p, want := range map[engine.Policy]bool{engine.Independent: false, engine.Ordered: true, engine.OrderedPerGroup: true,
		engine.Stream: true, engine.StreamPerKey: true, engine.PerPartition: true} {
		if got := checkpointed(p); got != want {
			t.Errorf("checkpointed(%v) = %v", p, got)
		}
	}
	it := engine.Item{ID: "1", Key: "k"}
	for p, want := range map[engine.Policy]string{engine.Ordered: "", engine.Stream: "", engine.OrderedPerGroup: "k",
		engine.StreamPerKey: "k", engine.PerPartition: "k"} {
		if got := orderOf(p, it); got != want {
			t.Errorf("orderOf(%v) = %q, want %q", p, got, want)
		}
	}
	seq := "49590338271490256608559692538361571095921575989136588898"
	pos, _ := idempotency.Position(seq)
	kpl, _ := idempotency.Position(seq, "3")
	arn := "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
	for _, tc := range []struct {
		name     string
		lane     func() (string, string)
		wantLane string
		wantPos  string
	}{
		{name: "kinesis", lane: func() (string, string) {
			return laneOf(KinesisRecord[msg]{Raw: events.KinesisEventRecord{EventID: "shardId-000000000002:" + seq, EventSourceArn: arn,
				Kinesis: events.KinesisRecord{SequenceNumber: seq}}}, engine.Item{Key: "pk"}, 1)
		}, wantLane: "kinesis#" + arn + "#shardId-000000000002", wantPos: pos},
		{name: "kinesis, factor 2", lane: func() (string, string) {
			return laneOf(KinesisRecord[msg]{Raw: events.KinesisEventRecord{EventID: "shardId-000000000002:" + seq, EventSourceArn: arn,
				Kinesis: events.KinesisRecord{SequenceNumber: seq, PartitionKey: "pk"}}}, engine.Item{Key: "pk"}, 2)
		}, wantLane: "kinesis#" + arn + "#shardId-000000000002#pk", wantPos: pos},
		{name: "a KPL user record, factor 2: its aggregate's key", lane: func() (string, string) {
			return laneOf(KinesisRecord[msg]{Raw: events.KinesisEventRecord{EventID: "shardId-000000000002:" + seq, EventSourceArn: arn,
				Kinesis: events.KinesisRecord{SequenceNumber: seq, PartitionKey: "user"}}, agg: true, sub: 3, outerKey: "outer"}, engine.Item{Key: "user"}, 2)
		}, wantLane: "kinesis#" + arn + "#shardId-000000000002#outer", wantPos: kpl},
		{name: "a KPL user record", lane: func() (string, string) {
			return laneOf(KinesisRecord[msg]{Raw: events.KinesisEventRecord{EventID: "shardId-000000000002:" + seq, EventSourceArn: arn,
				Kinesis: events.KinesisRecord{SequenceNumber: seq}}, agg: true, sub: 3}, engine.Item{Key: "pk"}, 1)
		}, wantLane: "kinesis#" + arn + "#shardId-000000000002", wantPos: kpl},
		{name: "kinesis without a shard", lane: func() (string, string) {
			return laneOf(KinesisRecord[msg]{Raw: events.KinesisEventRecord{EventID: "", Kinesis: events.KinesisRecord{SequenceNumber: seq}}}, engine.Item{}, 1)
		}},
		{name: "dynamodb", lane: func() (string, string) {
			return laneOf(DynamoDBRecord[msg]{Raw: events.DynamoDBEventRecord{EventSourceArn: "ddb-arn", Change: events.DynamoDBStreamRecord{SequenceNumber: "111"}}},
				engine.Item{Key: `{"id":{"S":"x"}}`}, 1)
		}, wantLane: `dynamodb#ddb-arn#{"id":{"S":"x"}}`, wantPos: "003111"},
		{name: "kafka", lane: func() (string, string) {
			return laneOf(KafkaRecord[msg]{Raw: events.KafkaRecord{Topic: "orders", Partition: 3, Offset: 42}}, engine.Item{}, 1)
		}, wantLane: "kafka#orders-3", wantPos: "00242"},
		{name: "sqs fifo", lane: func() (string, string) {
			return laneOf(SQSRecord[msg]{Raw: events.SQSMessage{EventSourceARN: "q.fifo", Attributes: map[string]string{"MessageGroupId": "g", "SequenceNumber": "18849496460467696128"}}}, engine.Item{}, 1)
		}, wantLane: "sqs#q.fifo#g", wantPos: "02018849496460467696128"},
		{name: "sqs standard", lane: func() (string, string) {
			return laneOf(SQSRecord[msg]{Raw: events.SQSMessage{EventSourceARN: "q", Attributes: map[string]string{}}}, engine.Item{}, 1)
		}},
	} {
		lane, pos := tc.lane()
		if lane != tc.wantLane || pos != tc.wantPos {
			t.Errorf("%s: lane %q at %q, want %q at %q", tc.name, lane, pos, tc.wantLane, tc.wantPos)
		}
	}
}

// TestLanesKPLUnderParallelization: with a factor above 1 Lambda gives
// the batches of a shard the Kinesis records of some partition keys: an
// aggregate goes by its own partition key (the KPL's first user record's),
// whatever its user records' keys. Two aggregates with user records of
// key "a", under keys x and y, come in two batches, the later aggregate's
// batch first: the checkpoint of each is its aggregate's key's, so the
// earlier aggregate's batch still runs its records. Keyed by the user
// records' own key, the first batch's checkpoint covered the second's
// user record of "a", and it never ran.
func TestLanesKPLUnderParallelization(t *testing.T) {
	store := idempotency.NewMemoryStore()
	var ran []string
	h := must(NewKinesis(func(_ context.Context, r KinesisRecord[order]) error { ran = append(ran, r.Value.OrderID); return nil },
		WithLogger(slog.New(slog.DiscardHandler)), WithoutRetry(), WithIdempotency(store), WithParallelizationFactor(2)))
	b := &sevents.KinesisBuilder{}
	b.AddAggregated(orderRec("x", "x1", "ok"), orderRec("a", "a1", "ok"))
	b.AddAggregated(orderRec("y", "y1", "ok"), orderRec("a", "a2", "ok"))
	b.AddAggregated(orderRec("x", "x2", "ok"), orderRec("a", "a3", "ok"))
	if f := invoke(t, h, eventOf(t, b, 0, 2)); len(f) != 0 { // key x's batch
		t.Fatal(f)
	}
	if f := invoke(t, h, eventOf(t, b, 1)); len(f) != 0 { // key y's, holding a2 between a1 and a3
		t.Fatal(f)
	}
	slices.Sort(ran)
	if want := []string{"a1", "a2", "a3", "x1", "x2", "y1"}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// TestLanesUndeclaredFactor: a mapping with ParallelizationFactor 2 whose
// handler was not told (no option, no SLUICE_PARALLELIZATION_FACTOR):
// Lambda runs two batches of one shard at once, each with the records of
// some partition keys, their positions interleaved. Undeclared, the
// handler keeps a checkpoint per shard and partition key, so every record
// runs once, whichever batch comes first; it says once, at its first
// batch, that declaring the factor would keep one per shard. Declared 1
// (wrongly, here), the later batch's records lie below the first batch's
// shard checkpoint and never run: what the undeclared default prevents.
func TestLanesUndeclaredFactor(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	for i := range 8 {
		pk := []string{"a", "b"}[i%2]
		b.Add(pk, payload(fmt.Sprintf("%s%d", pk, i), "ok"))
	}
	all := []string{"a0", "a2", "a4", "a6", "b1", "b3", "b5", "b7"}
	aBatch, bBatch := []int{0, 2, 4, 6}, []int{1, 3, 5, 7}
	t.Run("undeclared, two batches at once", func(t *testing.T) {
		store := idempotency.NewMemoryStore()
		e := &effects{}
		var logs bytes.Buffer
		h := kinesisLane(t, store, e, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		var wg sync.WaitGroup
		for _, idx := range [][]int{bBatch, aBatch} {
			wg.Go(func() { invoke(t, h, eventOf(t, b, idx...)) })
		}
		wg.Wait()
		got := e.take()
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Fatalf("ran %v, want every record once", got)
		}
		if n := strings.Count(logs.String(), `"level":"INFO","msg":"sluice: the mapping's ParallelizationFactor is not declared`); n != 1 ||
			!strings.Contains(logs.String(), EnvParallelizationFactor+"=1") {
			t.Fatalf("%d notes of the undeclared factor, want 1 naming %s=1:\n%s", n, EnvParallelizationFactor, logs.String())
		}
		// A third batch logs it no more.
		invoke(t, h, eventOf(t, b, aBatch...))
		if n := strings.Count(logs.String(), "is not declared"); n != 1 || len(e.take()) != 0 {
			t.Fatalf("%d notes after a third batch (a duplicate of the first)", n)
		}
	})
	for _, declared := range []bool{false, true} {
		t.Run(fmt.Sprint("the later positions' batch first, declared 1: ", declared), func(t *testing.T) {
			store := idempotency.NewMemoryStore()
			e := &effects{}
			var extra []Option
			if declared {
				extra = append(extra, WithParallelizationFactor(1))
			}
			h := kinesisLane(t, store, e, extra...)
			invoke(t, h, eventOf(t, b, bBatch...)) // b7 is the shard's last position
			invoke(t, h, eventOf(t, b, aBatch...))
			got := e.take()
			slices.Sort(got)
			switch {
			case !declared && !slices.Equal(got, all):
				t.Fatalf("undeclared: ran %v, want every record once", got)
			case declared && !slices.Equal(got, []string{"b1", "b3", "b5", "b7"}):
				t.Fatalf("declared 1: ran %v, want b's records only (a's below b's shard checkpoint)", got)
			}
		})
	}
}

// TestLanesDeclaredFactorOne: declared 1 (the option or the variable set
// to 1), a shard's batch of 40 records over 8 partition keys keeps one
// checkpoint: one lane claim and a write per 8 records; undeclared, one
// per partition key: a lane claim and at least a write for each of the 8.
func TestLanesDeclaredFactorOne(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	for i := range 80 {
		b.Add(fmt.Sprint("k", i%8), payload(fmt.Sprint(i), "ok"))
	}
	earlier, next := eventOf(t, b, span(0, 39)...), eventOf(t, b, span(40, 79)...)
	env := withLookupEnv(func(k string) (string, bool) {
		switch k {
		case EnvFunctionName:
			return "orders-fn", true
		case EnvParallelizationFactor:
			return "1", true
		}
		return "", false
	})
	for _, tc := range []struct {
		name           string
		opt            []Option
		claims, writes int64 // writes: exactly, or at least when claims is not 1
	}{
		{"option 1", []Option{WithParallelizationFactor(1)}, 1, 5},
		{"variable 1", []Option{env}, 1, 5},
		{"undeclared", nil, 8, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A store 50 ms away: the records complete long before a write
			// would have waited a round trip.
			store := &delayStore{MemoryStore: idempotency.NewMemoryStore(), rtt: 50 * time.Millisecond}
			e := &effects{}
			h := kinesisLane(t, store, e, tc.opt...)
			invoke(t, h, earlier)
			store.reset()
			invoke(t, h, next)
			c, s := store.laneClaims.Load(), store.laneSaves.Load()
			if c != tc.claims || (tc.claims == 1 && s != tc.writes) || s < tc.writes || store.claims.Load() != 0 {
				t.Fatalf("%d lane claims, %d lane writes, %d record claims; want %d claims and %d writes", c, s, store.claims.Load(), tc.claims, tc.writes)
			}
			if got := e.take(); len(got) != 80 {
				t.Fatalf("%d runs, want 80", len(got))
			}
		})
	}
}
