package localtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/checks"
)

func TestCheckInvariants(t *testing.T) {
	recs := []inputRef{
		{id: "s1", key: "a", payloadID: "1", line: 1, payload: []byte(`{"id":"1","pay":"p1"}`)},
		{id: "s2", key: "a", payloadID: "2", line: 2, payload: []byte(`{"id":"2","pay":"p2"}`)},
		{id: "s3", key: "b", payloadID: "3", line: 3, payload: []byte(`{"id":"3","pay":"p3"}`)},
	}
	// Lines 1 and 2 carry the same paymentId: a producer's duplicate.
	dupKey := []inputRef{
		{id: "s1", key: "a", line: 1, payload: []byte(`{"paymentId":"pay-005"}`)},
		{id: "s2", key: "b", line: 2, payload: []byte(`{"paymentId":"pay-005"}`)},
		{id: "s3", key: "b", line: 3, payload: []byte(`{"paymentId":"pay-006"}`)},
	}
	all := map[string]string{"s1": FateProcessed, "s2": FateOnFailure, "s3": FateProcessed}
	done := map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed}
	byRec := func(ids ...string) []Effect {
		var out []Effect
		for _, id := range ids {
			out = append(out, Effect{Record: id})
		}
		return out
	}
	byID := func(ids ...string) []Effect {
		var out []Effect
		for _, id := range ids {
			out = append(out, Effect{ID: id})
		}
		return out
	}
	tests := []struct {
		name      string
		recs      []inputRef
		fates     map[string]string
		effects   []Effect
		err       error
		field     string
		unordered bool
		unknown   string
		// want is the status of no-record-lost and order-per-key.
		want    [2]string
		mention string
	}{
		{name: "all good", fates: all, effects: byRec("s1", "s3"), want: [2]string{StatusHeld, StatusHeld}},
		{name: "a record without a fate is lost", fates: map[string]string{"s1": FateProcessed, "s3": FateProcessed},
			effects: byRec("s1", "s3"), want: [2]string{StatusViolated, StatusHeld}, mention: "line 2 (id 2)"},
		{name: "processed without an effect is lost", fates: all, effects: byRec("s1"),
			want: [2]string{StatusViolated, StatusHeld}, mention: "line 3 (id 3)"},
		{name: "out of order within a key", fates: done, effects: byRec("s2", "s1", "s3"),
			want: [2]string{StatusHeld, StatusViolated}, mention: "key a"},
		{name: "duplicates after the first effect are fine", fates: done, effects: byRec("s1", "s2", "s1", "s3"),
			want: [2]string{StatusHeld, StatusHeld}},
		{name: "other keys may interleave", fates: done, effects: byRec("s3", "s1", "s2"), want: [2]string{StatusHeld, StatusHeld}},
		{name: "SQS standard promises no order", fates: done, effects: byRec("s2", "s1", "s3"), unordered: true,
			want: [2]string{StatusHeld, ""}},
		{name: "matched by a payload field", fates: all, effects: byID("p1", "p3"), field: "pay", want: [2]string{StatusHeld, StatusHeld}},
		{name: "matched by a payload field, one missing", fates: all, effects: byID("p1"), field: "pay",
			want: [2]string{StatusViolated, StatusHeld}, mention: "line 3"},
		{name: "nothing needed an effect", fates: map[string]string{"s1": FateOnFailure, "s2": FateOnFailure, "s3": FateLeft},
			want: [2]string{StatusHeld, StatusHeld}},

		{name: "effects unreadable", fates: all, err: errors.New("effects.jsonl line 2: invalid character"),
			want: [2]string{StatusNotEvaluated, StatusNotEvaluated}, mention: "could not be read"},
		{name: "no effects although records were processed", fates: all,
			want: [2]string{StatusNotEvaluated, StatusNotEvaluated}, mention: "no effect was recorded"},
		{name: "effects in the old {id} format name no record", fates: all, effects: byID("1", "3"),
			want: [2]string{StatusNotEvaluated, StatusNotEvaluated}, mention: `has no "record"`},
		{name: "an effect of an unknown record", fates: all, effects: byRec("s1", "s3", "s9"),
			want: [2]string{StatusNotEvaluated, StatusNotEvaluated}, mention: `record="s9"`},
		{name: "payload lacks the key field", fates: all, effects: byID("p1", "p3"), field: "paymentId",
			want: [2]string{StatusNotEvaluated, StatusNotEvaluated}, mention: `no top-level payload field "paymentId"`},
		{name: "records sharing a business key share its effect", recs: dupKey,
			fates: map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed}, effects: byID("pay-005", "pay-006"), field: "paymentId",
			want: [2]string{StatusHeld, StatusHeld}},
		{name: "a business key without its effect is lost", recs: dupKey,
			fates: map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed}, effects: byID("pay-006"), field: "paymentId",
			want: [2]string{StatusViolated, StatusHeld}, mention: "line 1"},
		{name: "a duplicate that was processed answers for a key whose first record was not", recs: dupKey,
			fates: map[string]string{"s1": FateOnFailure, "s2": FateProcessed, "s3": FateProcessed}, effects: byID("pay-005", "pay-006"), field: "paymentId",
			want: [2]string{StatusHeld, StatusHeld}},
		{name: "processed without an effect may have been quarantined", fates: all, effects: byRec("s1"), unknown: "the dead letters could not be read",
			want: [2]string{StatusNotEvaluated, StatusHeld}, mention: "1 records acknowledged as processed have no effect, and the dead letters could not be read"},
		{name: "a lost record stays violated whatever the effects", fates: map[string]string{"s1": FateProcessed},
			err: errors.New("unreadable"), want: [2]string{StatusViolated, StatusNotEvaluated}, mention: "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := recs
			if tt.recs != nil {
				rs = tt.recs
			}
			res, _ := checkInvariants(effectsInput{records: rs, effects: tt.effects, Input: checks.Input{Fates: tt.fates, Have: true, Err: tt.err,
				Field: tt.field, Unordered: tt.unordered, Unknown: tt.unknown}})
			if tt.unordered && len(res) != 1 || !tt.unordered && len(res) != 2 {
				t.Fatalf("%d invariants checked: %+v", len(res), res)
			}
			for i, inv := range res {
				if inv.Status != tt.want[i] {
					t.Fatalf("%s is %s, want %s: %+v", inv.Name, inv.Status, tt.want[i], res)
				}
			}
			if tt.mention != "" {
				text := ""
				for _, inv := range res {
					text += inv.Reason + "\n" + strings.Join(inv.Violations, "\n") + "\n"
				}
				if !strings.Contains(text, tt.mention) {
					t.Fatalf("results should mention %q: %+v", tt.mention, res)
				}
			}
			rep := &Report{Invariants: res}
			if rep.Held() != (tt.want[0] == StatusHeld && (tt.want[1] == StatusHeld || tt.want[1] == "")) {
				t.Fatalf("Held() = %v for %+v", rep.Held(), res)
			}
		})
	}
}

