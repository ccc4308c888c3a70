package checks

import (
	"fmt"
	"slices"
	"testing"
)

func TestMarkQuarantined(t *testing.T) {
	fates := map[string]string{"a": Processed, "b": OnFailure, "c": Processed, "d": Processed}
	stray := MarkQuarantined(fates, []string{"a", "b", "x", "a"})
	want := map[string]string{"a": Quarantined, "b": OnFailure, "c": Processed, "d": Processed}
	for id, f := range want {
		if fates[id] != f {
			t.Errorf("record %s: %s, want %s", id, fates[id], f)
		}
	}
	if !slices.Equal(stray, []string{"x"}) {
		t.Errorf("stray %v, want [x]", stray)
	}
}

// A check keeps its first 20 violations and says there were more.
func TestViolateKeepsTwenty(t *testing.T) {
	r := Result{Name: NoLoss, Status: Held}
	for i := range 25 {
		r.Violate("record %d", i)
	}
	if r.Status != Violated || len(r.Violations) != 21 || r.Violations[19] != "record 19" || r.Violations[20] != "... more" {
		t.Fatalf("%+v", r)
	}
}

func TestNotEvaluated(t *testing.T) {
	for _, tt := range []struct {
		in         Result
		status, re string
	}{
		{Result{Status: Held}, NotEvaluated, "why"},
		{Result{Status: NotEvaluated, Reason: "first"}, NotEvaluated, "first"},
		{Result{Status: Violated}, Violated, "not fully checked: why"},
		{Result{Status: Violated, Reason: "kept"}, Violated, "kept"},
	} {
		got := tt.in.NotEvaluated("why")
		if got.Status != tt.status || got.Reason != tt.re {
			t.Errorf("%+v.NotEvaluated = %+v, want %s %q", tt.in, got, tt.status, tt.re)
		}
	}
}

// The kill window is sized by its two limits: per key on an ordered lane,
// per invocation on an unordered queue.
func TestKillWindowLimits(t *testing.T) {
	var effects []Effect
	for i := range 5 {
		effects = append(effects, Effect{Record: fmt.Sprint(i), Request: "r1"})
	}
	key := func(int) string { return "k" }
	if got := KillWindow(effects, map[string]bool{"r1": true}, true, 1, 3, key); len(got) != 1 || !got[4] {
		t.Errorf("ordered, one per key: %v", got)
	}
	if got := KillWindow(effects, map[string]bool{"r1": true}, false, 1, 3, key); len(got) != 3 || !got[2] || !got[3] || !got[4] {
		t.Errorf("unordered, three: %v", got)
	}
	if got := KillWindow(effects, nil, false, 1, 3, key); len(got) != 0 {
		t.Errorf("nothing killed: %v", got)
	}
}
