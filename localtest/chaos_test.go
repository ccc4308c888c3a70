package localtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/rie"
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
// failing records, injected function errors, crashes, timeouts and
// duplicate deliveries. Whatever happens, no record may be lost and the
// first effects of each partition key must keep the stream's order.
func TestChaos(t *testing.T) {
	n := 100000
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
		EventSource: localtest.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(100),
		Shards: ptr(4), ParallelizationFactor: ptr(2),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(3),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		DestinationConfig:     &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "file://" + filepath.Join(dir, "onfailure.jsonl")}},
	}
	start := time.Now()
	rep, err := localtest.Run(context.Background(), localtest.Options{
		Mapping: m, Records: recs, Invoker: inv, FunctionTimeout: 10 * time.Second, Seed: 42,
		Faults:  localtest.Faults{ErrorRate: 0.01, CrashRate: 0.01, TimeoutRate: 0.01, DuplicateRate: 0.02},
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

func ptr[T any](v T) *T { return &v }
