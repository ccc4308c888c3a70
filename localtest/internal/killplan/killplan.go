// Package killplan is how the localtest runner plans an injected crash or
// timeout (where in the invocation the function's process is killed, and
// when) and says in words what the kill did. It is pure: the runner draws
// the random numbers and keeps the durations it plans from.
package killplan

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

// Pace is how long an answered invocation took for its payload's size.
type Pace struct {
	D     time.Duration
	Bytes int
}

// Expected is how long an invocation of size payload bytes is expected to
// take at the pace of recent: their total duration over their total size,
// times size (0 when nothing is known), at most limit.
func Expected(recent []Pace, size int, limit time.Duration) time.Duration {
	var d time.Duration
	b := 0
	for _, p := range recent {
		d += p.D
		b += p.Bytes
	}
	if b == 0 {
		return 0
	}
	return min(time.Duration(float64(d)*float64(size)/float64(b)), limit)
}

// Shares of injected crashes at each kill point: at the hand-over, mid-batch
// (the rest), before the answer.
const (
	shareHandOver     = 0.2
	shareBeforeAnswer = 0.2
)

// Plan turns two uniform draws in [0,1) into an injected crash (timeout
// false) or timeout: u picks the point (a timeout is always frozen at a
// moment, which may come after the function answered), v the moment,
// uniform over expected, the invocation's expected duration.
func Plan(timeout bool, u, v float64, expected time.Duration) *invocation.Kill {
	after := time.Duration(v * float64(expected))
	switch {
	case timeout:
		return &invocation.Kill{Point: invocation.KillMidBatch, After: after, Timeout: true}
	case u < shareHandOver:
		return &invocation.Kill{Point: invocation.KillAtHandOver}
	case u >= 1-shareBeforeAnswer:
		return &invocation.Kill{Point: invocation.KillBeforeAnswer}
	}
	return &invocation.Kill{Point: invocation.KillMidBatch, After: after}
}

// Words says in plain words what an injected kill did; timeout is the
// function's timeout, effects the number of effects the killed invocation
// left behind, or -1 when unknown.
func Words(k *invocation.Kill, timeout time.Duration, effects int) string {
	var s string
	switch {
	case k.Timeout && k.Point == invocation.KillBeforeAnswer:
		s = fmt.Sprintf("timed out: the function had answered (its answer was held), the process was frozen and killed at the deadline (%v)", timeout)
	case k.Timeout:
		s = fmt.Sprintf("timed out: the process was frozen mid-batch %v after the hand-over and killed at the deadline (%v)", roundMs(k.After), timeout)
	case k.Point == invocation.KillAtHandOver:
		s = "crashed: the process was killed at the hand-over, before the first record"
	case k.Point == invocation.KillBeforeAnswer:
		s = "crashed: the process was killed after the function's last effect, before its answer reached Lambda"
	default:
		s = fmt.Sprintf("crashed: the process was killed mid-batch, %v after the hand-over", roundMs(k.After))
	}
	switch {
	case effects == 1:
		s += ", after 1 effect"
	case effects >= 0:
		s += fmt.Sprintf(", after %d effects", effects)
	}
	return s + "; the next invocation in its execution environment starts a new process"
}

func roundMs(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
