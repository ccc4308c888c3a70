package localtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// chaosLanes runs n Kinesis records (4 shards, 64 partition keys) through
// the compiled conformance function with idempotency on DynamoDB Local,
// where each shard keeps a checkpoint (or, with a parallelization factor
// above 1, each shard and partition key), while the runner crashes its
// process at every kill point, freezes it until its timeout, fails and
// duplicates invocations, and bisects failed batches. Dead letters are on
// (permanent failures are quarantined; a record that keeps failing ends
// on the mapping's on-failure destination). Every record must end
// processed, quarantined or on-failure, each partition key's first
// effects in order, and each record take effect once, or more only where
// a kill explains it: a process killed after a record's effect and before
// its lane's checkpoint was written leaves it to run again, at most
// idempotency.DefaultOrderedDepth+1 records of a lane per kill.
func chaosLanes(t *testing.T, n, pf int) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "lanes")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(17, uint64(pf)))
	recs := make([]localtest.InputRecord, n)
	for i := range recs {
		action := "ok"
		switch x := rnd.Float64(); {
		case x < 0.002:
			action = "permanent" // quarantined
		case x < 0.003:
			action = "fail" // fails every time: its batch ends on-failure
		case x < 0.03:
			action = "transient:1"
		}
		recs[i] = localtest.InputRecord{PartitionKey: fmt.Sprintf("customer-%d", rnd.IntN(64)),
			Data: json.RawMessage(fmt.Sprintf(`{"id":"r%d","action":%q}`, i, action))}
	}
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	dlqFile := filepath.Join(dir, "dead-letters.jsonl")
	env := []string{"PATH=/usr/bin:/bin", "SLUICE_SOURCE=kinesis", "SLUICE_EFFECTS_FILE=" + effects, "SLUICE_RETRY_BACKOFF=1ms",
		"SLUICE_IDEMPOTENCY_TABLE=" + table, "SLUICE_DLQ_FILE=" + dlqFile, "SLUICE_PARALLELIZATION_FACTOR=" + strconv.Itoa(pf),
		"AWS_ENDPOINT_URL_DYNAMODB=" + srv.Endpoint, "AWS_REGION=" + servers.Region,
		"AWS_ACCESS_KEY_ID=" + servers.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + servers.SecretAccessKey,
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
	inv, err := invoke.RuntimeAPI(bin, env)
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	q, err := localtest.QuarantineFile(dlqFile)
	if err != nil {
		t.Fatal(err)
	}
	m := &localtest.Mapping{
		EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(100),
		Shards: ptr(4), ParallelizationFactor: ptr(pf),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(3),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		DestinationConfig:     &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "file://" + filepath.Join(dir, "onfailure.jsonl")}},
	}
	start := time.Now()
	rep, err := localtest.Run(context.Background(), localtest.Options{
		// A killed process's lane lease lapses by its deadline at the
		// latest: 2 s keeps the waits short and is far above a batch.
		Mapping: m, Records: recs, Invoker: inv, FunctionTimeout: 2 * time.Second, Seed: 42,
		Faults:      localtest.Faults{ErrorRate: 0.01, CrashRate: 0.15, TimeoutRate: 0.03, DuplicateRate: 0.1},
		Effects:     func() ([]localtest.Effect, error) { return localtest.ReadEffects(effects, "") },
		ExactlyOnce: true, AllowKillRepeats: true, Quarantine: q,
		Allow: []string{localtest.FateOnFailure, localtest.FateQuarantined},
	})
	if err != nil {
		t.Fatal(err)
	}
	tt := rep.Totals
	t.Logf("%d records, parallelization factor %d, in %v: %+v", n, pf, time.Since(start).Round(time.Millisecond), tt)
	checkKills(t, rep, effects, 4*pf) // 4 shards, pf batches of each at once: an execution environment each
	checked := map[string]bool{}
	for _, inv := range rep.Invariants {
		checked[inv.Name] = true
		t.Logf("invariant %s: %s %s", inv.Name, inv.Status, inv.Reason)
		if inv.Status != localtest.StatusHeld {
			t.Errorf("invariant %s %s: %s %v", inv.Name, inv.Status, inv.Reason, inv.Violations)
		}
	}
	for _, name := range []string{localtest.InvariantNoLoss, localtest.InvariantOrder, localtest.InvariantOnce} {
		if !checked[name] {
			t.Errorf("the invariant %s was not checked: %+v", name, rep.Invariants)
		}
	}
	if tt.Records != n || tt.Processed+tt.OnFailure+tt.Quarantined != n || tt.Left != 0 {
		t.Fatalf("every record must end processed, quarantined or on-failure: %+v", tt)
	}
	// The repeats the kills left, counted: each from a killed invocation
	// (effect-once checked that), at most a lane's window per kill.
	all, err := localtest.ReadEffects(effects, "")
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, e := range all {
		runs[e.Record]++
	}
	repeats := 0
	for _, c := range runs {
		repeats += c - 1
	}
	kills := len(rep.Kills)
	t.Logf("effects repeated after a kill: %d, over %d kills (at most %d a lane each)", repeats, kills, idempotency.DefaultOrderedDepth+1)
	if repeats > kills*4*pf*(idempotency.DefaultOrderedDepth+1) {
		t.Fatalf("%d repeats after %d kills: more than the lanes' windows allow", repeats, kills)
	}
	if tt.FunctionErrors == 0 || tt.Timeouts == 0 || tt.Duplicates == 0 || tt.Bisections == 0 || tt.Quarantined == 0 {
		t.Fatalf("a fault never fired: %+v", tt)
	}
}

