package attemptstest_test

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/attemptstest"
)

// A store's own test runs the whole suite with a fresh store (or a shared
// table: keys are unique per subtest). This is how package dlq's test
// runs it on Memory; it needs a *testing.T, so it is compiled here, not
// run.
func ExampleRun() {
	testMemory := func(t *testing.T) {
		attemptstest.Run(t, func(*testing.T) dlq.AttemptsStore { return dlq.NewMemory(0) })
	}
	_ = testMemory
}

// What the suite asks of an AttemptsStore, on Memory (which passes it): a
// delivery alone in its batch counts before it runs (Begin), an answered
// failure counts unless Begin already did and resets Isolated (Fail), and
// Forget starts the record over. Two Begins in a row without a failure
// are what a crash of the whole function looks like.
func Example_rules() {
	ctx := context.Background()
	store := dlq.NewMemory(0)
	key := "fn#arn:aws:kinesis:us-east-1:1:stream/s#shardId-000000000000#49590338271490256608559692538361571095921575989136588898"
	now := time.Unix(1_800_000_000, 0).UTC()
	show := func(what string, a dlq.Attempts, err error) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-26s count %d, isolated %d, last error %q\n", what+":", a.Count, a.Isolated, a.LastError)
	}
	a, err := store.Begin(ctx, key, now)
	show("alone, before it runs", a, err)
	a, err = store.Begin(ctx, key, now.Add(time.Second))
	show("alone again: it crashed", a, err)
	a, err = store.Fail(ctx, key, true, dlq.Failure{Time: now.Add(2 * time.Second), Error: "boom", Class: "transient"})
	show("it answered a failure", a, err)
	a, err = store.Fail(ctx, key, false, dlq.Failure{Time: now.Add(3 * time.Second), Error: "again", Class: "transient"})
	show("failed in a larger batch", a, err)
	if err := store.Forget(ctx, key); err != nil {
		log.Fatal(err)
	}
	a, err = store.Begin(ctx, key, now.Add(4*time.Second))
	show("after Forget", a, err)
	// Output:
	// alone, before it runs:     count 1, isolated 1, last error ""
	// alone again: it crashed:   count 2, isolated 2, last error ""
	// it answered a failure:     count 2, isolated 0, last error "boom"
	// failed in a larger batch:  count 3, isolated 0, last error "again"
	// after Forget:              count 1, isolated 1, last error ""
}
