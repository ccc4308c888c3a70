package killplan

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

func TestPlanKill(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		timeout  bool
		u, v     float64
		expected time.Duration
		want     invocation.Kill
	}{
		{"crash at the hand-over", false, 0, 0.5, 20 * ms, invocation.Kill{Point: invocation.KillAtHandOver}},
		{"crash at the hand-over, last share", false, 0.199, 0.5, 20 * ms, invocation.Kill{Point: invocation.KillAtHandOver}},
		{"crash mid-batch", false, 0.2, 0.5, 20 * ms, invocation.Kill{Point: invocation.KillMidBatch, After: 10 * ms}},
		{"crash mid-batch, last share", false, 0.799, 0.25, 20 * ms, invocation.Kill{Point: invocation.KillMidBatch, After: 5 * ms}},
		{"crash before the answer", false, 0.8, 0.5, 20 * ms, invocation.Kill{Point: invocation.KillBeforeAnswer}},
		{"crash mid-batch with no duration known", false, 0.5, 0.9, 0, invocation.Kill{Point: invocation.KillMidBatch}},
		{"timeout", true, 0.1, 0.5, 20 * ms, invocation.Kill{Point: invocation.KillMidBatch, After: 10 * ms, Timeout: true}},
		{"timeout, any u", true, 0.95, 0, 20 * ms, invocation.Kill{Point: invocation.KillMidBatch, Timeout: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan(tc.timeout, tc.u, tc.v, tc.expected); *got != tc.want {
				t.Fatalf("Plan = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestExpectedDuration(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		recent []Pace
		size   int
		want   time.Duration
	}{
		{"nothing known", nil, 1000, 0},
		{"one like it", []Pace{{10 * ms, 1000}}, 1000, 10 * ms},
		{"at the pace of all: 40ms for 2000 bytes", []Pace{{10 * ms, 1000}, {30 * ms, 1000}}, 500, 10 * ms},
		{"a big batch after small ones", []Pace{{2 * ms, 100}, {2 * ms, 100}}, 10000, 200 * ms},
		{"at most the limit", []Pace{{100 * ms, 100}}, 100000, time.Second},
		{"empty payloads", []Pace{{10 * ms, 0}}, 100, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expected(tc.recent, tc.size, time.Second); got != tc.want {
				t.Fatalf("Expected = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKillWords(t *testing.T) {
	cases := []struct {
		k       invocation.Kill
		effects int
		want    string
	}{
		{invocation.Kill{Point: invocation.KillAtHandOver}, -1, "crashed: the process was killed at the hand-over, before the first record; the next invocation in its execution environment starts a new process"},
		{invocation.Kill{Point: invocation.KillMidBatch, After: 14 * time.Millisecond}, 2,
			"crashed: the process was killed mid-batch, 14ms after the hand-over, after 2 effects; the next invocation in its execution environment starts a new process"},
		{invocation.Kill{Point: invocation.KillBeforeAnswer}, 1,
			"crashed: the process was killed after the function's last effect, before its answer reached Lambda, after 1 effect; the next invocation in its execution environment starts a new process"},
		{invocation.Kill{Point: invocation.KillMidBatch, After: 300 * time.Microsecond, Timeout: true}, 0,
			"timed out: the process was frozen mid-batch 300µs after the hand-over and killed at the deadline (3s), after 0 effects; the next invocation in its execution environment starts a new process"},
		{invocation.Kill{Point: invocation.KillBeforeAnswer, Timeout: true}, -1,
			"timed out: the function had answered (its answer was held), the process was frozen and killed at the deadline (3s); the next invocation in its execution environment starts a new process"},
	}
	for _, tc := range cases {
		if got := Words(&tc.k, 3*time.Second, tc.effects); got != tc.want {
			t.Errorf("Words(%+v, %d)\n got %s\nwant %s", tc.k, tc.effects, got, tc.want)
		}
	}
}
