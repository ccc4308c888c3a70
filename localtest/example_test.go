package localtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/localtest"
)

// Run emulates a Kinesis event source mapping over four records against an
// in-process handler: batching, the partial batch response, retries,
// bisection and the on-failure record Lambda sends when it gives up on the
// poison record, which its records line expects. The function's effects
// feed the checks: nothing lost, order per key kept, every fate as
// expected.
func ExampleRun() {
	var mu sync.Mutex
	var effects []localtest.Effect
	h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[struct{ ID string }]) error {
		if r.Value.ID == "o-3" {
			return errors.New("payments API rejects o-3")
		}
		mu.Lock()
		effects = append(effects, localtest.Effect{Record: r.Raw.Kinesis.SequenceNumber, Key: r.Raw.Kinesis.PartitionKey})
		mu.Unlock()
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithRetry(batch.RetryPolicy{}))

	retries, bisect := 2, true
	m := &localtest.Mapping{EventSource: events.SourceKinesis, FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		MaximumRetryAttempts: &retries, BisectBatchOnFunctionError: &bisect, StartingPosition: "TRIM_HORIZON"}
	var records []localtest.InputRecord
	for i, key := range []string{"alice", "bob", "alice", "bob"} {
		rec := localtest.InputRecord{PartitionKey: key, Data: json.RawMessage(fmt.Sprintf(`{"ID":"o-%d"}`, i+1))}
		if i == 2 {
			rec.Expect = localtest.FateOnFailure
		}
		records = append(records, rec)
	}
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: records, Invoker: localtest.InProcess(h),
		Effects: func() ([]localtest.Effect, error) { return effects, nil }})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("processed %d, on-failure %d, on-failure records sent %d\n", rep.Totals.Processed, rep.Totals.OnFailure, len(rep.OnFailureRecords))
	for _, inv := range rep.Invariants {
		fmt.Println(inv.Name, inv.Status)
	}
	fmt.Println("held:", rep.Held())
	// Output:
	// processed 3, on-failure 1, on-failure records sent 1
	// no-record-lost held
	// order-per-key held
	// fate-as-expected held
	// held: true
}