// Without effects the checks that need them are listed, not evaluated, and
// the run does not hold: order-per-key is never silently missing.
func TestCheckInvariantsWithoutEffects(t *testing.T) {
	recs := []inputRef{{id: "s1", key: "a", line: 1}}
	fates := map[string]string{"s1": FateProcessed}
	for _, tt := range []struct {
		name      string
		unordered bool
		want      []string // invariant names, in order
	}{
		{"ordered source", false, []string{InvariantNoLoss, InvariantOrder}},
		{"SQS standard", true, []string{InvariantNoLoss}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := checkInvariants(effectsInput{records: recs, Input: checks.Input{Fates: fates, Unordered: tt.unordered}})
			var names []string
			for _, inv := range res {
				names = append(names, inv.Name)
				if inv.Name == InvariantOrder && (inv.Status != StatusNotEvaluated || !strings.Contains(inv.Reason, "no effects were given")) {
					t.Fatalf("order-per-key without effects: %+v", inv)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("checks %v, want %v", names, tt.want)
			}
			if rep := (&Report{Invariants: res}); rep.Held() == !tt.unordered {
				t.Fatalf("Held() = %v with %+v", rep.Held(), res)
			}
		})
	}
}

func TestHeldIsFalseForAFailedRun(t *testing.T) {
	rep := &Report{Invariants: []InvariantResult{{Name: InvariantNoLoss, Status: StatusHeld}},
		Failure: &RunFailure{Kind: FailureInit, Reason: "never started"}}
	if rep.Held() {
		t.Fatal("a run that could not test the function must not hold")
	}
}

