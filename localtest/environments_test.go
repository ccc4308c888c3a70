package localtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// TestBootstrapRunsEnvironmentsAtOnce: with the mapping's concurrency
// above one (ParallelizationFactor 2 on one shard, SQS MaximumConcurrency
// 2), a bootstrap runs as Lambda runs it: two execution environments at
// once, each its own process. Each of the two batches takes effect on its
// first record, then waits at a gate that opens only once both first
// records took effect: the run passes, without a failure, only if the two
// invocations overlapped. The trace names the environment and process of
// each, the effects come from those two processes, and each key keeps its
// order.
func TestBootstrapRunsEnvironmentsAtOnce(t *testing.T) {
	t.Parallel()
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	// Two partition keys in the two lanes of a shard.
	keys := []string{"a"}
	for i := 0; len(keys) < 2; i++ {
		if k := fmt.Sprint("b", i); localtest.SubLane(k, 2) != localtest.SubLane("a", 2) {
			keys = append(keys, k)
		}
	}
	for _, tc := range []struct {
		name    string
		source  string
		mapping *localtest.Mapping
		record  func(key, payload string) localtest.InputRecord
	}{
		{"Kinesis, ParallelizationFactor 2", "kinesis", localtest.KinesisMapping(10, func(m *localtest.Mapping) { m.ParallelizationFactor = ptr(2) }),
			func(key, payload string) localtest.InputRecord {
				return localtest.InputRecord{PartitionKey: key, Data: json.RawMessage(payload)}
			}},
		{"SQS, MaximumConcurrency 2", "sqs", &localtest.Mapping{EventSource: events.SourceSQS, BatchSize: ptr(5),
			FunctionResponseTypes: []string{"ReportBatchItemFailures"}, ScalingConfig: &localtest.ScalingConfig{MaximumConcurrency: ptr(2)}},
			func(_, payload string) localtest.InputRecord {
				return localtest.InputRecord{Body: json.RawMessage(payload)}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			effects, gate := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "gate")
			// Batch a holds a0..a4 (key a), batch b holds b0..b4; the
			// second record of each waits at the gate.
			var recs []localtest.InputRecord
			for _, lane := range []int{0, 1} {
				for i := range 5 {
					action := "ok"
					if i == 1 {
						action = "await:" + gate
					}
					recs = append(recs, tc.record(keys[lane], fmt.Sprintf(`{"id":"%c%d","action":%q}`, 'a'+lane, i, action)))
				}
			}
			stop := make(chan struct{})
			var watch sync.WaitGroup
			watch.Go(func() { openGateWhenBothStarted(t, effects, gate, stop) })
			defer func() { close(stop); watch.Wait() }()

			inv, err := invoke.RuntimeAPI(bin, []string{"PATH=/usr/bin:/bin", "SLUICE_SOURCE=" + tc.source, "SLUICE_EFFECTS_FILE=" + effects})
			if err != nil {
				t.Fatal(err)
			}
			defer inv.Close()
			var trace []localtest.TraceEntry
			rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: tc.mapping, Records: recs, Invoker: inv,
				FunctionTimeout: 10 * time.Second, Trace: func(e localtest.TraceEntry) { trace = append(trace, e) },
				Effects: func() ([]localtest.Effect, error) { return localtest.ReadEffects(effects, "") }})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Held() || rep.Totals.Invocations != 2 || rep.Totals.Processed != 10 || rep.Totals.FunctionErrors+rep.Totals.PartialFailures != 0 {
				t.Fatalf("totals %+v, invariants %+v, trace %+v: want the two batches to run at once and succeed", rep.Totals, rep.Invariants, trace)
			}
			var envs, pids []int
			for _, e := range trace {
				envs, pids = append(envs, e.Env), append(pids, e.PID)
			}
			if !slices.Equal(envs, []int{1, 2}) || pids[0] == 0 || pids[1] == 0 || pids[0] == pids[1] {
				t.Fatalf("trace environments %v, processes %v: want environments 1 and 2 in two processes", envs, pids)
			}
			slices.Sort(pids)
			if got := effectPIDs(t, effects); !slices.Equal(got, pids) {
				t.Fatalf("effects came from processes %v, the trace names %v", got, pids)
			}
		})
	}
}

// openGateWhenBothStarted creates gate once the effects file holds the
// effects of a0 and b0, the first records of the two batches.
func openGateWhenBothStarted(t *testing.T, effects, gate string, stop <-chan struct{}) {
	for {
		seen := map[string]bool{}
		if all, err := localtest.ReadEffects(effects, ""); err == nil {
			for _, e := range all {
				seen[e.ID] = true
			}
		}
		if seen["a0"] && seen["b0"] {
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Error(err)
			}
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// effectPIDs lists the processes the effects came from, sorted.
func effectPIDs(t *testing.T, effects string) []int {
	t.Helper()
	data, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for line := range bytes.Lines(bytes.TrimSpace(data)) {
		var e struct{ PID int }
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("effects line %q: %v", line, err)
		}
		if !slices.Contains(pids, e.PID) {
			pids = append(pids, e.PID)
		}
	}
	slices.Sort(pids)
	return pids
}
