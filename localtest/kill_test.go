package localtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

// TestKillFaultsNeedAProcess: crash and timeout faults are refused for an
// invoker that cannot kill the function's process, never turned into a
// polite crash.
func TestKillFaultsNeedAProcess(t *testing.T) {
	ok := fn(func(context.Context, []byte) ([]byte, error) { return nil, nil })
	for _, tc := range []struct {
		name string
		inv  invocation.Invoker
		f    Faults
	}{
		{"in process, crash", InProcess(ok), Faults{CrashRate: 0.5}},
		{"in process, timeout", InProcess(ok), Faults{TimeoutRate: 0.01}},
		{"a Killer that cannot kill", &fakeKiller{can: false}, Faults{CrashRate: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), Options{Mapping: kinesisMapping(10, nil), Records: kinesisRecords(3, oneKey), Invoker: tc.inv, Faults: tc.f})
			if !errors.Is(err, errKillFaults) || !strings.Contains(err.Error(), "need a process to kill") || !strings.Contains(err.Error(), "--handler") {
				t.Fatalf("want the error that crash faults need a process, got %v", err)
			}
		})
	}
	// Other faults still run in process.
	if _, err := Run(context.Background(), Options{Mapping: kinesisMapping(10, nil), Records: kinesisRecords(3, oneKey), Invoker: InProcess(ok),
		Faults: Faults{ErrorRate: 0.5, DuplicateRate: 0.5}}); err != nil {
		t.Fatal(err)
	}
}

// fakeKiller answers every invocation as the function would, except those
// Run asked to kill: it answers those as a killed process, landing where
// it was asked, and notes every plan.
type fakeKiller struct {
	can   bool
	plans []*invocation.Kill
}

func (f *fakeKiller) CanKill() bool { return f.can }
func (f *fakeKiller) Close() error  { return nil }
func (f *fakeKiller) Invoke(_ context.Context, inv invocation.Invocation) (invocation.Response, error) {
	f.plans = append(f.plans, inv.Kill)
	if k := inv.Kill; k != nil {
		if k.Timeout {
			return invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Killed: k,
				Payload: errorDocument("Task timed out after 3.00 seconds", "Sandbox.Timedout")}, nil
		}
		return invocation.Response{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError", Killed: k,
			Payload: errorDocument("Runtime exited with error: signal: killed", "Runtime.ExitError")}, nil
	}
	return invocation.Response{Payload: []byte(`{}`), Duration: 40 * time.Millisecond}, nil
}

// TestKillPlans: Run draws kills in invocation order from the seed (a run
// repeats), hands them to a Killer, and says in the trace and the report
// that the process was killed and where, with the effects each killed
// invocation left behind.
func TestKillPlans(t *testing.T) {
	runOnce := func() (*Report, *traced, *fakeKiller) {
		f := &fakeKiller{can: true}
		effects := []Effect{{Record: "x", Request: "unknown"}}
		rep, tr := run(t, Options{Mapping: kinesisMapping(1, func(m *Mapping) { m.MaximumRetryAttempts = ptr(-1) }), Records: kinesisRecords(60, oneKey),
			Invoker: f, Seed: 9, Faults: Faults{CrashRate: 0.3, TimeoutRate: 0.2},
			Effects: func() ([]Effect, error) { return effects, nil }})
		return rep, tr, f
	}
	rep, tr, f := runOnce()
	_, _, again := runOnce()
	// Which invocations, and which points, repeat; a moment depends on the
	// payloads' sizes (their arrival timestamps come from the wall clock).
	same := func(a, b *invocation.Kill) bool {
		return (a == nil) == (b == nil) && (a == nil || a.Point == b.Point && a.Timeout == b.Timeout)
	}
	if !slices.EqualFunc(f.plans, again.plans, same) {
		t.Fatal("the same seed drew different kills")
	}
	points := map[invocation.KillPoint]int{}
	timeouts, crashes := 0, 0
	for _, p := range f.plans {
		switch {
		case p == nil:
		case p.Timeout:
			timeouts++
		default:
			crashes++
			points[p.Point]++
		}
	}
	if points[invocation.KillAtHandOver] == 0 || points[invocation.KillMidBatch] == 0 || points[invocation.KillBeforeAnswer] == 0 || timeouts == 0 {
		t.Fatalf("want crashes at every point and timeouts: %v, %d timeouts", points, timeouts)
	}
	if rep.Totals.Crashes != crashes || rep.Totals.Timeouts != timeouts || len(rep.Kills) != crashes+timeouts {
		t.Fatalf("totals %+v, %d kills; want %d crashes, %d timeouts", rep.Totals, len(rep.Kills), crashes, timeouts)
	}
	killed := 0
	for _, e := range tr.entries {
		if e.Killed != "" {
			killed++
			if !strings.Contains(e.Killed, "the process was") || !strings.Contains(e.Killed, "new process") {
				t.Fatalf("trace entry %d: killed %q", e.N, e.Killed)
			}
		}
	}
	if killed != crashes+timeouts {
		t.Fatalf("%d trace entries say killed, want %d", killed, crashes+timeouts)
	}
	for _, k := range rep.Kills {
		if k.Effects != 0 || !strings.Contains(k.What, "after 0 effects") {
			t.Fatalf("kill %+v: the effects name their invocations, none of these: want 0 effects", k)
		}
	}
	// A mid-batch moment is drawn over the expected duration: answered
	// invocations of one record (of about the same size) took 40ms each.
	for _, p := range f.plans {
		if p != nil && (p.After < 0 || p.After > 50*time.Millisecond) {
			t.Fatalf("plan %+v: After outside [0, 50ms]", p)
		}
	}
}

func TestCountKillEffects(t *testing.T) {
	kills := []KilledInvocation{{N: 1, RequestID: "a", Point: invocation.KillMidBatch, Effects: -1}, {N: 2, RequestID: "b", Point: invocation.KillAtHandOver, Effects: -1}}
	countKillEffects(kills, []Effect{{Record: "1"}, {Record: "2"}}, time.Second)
	if kills[0].Effects != -1 {
		t.Fatalf("effects without request ids cannot be counted: %+v", kills[0])
	}
	countKillEffects(kills, []Effect{{Record: "1", Request: "a"}, {Record: "2", Request: "a"}, {Record: "3", Request: "c"}}, time.Second)
	if kills[0].Effects != 2 || kills[1].Effects != 0 || !strings.Contains(kills[0].What, "mid-batch") || !strings.Contains(kills[0].What, "after 2 effects") {
		t.Fatalf("kills %+v", kills)
	}
}