func TestCheckShape(t *testing.T) {
	p := 1
	tests := []struct {
		source events.Source
		rec    InputRecord
		err    string // "" for none
	}{
		{events.SourceKinesis, InputRecord{PartitionKey: "k", Data: []byte(`{}`)}, ""},
		{events.SourceSQS, InputRecord{Body: []byte(`{}`)}, ""},
		{events.SourceSQSFIFO, InputRecord{Body: []byte(`{}`), MessageGroupID: "g"}, ""},
		{events.SourceKafka, InputRecord{Partition: &p, Value: []byte(`{}`)}, ""},
		{events.SourceDynamoDB, InputRecord{Keys: []byte(`{"pk":1}`)}, ""},
		{events.SourceSQS, InputRecord{PartitionKey: "k", Data: []byte(`{}`)},
			`"partitionKey", "data" belong to a Kinesis record, but the mapping's EventSource is sqs; an SQS record is {"body", "attributes"?, "messageAttributes"?}`},
		{events.SourceSQS, InputRecord{Body: []byte(`{}`), MessageGroupID: "g"}, `"messageGroupId" belongs to an SQS FIFO record`},
		{events.SourceKinesis, InputRecord{Body: []byte(`{}`)}, `"body" belongs to an SQS record, but the mapping's EventSource is kinesis; a Kinesis record is {"partitionKey", "data"}`},
		{events.SourceKafka, InputRecord{Keys: []byte(`{}`)}, `"keys" belongs to a DynamoDB Streams record`},
	}
	for _, tt := range tests {
		err := checkShape(tt.source, tt.rec)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s %+v: %v, want %q", tt.source, tt.rec, err, tt.err)
		}
	}
}

