package deadletter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
)

func TestQuarantine(t *testing.T) {
	for _, tc := range []struct {
		name            string
		class           batch.Class
		attempts, limit int
		want            string
	}{
		{"no error", batch.ClassNone, 9, 1, ""},
		{"permanent, first attempt", batch.ClassPermanent, 1, 0, dlq.ReasonPermanent},
		{"permanent wins over attempts", batch.ClassPermanent, 5, 3, dlq.ReasonPermanent},
		{"plain below limit", batch.ClassPlain, 2, 3, ""},
		{"plain at limit", batch.ClassPlain, 3, 3, dlq.ReasonAttempts},
		{"plain past limit", batch.ClassPlain, 4, 3, dlq.ReasonAttempts},
		{"transient at limit", batch.ClassTransient, 1, 1, dlq.ReasonAttempts},
		{"no limit", batch.ClassPlain, 1000, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quarantine(tc.class, tc.attempts, tc.limit); got != tc.want {
				t.Fatalf("Quarantine(%v, %d, %d) = %q, want %q", tc.class, tc.attempts, tc.limit, got, tc.want)
			}
		})
	}
}

func TestBlame(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a     dlq.Attempts
		alone bool
		limit int
		want  bool
	}{
		{"first delivery alone runs", dlq.Attempts{Count: 1, Isolated: 1}, true, 1, false},
		{"a healthy head counted many times, alone once", dlq.Attempts{Count: 9, Isolated: 1}, true, 3, false},
		{"crashed alone once, limit 1", dlq.Attempts{Count: 2, Isolated: 2}, true, 1, true},
		{"crashed alone once, limit 3", dlq.Attempts{Count: 2, Isolated: 2}, true, 3, false},
		{"crashed alone twice, limit 3", dlq.Attempts{Count: 3, Isolated: 3}, true, 3, true},
		{"answered failures, then a crash alone", dlq.Attempts{Count: 4, Isolated: 2}, true, 3, true},
		{"answered failure reset the streak", dlq.Attempts{Count: 5, Isolated: 1}, true, 3, false},
		{"not alone", dlq.Attempts{Count: 9, Isolated: 9}, false, 3, false},
		{"no limit", dlq.Attempts{Count: 9, Isolated: 9}, true, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Blame(tc.a, tc.alone, tc.limit); got != tc.want {
				t.Fatalf("Blame(%+v, %v, %d) = %v, want %v", tc.a, tc.alone, tc.limit, got, tc.want)
			}
		})
	}
}

// invocation is one delivery in a simulated bisection.
type invocation struct {
	a, b    int // the batch [a, b)
	count   int // the head's attempts after Begin (0: not alone, not counted)
	iso     int // its Isolated after Begin
	blamed  bool
	crashed bool
}

// bisect simulates a Kinesis mapping with BisectBatchOnFunctionError and
// unlimited retries over records [0, n), where record poison crashes the
// function, and the crash rule with store and limit. It returns each
// invocation and which records were quarantined.
func bisect(t *testing.T, n, poison, limit int) ([]invocation, []int) {
	t.Helper()
	store := dlq.NewMemory(0)
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	var out []invocation
	var quarantined []int
	pos := 0
	var split [][2]int
	for pos < n {
		if len(out) > 10_000 {
			t.Fatal("the simulation does not end")
		}
		a, b := pos, n
		if len(split) > 0 {
			a, b = split[0][0], split[0][1]
		}
		inv := invocation{a: a, b: b}
		if b-a == 1 {
			at, err := store.Begin(ctx, strconv.Itoa(a), now)
			if err != nil {
				t.Fatal(err)
			}
			inv.count, inv.iso = at.Count, at.Isolated
			inv.blamed = Blame(at, true, limit)
		}
		switch {
		case inv.blamed:
			quarantined = append(quarantined, a)
		case a <= poison && poison < b:
			inv.crashed = true
		}
		out = append(out, inv)
		now = now.Add(time.Second)
		if inv.crashed {
			if b-a > 1 {
				m := a + (b-a)/2
				rest := split
				if len(rest) > 0 {
					rest = rest[1:]
				}
				split = append([][2]int{{a, m}, {m, b}}, rest...)
			}
			continue // a lone record is retried as it is
		}
		if len(split) > 0 {
			split = split[1:]
		}
		if len(split) == 0 {
			pos = b
		}
	}
	return out, quarantined
}

