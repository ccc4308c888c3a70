package localtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// chaosRecords makes n conformance records whose actions mix every kind of
// failure the function can have: plain, permanent, panics, payloads that do
// not decode, and transient errors that heal within one invocation's
// retries or only across invocations.
func chaosRecords(n int, rnd *rand.Rand, shape func(i int, payload json.RawMessage) localtest.InputRecord) []localtest.InputRecord {
	out := make([]localtest.InputRecord, n)
	for i := range out {
		action := "ok"
		switch x := rnd.Float64(); {
		case x < 0.004:
			action = "fail"
		case x < 0.006:
			action = "permanent"
		case x < 0.008:
			action = "panic"
		case x < 0.030:
			action = "transient:1"
		case x < 0.035:
			action = "transient:5"
		}
		payload := json.RawMessage(fmt.Sprintf(`{"id":"r%d","action":%q}`, i, action))
		if rnd.Float64() < 0.002 {
			payload = json.RawMessage(fmt.Sprintf(`"{\"id\":\"r%d\", broken"`, i)) // not JSON: a decode error
		}
		out[i] = shape(i, payload)
	}
	return out
}

// TestChaos runs the conformance function, as a Lambda bootstrap behind the
// runner's Runtime API, over 100,000 Kinesis records with every fault on:
// failing records, injected function errors, crashes (the process killed
// at the hand-over, mid-batch or before its answer), timeouts (the process
// frozen mid-batch and killed at the deadline) and duplicate deliveries.
// Whatever happens, no record may be lost and the first effects of each
// partition key must keep the stream's order.
func TestChaos(t *testing.T) {
	n := chaosRecordsRun
	if testing.Short() {
		n = 10000
	}
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	rnd := rand.New(rand.NewPCG(7, 7))
	recs := chaosRecords(n, rnd, func(i int, p json.RawMessage) localtest.InputRecord {
		return localtest.InputRecord{PartitionKey: fmt.Sprintf("customer-%d", rnd.IntN(64)), Data: p}
	})
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	inv, err := invoke.RuntimeAPI(bin, []string{"PATH=/usr/bin:/bin", "SLUICE_SOURCE=kinesis", "SLUICE_EFFECTS_FILE=" + effects, "SLUICE_RETRY_BACKOFF=1ms"})
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	m := &localtest.Mapping{
		EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(100),
		Shards: ptr(4), ParallelizationFactor: ptr(2),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(3),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		DestinationConfig:     &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "file://" + filepath.Join(dir, "onfailure.jsonl")}},
	}
	start := time.Now()
	rep, err := localtest.Run(context.Background(), localtest.Options{
		// Each injected timeout waits out the function's timeout: 1 s keeps
		// the run short, and is still far longer than a batch takes.
		Mapping: m, Records: recs, Invoker: inv, FunctionTimeout: time.Second, Seed: 42,
		// Timeouts are rarer than the other faults: each waits out the
		// function's timeout.
		Faults:  localtest.Faults{ErrorRate: 0.01, CrashRate: 0.01, TimeoutRate: chaosTimeoutRate, DuplicateRate: 0.02},
		Effects: func() ([]localtest.Effect, error) { return localtest.ReadEffects(effects, "") },
		// Poison records, and healthy ones whose batch ran out of retries
		// under the faults, end on-failure.
		Allow: []string{localtest.FateOnFailure},
	})
	if err != nil {
		t.Fatal(err)
	}
	tt := rep.Totals
	t.Logf("%d records in %v: %+v", n, time.Since(start).Round(time.Millisecond), tt)
	checkKills(t, rep, effects, 8) // 4 shards, ParallelizationFactor 2: 8 execution environments
	for _, inv := range rep.Invariants {
		if inv.Status != localtest.StatusHeld {
			t.Errorf("invariant %s %s: %s %v", inv.Name, inv.Status, inv.Reason, inv.Violations)
		}
	}
	if len(rep.Invariants) != 3 {
		t.Fatalf("no-record-lost, order-per-key and fate-as-expected must be checked: %+v", rep.Invariants)
	}
	if tt.Records != n || tt.Processed+tt.OnFailure != n || tt.Left != 0 {
		t.Fatalf("every record must end processed or on-failure: %+v", tt)
	}
	// Every kind of event happened, or the test proves less than it claims.
	if tt.FunctionErrors == 0 || tt.Timeouts == 0 || tt.Duplicates == 0 || tt.PartialFailures == 0 || tt.Bisections == 0 || tt.OnFailure == 0 {
		t.Fatalf("a fault never fired: %+v", tt)
	}
}

// checkKills checks that the run's injected crashes and timeouts really
// killed the function's process: at every kill point, the effects each
// killed invocation left behind counted, and each kill followed by a new
// process (effects from more than one process, and from no more than the
// kills allow).
func checkKills(t *testing.T, rep *localtest.Report, effects string, envs int) {
	t.Helper()
	points := map[invocation.KillPoint]int{}
	timeouts, left := 0, 0
	for _, k := range rep.Kills {
		if k.Env < 1 || k.Env > envs || k.PID == 0 {
			t.Fatalf("kill %+v: want the environment (1-%d) and the process it killed", k, envs)
		}
		if k.Timeout {
			timeouts++
		} else {
			points[k.Point]++
		}
		if k.Effects < 0 {
			t.Fatalf("kill %+v: its effects were not counted (the conformance function names its invocations)", k)
		}
		left += k.Effects
	}
	t.Logf("kills: %d crashes %v, %d timeouts, leaving %d effects", rep.Totals.Crashes, points, timeouts, left)
	if rep.Totals.Crashes == 0 || points[invocation.KillAtHandOver] == 0 || points[invocation.KillMidBatch] == 0 ||
		points[invocation.KillBeforeAnswer] == 0 || timeouts == 0 || timeouts > rep.Totals.Timeouts {
		t.Fatalf("want crashes at every kill point and timeouts: %v, %d timeouts, totals %+v", points, timeouts, rep.Totals)
	}
	if left == 0 {
		t.Fatal("no killed invocation left an effect behind: the kills all landed before any work")
	}
	all, err := localtest.ReadEffects(effects, "")
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	lines, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var e struct{ PID int }
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.PID == 0 {
			t.Fatalf("effects line %q: no pid (%v)", l, err)
		}
		pids[e.PID] = true
	}
	t.Logf("%d effects from %d processes", len(all), len(pids))
	// A process ends only when it is killed: by an injected kill, or at a
	// real timeout (counted in Timeouts with the injected ones); each of
	// the envs execution environments starts one first.
	if ends := rep.Totals.Crashes + rep.Totals.Timeouts; len(pids) < 2 || len(pids) > ends+envs {
		t.Fatalf("effects from %d processes after %d kills in %d environments: want a new process after each kill, and no other", len(pids), ends, envs)
	}
}

func ptr[T any](v T) *T { return &v }
