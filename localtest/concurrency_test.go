package localtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/events"
)

// inFlight is an in-process function that holds each invocation until
// want invocations are in flight at once (or a second passes, so a runner
// that never overlaps them fails the test instead of hanging), and
// records how many overlapped, which message groups were in flight
// together, and the order each group's messages ran in.
type inFlight struct {
	t    *testing.T
	want int
	// parse names the records of an event by payload id and their
	// ordering key (group); default: an SQS event's message groups.
	parse func(t *testing.T, p []byte) (pids, groups []string)

	mu      sync.Mutex
	cond    *sync.Cond
	open    bool // want were in flight together: let this round go
	now     int
	max     int
	groups  map[string]int // group -> invocations holding it now
	overlap []string       // groups seen in two invocations at once
	order   map[string][]string
}

func newInFlight(t *testing.T, want int) *inFlight {
	f := &inFlight{t: t, want: want, groups: map[string]int{}, order: map[string][]string{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *inFlight) Invoke(ctx context.Context, p []byte) ([]byte, error) {
	var pids, groups []string
	if f.parse != nil {
		pids, groups = f.parse(f.t, p)
	} else {
		_, pids, _ = sqsIDs(f.t, p)
		groups = sqsGroups(f.t, p)
	}
	f.mu.Lock()
	f.now++
	f.max = max(f.max, f.now)
	for _, g := range slices.Compact(slices.Clone(groups)) {
		if g == "" {
			continue
		}
		if f.groups[g]++; f.groups[g] > 1 {
			f.overlap = append(f.overlap, g)
		}
	}
	for i, g := range groups {
		f.order[g] = append(f.order[g], pids[i])
	}
	if f.now >= f.want {
		f.open = true
	}
	f.cond.Broadcast()
	deadline := time.AfterFunc(time.Second, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	start := time.Now()
	for !f.open && time.Since(start) < time.Second {
		f.cond.Wait()
	}
	deadline.Stop()
	f.mu.Unlock()

	f.mu.Lock()
	defer f.mu.Unlock()
	if f.now--; f.now == 0 {
		f.open = false
	}
	for _, g := range slices.Compact(slices.Clone(groups)) {
		if g != "" {
			f.groups[g]--
		}
	}
	return nil, nil
}

func sqsGroups(t *testing.T, p []byte) []string {
	var ev struct {
		Records []struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"Records"`
	}
	if err := json.Unmarshal(p, &ev); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ev.Records))
	for i, r := range ev.Records {
		out[i] = r.Attributes["MessageGroupId"]
	}
	return out
}

// ScalingConfig.MaximumConcurrency puts that many batches of a standard
// queue in flight at once.
func TestSQSMaximumConcurrency(t *testing.T) {
	for _, conc := range []int{2, 5} {
		t.Run(fmt.Sprint(conc), func(t *testing.T) {
			f := newInFlight(t, conc)
			m := &Mapping{EventSource: events.SourceSQS, BatchSize: ptr(10), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
				ScalingConfig: &ScalingConfig{MaximumConcurrency: ptr(conc)}}
			rep, tr := run(t, Options{Mapping: m, Records: sqsRecords(100, nil), Invoker: InProcess(f)})
			if f.max != conc {
				t.Fatalf("at most %d invocations were in flight at once, want %d", f.max, conc)
			}
			if rep.Totals.Processed != 100 || rep.Totals.Invocations != 10 || !rep.Held() {
				t.Fatalf("totals %+v, invariants %+v", rep.Totals, rep.Invariants)
			}
			// The trace numbers invocations in the order they were made.
			for i, e := range tr.entries {
				if e.N != i+1 {
					t.Fatalf("trace entry %d has n %d", i, e.N)
				}
			}
		})
	}
}

// Without ScalingConfig the runner makes one invocation at a time.
func TestSQSOneBatchAtATimeByDefault(t *testing.T) {
	f := newInFlight(t, 1)
	m := &Mapping{EventSource: events.SourceSQS, BatchSize: ptr(10), FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, _ := run(t, Options{Mapping: m, Records: sqsRecords(30, nil), Invoker: InProcess(f)})
	if f.max != 1 || rep.Totals.Processed != 30 {
		t.Fatalf("max in flight %d, totals %+v", f.max, rep.Totals)
	}
}

// On a FIFO queue concurrent batches never share a message group, and each
// group's messages run in order.
func TestSQSFIFOMaximumConcurrencyKeepsGroups(t *testing.T) {
	groups := []string{"a", "b", "c"}
	recs := sqsRecords(12, func(i int) string { return groups[i%3] })
	f := newInFlight(t, 3)
	m := &Mapping{EventSource: events.SourceSQSFIFO, BatchSize: ptr(1), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		ScalingConfig: &ScalingConfig{MaximumConcurrency: ptr(3)}}
	rep, _ := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(f)})
	if len(f.overlap) > 0 {
		t.Fatalf("groups in two invocations at once: %v", f.overlap)
	}
	if f.max != 3 {
		t.Fatalf("at most %d invocations were in flight at once, want 3 (one per group)", f.max)
	}
	for i, g := range groups {
		var want []string
		for j := i; j < 12; j += 3 {
			want = append(want, fmt.Sprint(j+1))
		}
		if !slices.Equal(f.order[g], want) {
			t.Fatalf("group %s ran %v, want %v", g, f.order[g], want)
		}
	}
	if rep.Totals.Processed != 12 || !heldWithoutEffects(rep) {
		t.Fatalf("totals %+v", rep.Totals)
	}
}

// kinesisKeys names a Kinesis event's records by payload id and partition
// key.
func kinesisKeys(t *testing.T, p []byte) (pids, keys []string) {
	var ev lambdaevents.KinesisEvent
	if err := json.Unmarshal(p, &ev); err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.Records {
		pids = append(pids, payloadID(r.Kinesis.Data))
		keys = append(keys, r.Kinesis.PartitionKey)
	}
	return pids, keys
}

// A stream's lanes run at once: one batch per shard, or ParallelizationFactor
// batches per shard, in flight together, as Lambda runs them; no partition
// key is in two batches at once, and each key's records run in order.
func TestStreamLanesRunAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		shards, pf    int
		inFlightLanes int
	}{
		{"three shards", 3, 1, 3},
		{"ParallelizationFactor 4", 1, 4, 4},
		{"two shards, ParallelizationFactor 2", 2, 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Keys spread so that every lane has records.
			var keys []string
			lanes := map[[2]int]bool{}
			for i := 0; len(lanes) < tc.inFlightLanes; i++ {
				if i == 10000 {
					t.Fatalf("10,000 keys fill only %d of %d lanes", len(lanes), tc.inFlightLanes)
				}
				k := fmt.Sprint("key-", i)
				lane := [2]int{kinesisShard(k, tc.shards), subLane(k, tc.pf)}
				if !lanes[lane] {
					lanes[lane] = true
					keys = append(keys, k)
				}
			}
			f := newInFlight(t, tc.inFlightLanes)
			f.parse = kinesisKeys
			m := kinesisMapping(5, func(m *Mapping) { m.Shards = ptr(tc.shards); m.ParallelizationFactor = ptr(tc.pf) })
			n := 20 * len(keys)
			rep, tr := run(t, Options{Mapping: m, Records: kinesisRecords(n, func(i int) string { return keys[i%len(keys)] }), Invoker: InProcess(f)})
			if f.max != tc.inFlightLanes {
				t.Fatalf("at most %d invocations were in flight at once, want %d (one per lane)", f.max, tc.inFlightLanes)
			}
			if len(f.overlap) > 0 {
				t.Fatalf("partition keys in two invocations at once: %v", f.overlap)
			}
			for k, order := range f.order {
				if !slices.IsSortedFunc(order, func(a, b string) int { return cmpNumbers(a, b) }) {
					t.Fatalf("key %s ran %v: out of order", k, order)
				}
			}
			if rep.Totals.Processed != n || !heldWithoutEffects(rep) {
				t.Fatalf("totals %+v, invariants %+v", rep.Totals, rep.Invariants)
			}
			for i, e := range tr.entries {
				if e.N != i+1 {
					t.Fatalf("trace entry %d has n %d: answers are applied in the order the invocations were made", i, e.N)
				}
			}
		})
	}
}

func cmpNumbers(a, b string) int {
	var x, y int
	fmt.Sscan(a, &x)
	fmt.Sscan(b, &y)
	return x - y
}
