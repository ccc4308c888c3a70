package localtest_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/localtest"
)

// Store fault kinds.
const (
	faultThrottle = iota // refused before it ran (ThrottlingException)
	faultTimeout         // timed out before it reached the table
	faultLost            // ran, but the answer was lost: the caller sees an error
	faultKinds
)

var faultNames = [faultKinds]string{"throttle", "timeout", "lost response"}

var ops = []string{"claim", "complete", "release", "get"}

// faultyStore wraps a store and makes rate of its calls fail, drawn at
// random, the kinds taking turns per operation so that every kind fires on
// every operation however the goroutines interleave; one batch lookup in
// ten fails too, since lookups are few (one per invocation). A call of one operation on one key fails at
// most twice in a row, fewer than Do's store retries, so every Complete
// lands: a Complete that fails for good leaves its claim in progress with
// the effect done, and the effect would run again once the lease runs out,
// which no store can prevent. Keys for which outage says true are refused
// their first five claims (throttled), more than Do retries: those records
// fail and must come back.
type faultyStore struct {
	idempotency.Store
	getter idempotency.Getter
	rate   float64
	outage func(key string) bool

	mu       sync.Mutex
	rnd      *rand.Rand
	row      map[string]int // consecutive faults per op and key
	calls    map[string]int // calls per op
	turn     map[string]int // faults per op, which picks the next kind
	claims   map[string]int // claims per outage key
	injected map[string]*[faultKinds]int
}

func newFaultyStore(s *idempotency.MemoryStore, rate float64, seed uint64, outage func(string) bool) *faultyStore {
	f := &faultyStore{Store: s, getter: s, rate: rate, outage: outage, rnd: rand.New(rand.NewPCG(seed, seed)),
		row: map[string]int{}, claims: map[string]int{}, calls: map[string]int{}, turn: map[string]int{},
		injected: map[string]*[faultKinds]int{}}
	for _, op := range ops {
		f.injected[op] = &[faultKinds]int{}
	}
	return f
}

type throttled struct{}

func (throttled) Error() string {
	return "ThrottlingException: rate of requests exceeds the allowed throughput"
}

// fault decides whether this call of op on key fails, and how.
func (f *faultyStore) fault(op, key string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op == "claim" && f.outage(key) {
		if f.claims[key]++; f.claims[key] <= 5 {
			f.injected[op][faultThrottle]++
			return faultThrottle, true
		}
	}
	k := op + "\x00" + key
	f.calls[op]++
	forced := op == "get" && f.calls[op]%10 == 3
	if f.row[k] >= 2 || !forced && f.rnd.Float64() >= f.rate {
		delete(f.row, k)
		return 0, false
	}
	f.row[k]++
	kind := f.turn[op] % faultKinds
	f.turn[op]++
	f.injected[op][kind]++
	return kind, true
}

func storeFault(op, key string, kind int) error {
	var err error = throttled{}
	switch kind {
	case faultTimeout:
		err = fmt.Errorf("operation timed out: %w", context.DeadlineExceeded)
	case faultLost:
		err = errors.New("connection reset by peer after the request was sent")
	}
	return &idempotency.StoreError{Op: op, Key: key, Retryable: true, Err: err}
}

// call runs op through the fault injector: a throttle or a timeout never
// reaches the store; a lost response does, and then fails.
func (f *faultyStore) call(op, key string, do func() error) error {
	kind, ok := f.fault(op, key)
	if !ok {
		return do()
	}
	if kind == faultLost {
		_ = do()
	}
	return storeFault(op, key, kind)
}

func (f *faultyStore) Claim(ctx context.Context, c idempotency.Claim) (rec *idempotency.Record, err error) {
	err = f.call("claim", c.Key, func() (err error) { rec, err = f.Store.Claim(ctx, c); return err })
	if err != nil {
		return nil, err
	}
	return rec, nil
}

func (f *faultyStore) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	return f.call("complete", key, func() error { return f.Store.Complete(ctx, key, owner, result, expires) })
}

func (f *faultyStore) Release(ctx context.Context, key, owner string) error {
	return f.call("release", key, func() error { return f.Store.Release(ctx, key, owner) })
}

func (f *faultyStore) Get(ctx context.Context, keys []string) (recs map[string]*idempotency.Record, err error) {
	if len(keys) == 0 {
		return f.getter.Get(ctx, keys)
	}
	err = f.call("get", keys[0], func() (err error) { recs, err = f.getter.Get(ctx, keys); return err })
	if err != nil {
		return nil, err
	}
	return recs, nil
}

type chaosOrder struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

