package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
)

// A window handler folds each record into a typed aggregate that Lambda
// carries from invoke to invoke of a tumbling window, and hands the
// aggregate to a final function when the window closes.
func ExampleNewKinesisWindow() {
	type total struct {
		Orders int
		Amount float64
	}
	fold := func(_ context.Context, t total, r handlers.KinesisRecord[Order]) (total, error) {
		return total{t.Orders + 1, t.Amount + r.Value.Amount}, nil
	}
	final := func(_ context.Context, w handlers.Window, t total) error {
		fmt.Printf("window %s of %s: %d orders, %.2f\n", w.Start.Format("15:04"), w.ShardID, t.Orders, t.Amount)
		return nil
	}
	h, err := handlers.NewKinesisWindow(fold, final, append(exampleOpts, handlers.WithWindowIdempotency(idempotency.NewMemoryStore()))...)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	invoke := func(state map[string]string, final bool, orders ...[]byte) map[string]string {
		b := &sevents.KinesisBuilder{}
		for _, o := range orders {
			b.Add("pk", o)
		}
		ev := events.KinesisTimeWindowEvent{KinesisEvent: b.Event(), TimeWindowProperties: events.TimeWindowProperties{
			Window: events.Window{Start: events.RFC3339EpochTime{Time: start}, End: events.RFC3339EpochTime{Time: start.Add(5 * time.Minute)}},
			State:  state, ShardID: "shardId-000000000000", IsFinalInvokeForWindow: final}}
		if final {
			ev.Records = nil
		}
		raw, _ := json.Marshal(ev)
		out, err := h.Invoke(context.Background(), raw)
		if err != nil {
			panic(err)
		}
		var resp events.KinesisTimeWindowEventResponse
		json.Unmarshal(out, &resp)
		return resp.State
	}
	s := invoke(nil, false, order("o-1", 10), order("o-2", 5.5))
	fmt.Println("state after the first invoke:", s)
	s = invoke(s, false, order("o-3", 4.5))
	invoke(s, true)
	invoke(s, true) // Lambda retries a final invoke whose answer it lost: written once
	// Output:
	// state after the first invoke: map[json:{"Orders":2,"Amount":15.5} sluice:1]
	// window 12:00 of shardId-000000000000: 3 orders, 20.00
}
