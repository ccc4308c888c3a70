package localtest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// chaosCrashIdempotency runs n SQS messages through the compiled
// conformance function with idempotency on DynamoDB Local, while the
// runner kills its process inside invocations (crashes at every kill
// point, timeouts frozen mid-batch and killed at the deadline), fails and
// duplicates invocations: a killed process leaves effects done and claims
// in progress behind, and its memory is gone. Every message must still end
// processed, with one effect, or more only where a kill explains it: a
// process killed after a message's effect and before its completion was
// stored leaves the message to run again (the window no idempotency store
// closes: the effect is outside it), so each extra effect must come from
// an invocation the runner killed. The claims' lease is the default, as
// deployed.
func chaosCrashIdempotency(t *testing.T, n int) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "chaos")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(13, 13))
	recs := make([]localtest.InputRecord, n)
	for i := range recs {
		action := "ok"
		switch x := rnd.Float64(); {
		case x < 0.03:
			action = "transient:1" // heals within the invocation's retries
		case x < 0.04:
			action = "transient:5" // heals across invocations (of one process)
		}
		recs[i] = localtest.InputRecord{Body: []byte(fmt.Sprintf(`{"id":"o%d","action":%q}`, i, action))}
	}
	effects := filepath.Join(t.TempDir(), "effects.jsonl")
	env := []string{"PATH=/usr/bin:/bin", "SLUICE_SOURCE=sqs", "SLUICE_EFFECTS_FILE=" + effects, "SLUICE_RETRY_BACKOFF=1ms",
		"SLUICE_IDEMPOTENCY_TABLE=" + table, "AWS_ENDPOINT_URL_DYNAMODB=" + srv.Endpoint, "AWS_REGION=" + servers.Region,
		"AWS_ACCESS_KEY_ID=" + servers.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + servers.SecretAccessKey,
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
	stalls := &lineCounter{word: []byte("is claimed by another invocation")}
	inv, err := invoke.RuntimeAPI(bin, env, invoke.RuntimeAPILogs(stalls))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	m := &localtest.Mapping{
		EventSource: events.SourceSQS, BatchSize: ptr(50), MaximumBatchingWindowInSeconds: ptr(1),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"},
	}
	start := time.Now()
	rep, err := localtest.Run(context.Background(), localtest.Options{
		// Each injected timeout waits out the function's timeout (2 s, well
		// above a batch's few hundred milliseconds).
		Mapping: m, Records: recs, Invoker: inv, FunctionTimeout: 2 * time.Second, Seed: 42,
		Faults:      localtest.Faults{ErrorRate: 0.02, CrashRate: 0.15, TimeoutRate: 0.05, DuplicateRate: 0.15},
		Effects:     func() ([]localtest.Effect, error) { return localtest.ReadEffects(effects, "") },
		ExactlyOnce: true, AllowKillRepeats: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tt := rep.Totals
	t.Logf("%d messages in %v: %+v", n, time.Since(start).Round(time.Millisecond), tt)
	checkKills(t, rep, effects, 1) // one batch at a time: one execution environment
	// A claim a killed process left in progress makes its record fail
	// until the claim's lease ends: counted, not hidden.
	t.Logf("records failed on a claim left in progress: %d", stalls.count())
	for _, inv := range rep.Invariants {
		if inv.Status != localtest.StatusHeld {
			t.Errorf("invariant %s %s: %s %v", inv.Name, inv.Status, inv.Reason, inv.Violations)
		}
	}
	once := false
	for _, inv := range rep.Invariants {
		once = once || inv.Name == localtest.InvariantOnce
	}
	if !once {
		t.Errorf("the invariant %s was not checked: %+v", localtest.InvariantOnce, rep.Invariants)
	}
	if tt.Records != n || tt.Processed != n || tt.Left != 0 || tt.DeadLettered != 0 {
		t.Fatalf("every message must end processed: %+v", tt)
	}
	all, err := localtest.ReadEffects(effects, "")
	if err != nil {
		t.Fatal(err)
	}
	killed := map[string]bool{}
	for _, k := range rep.Kills {
		killed[k.RequestID] = true
	}
	runs := map[string][]string{} // message -> the invocations of its effects, in order
	for _, e := range all {
		runs[e.Record] = append(runs[e.Record], e.Request)
	}
	repeats := 0
	for rec, reqs := range runs {
		for _, req := range reqs[:len(reqs)-1] {
			if !killed[req] {
				t.Errorf("message %s took effect %d times (invocations %v): invocation %s was not killed, so nothing explains the repeat", rec, len(reqs), reqs, req)
			}
			repeats++
		}
	}
	t.Logf("effects repeated because a kill cut their run short before the completion was stored: %d (of %d kills)", repeats, len(rep.Kills))
	if len(runs) != n || len(all) != n+repeats {
		t.Fatalf("%d effects for %d messages: %d never took effect", len(all), n, n-len(runs))
	}
	if tt.FunctionErrors == 0 || tt.Timeouts == 0 || tt.Duplicates == 0 || tt.Redeliveries == 0 {
		t.Fatalf("a runner fault never fired: %+v", tt)
	}
}

// lineCounter counts the lines written to it that hold word.
type lineCounter struct {
	word []byte
	mu   sync.Mutex
	n    int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += bytes.Count(p, c.word)
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestChaosCrashIdempotency: see chaosCrashIdempotency.
func TestChaosCrashIdempotency(t *testing.T) { chaosCrashIdempotency(t, 3000) }