// chaosEffects is the function under test's side: it counts every effect
// per message and fails some messages' first calls.
type chaosEffects struct {
	mu      sync.Mutex
	calls   map[string]int
	effects []localtest.Effect
	count   map[string]int
}

func (c *chaosEffects) process(ctx context.Context, r handlers.SQSRecord[chaosOrder]) error {
	c.mu.Lock()
	c.calls[r.Value.ID]++
	call := c.calls[r.Value.ID]
	c.mu.Unlock()
	switch {
	case r.Value.Action == "fail" && call == 1:
		return fmt.Errorf("order %s: asked to fail once", r.Value.ID) // its claim is released
	case r.Value.Action == "panic" && call == 1:
		panic("order " + r.Value.ID + ": asked to panic once")
	case r.Value.Action == "transient" && call == 1:
		return batch.Transient(fmt.Errorf("order %s: transient", r.Value.ID)) // retried inside the claim
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.effects = append(c.effects, localtest.Effect{Record: r.MessageID(), ID: r.Value.ID})
	c.count[r.MessageID()]++
	return nil
}

// chaosIdempotency runs n SQS messages through an in-process SQS handler
// with idempotency on, over a store that injects every fault kind on every
// operation, while the runner fails and duplicates invocations: every
// message must end processed with exactly one effect. Crashes and
// timeouts need a process to kill: TestChaosCrashIdempotency runs them,
// through the compiled conformance function on DynamoDB Local.
func chaosIdempotency(t *testing.T, n int) {
	rnd := rand.New(rand.NewPCG(11, 11))
	recs := make([]localtest.InputRecord, n)
	for i := range recs {
		action := "ok"
		switch x := rnd.Float64(); {
		case x < 0.02:
			action = "fail"
		case x < 0.025:
			action = "panic"
		case x < 0.045:
			action = "transient"
		}
		recs[i] = localtest.InputRecord{Body: []byte(fmt.Sprintf(`{"id":"o%d","action":%q}`, i, action))}
	}
	outage := func(key string) bool {
		h := fnv.New32a()
		h.Write([]byte(key))
		return h.Sum32()%400 == 0
	}
	store := newFaultyStore(idempotency.NewMemoryStore(), 0.06, 5, outage)
	fn := &chaosEffects{calls: map[string]int{}, count: map[string]int{}}
	fast := batch.BackoffFunc(func(int) time.Duration { return 0 }) // the waits are not under test
	h, err := handlers.NewSQS(fn.process,
		handlers.WithIdempotency(store, idempotency.WithStoreRetries(4, fast)),
		handlers.WithRetry(batch.RetryPolicy{Retries: 2, Backoff: fast}),
		handlers.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	m := &localtest.Mapping{
		EventSource: events.SourceSQS, BatchSize: ptr(100), MaximumBatchingWindowInSeconds: ptr(1),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		ScalingConfig:         &localtest.ScalingConfig{MaximumConcurrency: ptr(4)},
	}
	start := time.Now()
	rep, err := localtest.Run(context.Background(), localtest.Options{
		Mapping: m, Records: recs, Invoker: localtest.InProcess(h), FunctionTimeout: time.Minute, Seed: 42,
		Faults: localtest.Faults{ErrorRate: 0.01, DuplicateRate: 0.05},
		Effects: func() ([]localtest.Effect, error) {
			fn.mu.Lock()
			defer fn.mu.Unlock()
			return append([]localtest.Effect(nil), fn.effects...), nil
		},
		ExactlyOnce: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tt := rep.Totals
	t.Logf("%d messages in %v: %+v", n, time.Since(start).Round(time.Millisecond), tt)
	for _, op := range ops {
		t.Logf("store faults on %s: %v", op, *store.injected[op])
	}
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
	twice, lost := 0, 0
	for _, c := range fn.count {
		if c > 1 {
			twice++
		}
	}
	lost = n - len(fn.count)
	if twice > 0 || lost > 0 || len(fn.effects) != n {
		t.Fatalf("%d effects for %d messages: %d took effect twice or more, %d never", len(fn.effects), n, twice, lost)
	}
	// Every fault fired, or the test proves less than it claims.
	for _, op := range ops {
		for kind, c := range store.injected[op] {
			if c == 0 {
				t.Errorf("no %s was injected on %s", faultNames[kind], op)
			}
		}
	}
	if tt.FunctionErrors == 0 || tt.Duplicates == 0 || tt.PartialFailures == 0 || tt.Redeliveries == 0 {
		t.Fatalf("a runner fault never fired: %+v", tt)
	}
}