// With ExactlyOnce the check effect-once counts each record's effects.
func TestCheckEffectOnce(t *testing.T) {
	recs := []inputRef{{id: "s1", key: "a", line: 1}, {id: "s2", key: "a", line: 2}}
	done := map[string]string{"s1": FateProcessed, "s2": FateProcessed}
	tests := []struct {
		name    string
		have    bool
		effects []Effect
		err     error
		field   string
		killed  map[string]bool
		allow   bool
		want    string
		mention string
	}{
		{name: "each once", have: true, effects: []Effect{{Record: "s1"}, {Record: "s2"}}, want: StatusHeld},
		// Invocation r1 was killed after s1's effect, before its completion
		// was stored; r2 ran s1 again.
		{name: "a repeat after a kill is named as such", have: true, killed: map[string]bool{"r1": true},
			effects: []Effect{{Record: "s1", Request: "r1"}, {Record: "s1", Request: "r2"}, {Record: "s2", Request: "r2"}},
			want:    StatusViolated, mention: "its run in an invocation the runner killed made the effect and died before its completion was stored"},
		{name: "a repeat after a kill, allowed", have: true, killed: map[string]bool{"r1": true}, allow: true,
			effects: []Effect{{Record: "s1", Request: "r1"}, {Record: "s1", Request: "r2"}, {Record: "s2", Request: "r2"}},
			want:    StatusHeld, mention: "1 effects repeated because the invocation that first made them was killed"},
		{name: "the killed run is the last one: not what a kill explains", have: true, killed: map[string]bool{"r2": true}, allow: true,
			effects: []Effect{{Record: "s1", Request: "r1"}, {Record: "s2", Request: "r1"}, {Record: "s1", Request: "r2"}},
			want:    StatusViolated, mention: "record line 1 took effect 2 times"},
		{name: "a repeat without a kill is not allowed", have: true, killed: map[string]bool{"r9": true}, allow: true,
			effects: []Effect{{Record: "s1", Request: "r1"}, {Record: "s1", Request: "r2"}, {Record: "s2", Request: "r2"}},
			want:    StatusViolated, mention: "record line 1 took effect 2 times"},
		{name: "three runs, one killed: one repeat unexplained", have: true, killed: map[string]bool{"r1": true}, allow: true,
			effects: []Effect{{Record: "s1", Request: "r1"}, {Record: "s1", Request: "r2"}, {Record: "s1", Request: "r3"}, {Record: "s2", Request: "r3"}},
			want:    StatusViolated, mention: "record line 1 took effect 3 times"},
		{name: "a record twice", have: true, effects: []Effect{{Record: "s1"}, {Record: "s2"}, {Record: "s1"}},
			want: StatusViolated, mention: "record line 1 took effect 2 times"},
		{name: "effects unreadable", have: true, err: errors.New("bad line"), want: StatusNotEvaluated, mention: "could not be read"},
		{name: "no effects given", want: StatusNotEvaluated, mention: "no effects were given"},
		{name: "a business key once for two records", have: true, field: "paymentId", effects: []Effect{{ID: "pay-005"}},
			want: StatusHeld},
		{name: "a business key twice", have: true, field: "paymentId", effects: []Effect{{ID: "pay-005"}, {ID: "pay-005"}},
			want: StatusViolated, mention: `paymentId "pay-005" (records line 1, line 2) took effect 2 times`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := recs
			if tt.field != "" {
				rs = []inputRef{{id: "s1", key: "a", line: 1, payload: []byte(`{"paymentId":"pay-005"}`)},
					{id: "s2", key: "a", line: 2, payload: []byte(`{"paymentId":"pay-005"}`)}}
			}
			res, _ := checkInvariants(effectsInput{records: rs, effects: tt.effects, Input: checks.Input{Fates: done, Have: tt.have, Err: tt.err, Once: true,
				Field: tt.field, Killed: tt.killed, KillRepeatsOK: tt.allow}})
			var once *InvariantResult
			for i := range res {
				if res[i].Name == InvariantOnce {
					once = &res[i]
				}
			}
			if once == nil || once.Status != tt.want {
				t.Fatalf("effect-once %+v, want %s (all: %+v)", once, tt.want, res)
			}
			if text := once.Reason + strings.Join(once.Violations, "\n"); !strings.Contains(text, tt.mention) {
				t.Fatalf("effect-once should mention %q: %+v", tt.mention, once)
			}
		})
	}
}

// unorderedRun is n effects of invocation r1, each of its own record.
func unorderedRun(n int) []Effect {
	out := make([]Effect, n)
	for i := range out {
		out[i] = Effect{Record: fmt.Sprintf("m%d", i), Request: "r1"}
	}
	return out
}