// TestChaosLanes: 10,000 Kinesis records, parallelization factor 1 (a
// checkpoint per shard) and 2 (per shard and partition key).
func TestChaosLanes(t *testing.T) {
	for _, pf := range []int{1, 2} {
		t.Run(fmt.Sprint("pf=", pf), func(t *testing.T) { chaosLanes(t, 10000, pf) })
	}
}

// TestRunnerCatchesUndeclaredParallelization: a mapping that reads two
// batches of a shard at once (ParallelizationFactor 2) and a function
// told 1 (it keeps one checkpoint per shard): the second batch's records
// lie below the first's checkpoint, the function takes them for
// duplicates, and their effects never happen. The runner says so
// (no-record-lost violated), before a deployment would lose them; told
// 2, or not told at all (told=0: a checkpoint per shard and partition
// key, right whatever the factor), the same run holds.
func TestRunnerCatchesUndeclaredParallelization(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	recs := make([]localtest.InputRecord, 200)
	for i := range recs {
		recs[i] = localtest.InputRecord{PartitionKey: fmt.Sprintf("k%d", i%8), Data: json.RawMessage(fmt.Sprintf(`{"id":"r%d"}`, i))}
	}
	for _, told := range []int{1, 2, 0} {
		t.Run(fmt.Sprint("told=", told), func(t *testing.T) {
			table := servers.UniqueName(t, "pf")
			if err := dynamodbstore.CreateTable(context.Background(), db, table); err != nil {
				t.Fatal(err)
			}
			effects := filepath.Join(t.TempDir(), "effects.jsonl")
			inv, err := invoke.RuntimeAPI(bin, []string{"PATH=/usr/bin:/bin", "SLUICE_SOURCE=kinesis", "SLUICE_EFFECTS_FILE=" + effects,
				"SLUICE_IDEMPOTENCY_TABLE=" + table, "SLUICE_PARALLELIZATION_FACTOR=" + strings.TrimPrefix(strconv.Itoa(told), "0"),
				"AWS_ENDPOINT_URL_DYNAMODB=" + srv.Endpoint, "AWS_REGION=" + servers.Region,
				"AWS_ACCESS_KEY_ID=" + servers.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + servers.SecretAccessKey,
				"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull})
			if err != nil {
				t.Fatal(err)
			}
			defer inv.Close()
			m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(20),
				Shards: ptr(1), ParallelizationFactor: ptr(2), FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
			rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: recs, Invoker: inv, FunctionTimeout: 5 * time.Second,
				Effects: func() ([]localtest.Effect, error) { return localtest.ReadEffects(effects, "") }, ExactlyOnce: true})
			if err != nil {
				t.Fatal(err)
			}
			all, err := localtest.ReadEffects(effects, "")
			if err != nil {
				t.Fatal(err)
			}
			lost := ""
			for _, inv := range rep.Invariants {
				if inv.Name == localtest.InvariantNoLoss {
					lost = inv.Status
				}
			}
			switch {
			case told == 1 && (lost != localtest.StatusViolated || len(all) >= len(recs)):
				t.Fatalf("told 1: %d effects for %d records, no-record-lost %q; want records lost and the runner saying so", len(all), len(recs), lost)
			case told != 1 && (lost != localtest.StatusHeld || len(all) != len(recs)):
				t.Fatalf("told %d: %d effects for %d records, no-record-lost %q; want every record once", told, len(all), len(recs), lost)
			}
		})
	}
}