// TestBlameUnderBisection walks Lambda's bisection of a batch of 1000
// records whose record 510 crashes the function, with a limit of 3: every
// delivery, the head's attempts after Begin, and the decision. Healthy
// heads of crashing batches (0, 500, 507, 509) are never counted or
// blamed; 509, isolated once because its neighbour crashed, runs; 510 runs
// alone twice, crashes twice, and is quarantined on its third delivery.
func TestBlameUnderBisection(t *testing.T) {
	got, quarantined := bisect(t, 1000, 510, 3)
	want := []invocation{
		{a: 0, b: 1000, crashed: true},
		{a: 0, b: 500},
		{a: 500, b: 1000, crashed: true},
		{a: 500, b: 750, crashed: true},
		{a: 500, b: 625, crashed: true},
		{a: 500, b: 562, crashed: true},
		{a: 500, b: 531, crashed: true},
		{a: 500, b: 515, crashed: true},
		{a: 500, b: 507},
		{a: 507, b: 515, crashed: true},
		{a: 507, b: 511, crashed: true},
		{a: 507, b: 509},
		{a: 509, b: 511, crashed: true},
		{a: 509, b: 510, count: 1, iso: 1},
		{a: 510, b: 511, count: 1, iso: 1, crashed: true},
		{a: 510, b: 511, count: 2, iso: 2, crashed: true},
		{a: 510, b: 511, count: 3, iso: 3, blamed: true},
		{a: 511, b: 515},
		{a: 515, b: 531},
		{a: 531, b: 562},
		{a: 562, b: 625},
		{a: 625, b: 750},
		{a: 750, b: 1000},
	}
	if len(got) != len(want) {
		t.Fatalf("%d invocations, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("invocation %d: got %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if fmt.Sprint(quarantined) != "[510]" {
		t.Fatalf("quarantined %v, want [510]", quarantined)
	}
}

// TestBlameOnlyThePoison runs the bisection for other positions and limits,
// including the ones where counting every batch's head would blame a
// healthy record: 500 heads seven crashing batches before it is isolated
// next to a poison at 501; 509 is isolated on its second head count.
func TestBlameOnlyThePoison(t *testing.T) {
	for _, tc := range []struct{ n, poison, limit, aloneRuns int }{
		{1000, 510, 3, 2},
		{1000, 510, 2, 1},
		{1000, 510, 1, 1},
		{1000, 501, 3, 2},
		{1000, 500, 3, 2},
		{1000, 0, 2, 1},
		{1000, 999, 4, 3},
		{8, 5, 3, 2},
		{1, 0, 3, 2},
		{2, 1, 5, 4},
	} {
		t.Run(fmt.Sprintf("n%d-poison%d-limit%d", tc.n, tc.poison, tc.limit), func(t *testing.T) {
			invs, quarantined := bisect(t, tc.n, tc.poison, tc.limit)
			if fmt.Sprint(quarantined) != fmt.Sprintf("[%d]", tc.poison) {
				t.Fatalf("quarantined %v, want only the poison %d", quarantined, tc.poison)
			}
			runs := 0
			for _, inv := range invs {
				if inv.a == tc.poison && inv.b == tc.poison+1 && inv.crashed {
					runs++
				}
			}
			if runs != tc.aloneRuns {
				t.Fatalf("the poison crashed %d times alone before it was quarantined, want %d", runs, tc.aloneRuns)
			}
		})
	}
}

func TestFIFOAttempts(t *testing.T) {
	for _, tc := range []struct{ failures, receives, want int }{
		{1, 1, 1}, {1, 5, 1}, {3, 5, 3}, {4, 3, 3}, {2, 0, 2}, {0, 0, 1},
	} {
		if got := FIFOAttempts(tc.failures, tc.receives); got != tc.want {
			t.Errorf("FIFOAttempts(%d, %d) = %d, want %d", tc.failures, tc.receives, got, tc.want)
		}
	}
}

func TestCapText(t *testing.T) {
	if got := CapText("short"); got != "short" {
		t.Errorf("CapText(short) = %q", got)
	}
	long := strings.Repeat("x", MaxErrorText+1)
	if got := CapText(long); got != long[:MaxErrorText]+"... (truncated)" {
		t.Errorf("CapText of %d bytes is %d bytes: %.20q", len(long), len(got), got[len(got)-20:])
	}
	if got := CapText(long[:MaxErrorText]); got != long[:MaxErrorText] {
		t.Error("text of exactly MaxErrorText bytes is kept whole")
	}
}
