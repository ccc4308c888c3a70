package storetest_test

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/storetest"
)

// A store's own test runs the whole suite, with a fresh store (or a
// shared table: keys are unique per subtest) for each subtest. This is
// how idempotency's test runs it on MemoryStore; it needs a *testing.T, so
// it is compiled here, not run.
func ExampleRun() {
	testMemoryStore := func(t *testing.T) {
		storetest.Run(t, func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() })
	}
	_ = testMemoryStore
}

// What the suite asks of a store, one rule at a time, on MemoryStore (which
// passes it): a claim takes a free key; a second claim finds the first in
// progress until its lease lapses; a completed key holds its result until
// it expires. The suite checks these and more (Extend, Release, Get,
// payload hashes, concurrent claims) against the store it is given.
func Example_rules() {
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	now := time.Unix(1_800_000_000, 0)
	claim := func(owner string, at time.Time) idempotency.Claim {
		return idempotency.Claim{Key: "order-42", Owner: owner, Now: at,
			LeaseUntil: at.Add(10 * time.Second), Expires: at.Add(time.Hour)}
	}
	show := func(what string, rec *idempotency.Record, err error) {
		if err != nil {
			log.Fatal(err)
		}
		if rec == nil {
			fmt.Println(what + ": claimed")
			return
		}
		fmt.Printf("%s: found %s by %s %q\n", what, rec.Status, rec.Owner, rec.Result)
	}
	rec, err := store.Claim(ctx, claim("a", now))
	show("a claims a free key", rec, err)
	rec, err = store.Claim(ctx, claim("b", now.Add(time.Second)))
	show("b claims it 1s later", rec, err)
	rec, err = store.Claim(ctx, claim("b", now.Add(11*time.Second)))
	show("b claims it after a's lease lapsed", rec, err)
	if err := store.Complete(ctx, "order-42", "b", []byte("receipt-1"), now.Add(time.Hour)); err != nil {
		log.Fatal(err)
	}
	rec, err = store.Claim(ctx, claim("c", now.Add(time.Minute)))
	show("c claims the completed key", rec, err)
	rec, err = store.Claim(ctx, claim("c", now.Add(2*time.Hour)))
	show("c claims it after it expired", rec, err)
	// Output:
	// a claims a free key: claimed
	// b claims it 1s later: found INPROGRESS by a ""
	// b claims it after a's lease lapsed: claimed
	// c claims the completed key: found COMPLETED by b "receipt-1"
	// c claims it after it expired: claimed
}
