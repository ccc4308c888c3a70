package localtest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/invocation"
)

// timesOutOnce is an invoker whose first invocation takes every record's
// effect and then runs into its deadline (as a function whose batch was
// slow under load: the invoker killed its process, no injected fault);
// later ones take every effect again and succeed. A fake: a real process
// cannot be made to run past its deadline at one chosen moment.
type timesOutOnce struct {
	mu      sync.Mutex
	calls   int
	effects []Effect
}

func (f *timesOutOnce) Invoke(_ context.Context, inv invocation.Invocation) (invocation.Response, error) {
	var ev events.KinesisEvent
	if err := json.Unmarshal(inv.Payload, &ev); err != nil {
		return invocation.Response{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, r := range ev.Records {
		f.effects = append(f.effects, Effect{Record: r.Kinesis.SequenceNumber, Request: inv.RequestID})
	}
	if f.calls == 1 {
		return invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Payload: []byte(`{"errorType":"Sandbox.Timedout"}`)}, nil
	}
	return invocation.Response{Payload: []byte(`{"batchItemFailures":[]}`)}, nil
}

func (f *timesOutOnce) Close() error { return nil }

func (f *timesOutOnce) read() ([]Effect, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Effect(nil), f.effects...), nil
}

// TestTimedOutInvocationIsAKill: an invocation that ran into its deadline
// was killed wherever it was in its batch, as an injected mid-batch crash
// is: with AllowKillRepeats, the effects it left that its retry repeats
// are allowed (effect-once holds, saying so); without it they violate
// effect-once.
func TestTimedOutInvocationIsAKill(t *testing.T) {
	for _, allow := range []bool{true, false} {
		f := &timesOutOnce{}
		rep, err := Run(context.Background(), Options{Mapping: kinesisMapping(3, nil), Records: kinesisRecords(3, oneKey), Invoker: f,
			Effects: f.read, ExactlyOnce: true, AllowKillRepeats: allow})
		if err != nil {
			t.Fatal(err)
		}
		if f.calls != 2 || rep.Totals.Timeouts != 1 || rep.Totals.Processed != 3 {
			t.Fatalf("allow %v: %d invocations, totals %+v; want a timeout then a success", allow, f.calls, rep.Totals)
		}
		status := ""
		for _, inv := range rep.Invariants {
			if inv.Name == InvariantOnce {
				status = inv.Status
			}
		}
		if want := map[bool]string{true: StatusHeld, false: StatusViolated}[allow]; status != want {
			t.Fatalf("allow %v: effect-once %q, want %q: %+v", allow, status, want, rep.Invariants)
		}
	}
}