// seq is the integers from lo up to hi, hi excluded.
func seq(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// TestKillWindow: only the effects running when a mid-batch kill landed
// can have lost their completion: the last two of each ordering key of
// the killed invocation on an ordered lane (the running record and
// idempotency.DefaultOrderedDepth, 1, complete in flight), its last 136
// on an unordered queue (completions sent without waiting).
func TestKillWindow(t *testing.T) {
	eff := func(specs ...string) []Effect { // "request/record"
		var out []Effect
		for _, s := range specs {
			req, rec, _ := strings.Cut(s, "/")
			out = append(out, Effect{Record: rec, Request: req})
		}
		return out
	}
	// A run of key a longer than the window: a1 .. a(W+5).
	w := killWindowPerKey
	aRun := func(req string) []string {
		var out []string
		for i := 1; i <= w+5; i++ {
			out = append(out, fmt.Sprintf("%s/a%d", req, i))
		}
		return out
	}
	last := append(aRun("r1"), "r2/a1")
	perKey := append([]string{"r1/a1", "r1/b1"}, aRun("r1")[1:]...)
	tests := []struct {
		name    string
		effects []Effect
		killed  map[string]bool
		ordered bool
		want    []int
	}{
		{"not killed", eff("r1/a1", "r1/a2"), map[string]bool{}, true, nil},
		{"the last W of a key", eff(last...), map[string]bool{"r1": true}, true, seq(5, w+5)},
		{"per key", eff(perKey...), map[string]bool{"r1": true}, true, append([]int{1}, seq(6, w+6)...)},
		{"only the killed invocation", eff("r1/a1", "r2/a2", "r2/a3"), map[string]bool{"r1": true}, true, []int{0}},
		{"unordered: all of a short run", eff("r1/a1", "r1/a2", "r1/a3", "r1/b1"), map[string]bool{"r1": true}, false, []int{0, 1, 2, 3}},
		{"unordered: not before the last 136", unorderedRun(140), map[string]bool{"r1": true}, false, seq(4, 140)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := killWindow(tt.effects, tt.killed, tt.ordered, func(pos int) string { return tt.effects[pos].Record[:1] })
			if len(got) != len(tt.want) {
				t.Fatalf("window %v, want %v", got, tt.want)
			}
			for _, p := range tt.want {
				if !got[p] {
					t.Fatalf("window %v, want %v", got, tt.want)
				}
			}
		})
	}
	// A record completed earlier in the killed invocation, run again: no
	// kill explains it (its completion was stored; a store that lost it,
	// in memory, is what the check is for).
	var recs []inputRef
	done := map[string]string{}
	for i := 1; i <= w+5; i++ {
		id := fmt.Sprintf("a%d", i)
		recs = append(recs, inputRef{id: id, key: "a", line: i})
		done[id] = FateProcessed
	}
	res, _ := checkInvariants(effectsInput{records: recs, effects: eff(last...),
		Input: checks.Input{Fates: done, Have: true, Once: true, KillRepeatsOK: true, Killed: map[string]bool{"r1": true}}})
	for _, inv := range res {
		if inv.Name == InvariantOnce && (inv.Status != StatusViolated || !strings.Contains(strings.Join(inv.Violations, ""), "record line 1 took effect 2 times")) {
			t.Fatalf("a1 ran again after it completed: %+v", inv)
		}
	}
}

// The checks spell localtest's words again: they must stay equal.
func TestChecksSpellTheSameWords(t *testing.T) {
	for _, p := range [][2]string{
		{FateProcessed, checks.Processed}, {FateQuarantined, checks.Quarantined}, {FateOnFailure, checks.OnFailure},
		{FateDeadLettered, checks.DeadLettered}, {FateFiltered, checks.Filtered}, {FateLeft, checks.Left},
		{FateSkipped, checks.Skipped}, {SkipDuplicate, checks.ReasonDuplicate}, {SkipS3TestEvent, checks.ReasonS3TestEvent},
		{SkipControlMessage, checks.ReasonControlMessage},
		{StatusHeld, checks.Held}, {StatusViolated, checks.Violated}, {StatusNotEvaluated, checks.NotEvaluated},
		{InvariantNoLoss, checks.NoLoss}, {InvariantOrder, checks.Order}, {InvariantOnce, checks.Once}, {InvariantFates, checks.Fates},
	} {
		if p[0] != p[1] {
			t.Errorf("localtest says %q, checks %q", p[0], p[1])
		}
	}
}
