package checks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func name(recs []Record) func(int) string { return func(i int) string { return recs[i].ID } }

func find(res []Result, n string) Result {
	for _, r := range res {
		if r.Name == n {
			return r
		}
	}
	return Result{}
}

// TestItems: a record that carries items is matched whole or item by
// item; an item without its effect is lost, one that took effect twice
// is a repeat, and an item beyond the record's is no record of the run.
func TestItems(t *testing.T) {
	recs := []Record{{ID: "m1", Key: "m1", Items: 2}, {ID: "m2", Key: "m2"}}
	fates := map[string]string{"m1": Processed, "m2": Processed}
	eff := func(names ...string) []Effect {
		var out []Effect
		for _, n := range names {
			out = append(out, Effect{Record: n})
		}
		return out
	}
	for _, tt := range []struct {
		name       string
		effects    []Effect
		loss, once string
		mention    string
	}{
		{"per item", eff("m1#0", "m1#1", "m2"), Held, Held, ""},
		{"whole", eff("m1", "m2"), Held, Held, ""},
		{"an item missing", eff("m1#0", "m2"), Violated, Held, "but not item 1"},
		{"an item twice", eff("m1#0", "m1#1", "m1#1", "m2"), Held, Violated, "item 1 of record m1 took effect 2 times"},
		{"an item beyond", eff("m1#0", "m1#1", "m1#2", "m2"), NotEvaluated, NotEvaluated, `record="m1#2"`},
		{"an item of a record without", eff("m1", "m2#0"), NotEvaluated, NotEvaluated, `record="m2#0"`},
		{"not a number", eff("m1", "m1#01", "m2"), NotEvaluated, NotEvaluated, `record="m1#01"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := Invariants(Input{Records: recs, Fates: fates, Name: name(recs), Have: true, Effects: tt.effects, Once: true, Unordered: true})
			loss, once := find(res, NoLoss), find(res, Once)
			if loss.Status != tt.loss || once.Status != tt.once {
				t.Fatalf("%+v", res)
			}
			if tt.mention != "" && !strings.Contains(fmt.Sprint(res), tt.mention) {
				t.Fatalf("no mention of %q: %+v", tt.mention, res)
			}
		})
	}
}

// An effect naming a KPL aggregate rather than its user records says what
// to name.
func TestEffectNamesAnAggregate(t *testing.T) {
	recs := []Record{{ID: "49:0"}, {ID: "49:1"}}
	res, _ := Invariants(Input{Records: recs, Fates: map[string]string{"49:0": Processed, "49:1": Processed}, Name: name(recs), Have: true,
		Effects: []Effect{{Record: "49"}}, Aggregates: map[string]int{"49": 2}, Unordered: true})
	if r := find(res, NoLoss); r.Status != NotEvaluated || !strings.Contains(r.Reason, `a KPL aggregate: name each of its 2 user records`) ||
		!strings.Contains(r.Reason, "49:0 to 49:1") {
		t.Fatalf("%+v", r)
	}
}

func TestMarkSkipped(t *testing.T) {
	fates := map[string]string{"a": Processed, "b": Processed, "c": OnFailure, "d": Processed}
	claims := []Claim{{Record: "a", Reason: ReasonS3TestEvent}, {Record: "b", Reason: ReasonDuplicate, Key: "k"},
		{Record: "c", Reason: ReasonDuplicate, Key: "k"}, {Record: "x", Reason: ReasonDuplicate}}
	by, stray := MarkSkipped(fates, claims, func(id string) bool { return id == "b" })
	if fates["a"] != Skipped || fates["b"] != Processed || fates["c"] != OnFailure || fates["d"] != Processed {
		t.Fatalf("fates %v", fates)
	}
	if len(by["a"]) != 1 || len(by["c"]) != 1 || len(stray) != 1 || stray[0].Record != "x" {
		t.Fatalf("by %v stray %v", by, stray)
	}
	// Without effects, a claim is enough.
	fates = map[string]string{"b": Processed}
	MarkSkipped(fates, claims[1:2], nil)
	if fates["b"] != Skipped {
		t.Fatalf("fates %v", fates)
	}
}

// TestCheckClaims: how the claim of a skipped record checks out, for each
// reason and what the runner knows.
func TestCheckClaims(t *testing.T) {
	recs := []Record{{ID: "r", Field: "pay-1", HasField: true}}
	store := func(before, after []string, beforeErr, afterErr error) *Store {
		set := func(keys []string) map[string]bool {
			m := map[string]bool{}
			for _, k := range keys {
				m[k] = true
			}
			return m
		}
		s := &Store{BeforeErr: beforeErr, After: func() (map[string]bool, error) { return set(after), afterErr }}
		if beforeErr == nil {
			s.Before = set(before)
		}
		return s
	}
	for _, tt := range []struct {
		name       string
		claim      Claim
		shows      bool
		field      string
		tookEffect bool
		store      *Store
		want       string // held, unknown or false
		says       string
	}{
		{"test event", Claim{Reason: ReasonS3TestEvent}, true, "", false, nil, "held", "its payload is an s3:TestEvent message"},
		{"not a test event", Claim{Reason: ReasonS3TestEvent}, false, "", false, nil, "false", "but its payload is not one"},
		{"control message", Claim{Reason: ReasonControlMessage}, true, "", false, nil, "held", "CONTROL_MESSAGE"},
		{"unknown reason", Claim{Reason: "why not"}, true, "", false, nil, "false", "does not know"},
		{"duplicate without a key", Claim{Reason: ReasonDuplicate}, false, "", false, nil, "false", "named no idempotency key"},
		{"business key took effect", Claim{Reason: ReasonDuplicate, Key: "pay-1"}, false, "pay", true, nil, "held", `pay "pay-1" took effect in this run`},
		{"no store", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "", false, nil, "unknown", "was not given the function's idempotency store"},
		{"completed before", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "", false, store([]string{"k"}, []string{"k"}, nil, nil), "held", "had completed before the run"},
		{"never completed", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "", false, store(nil, nil, nil, nil), "false", "is not completed"},
		{"completed in the run", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "", false, store(nil, []string{"k"}, nil, nil), "unknown", "--effects-key"},
		{"completed in the run, by field", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "pay", false, store(nil, []string{"k"}, nil, nil), "unknown", `no record with its pay "pay-1" took effect`},
		{"store unreadable at the start", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "", false, store(nil, []string{"k"}, errors.New("down"), nil), "unknown", "when the run started (down)"},
		{"store unreadable at the end", Claim{Reason: ReasonDuplicate, Key: "k"}, false, "", false, store(nil, nil, nil, errors.New("gone")), "unknown", "could not be read (gone)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Records: recs, Field: tt.field, Store: tt.store, Shows: func(int, string) bool { return tt.shows }}
			v := checkClaim(in, 0, tt.claim, tt.tookEffect)
			got := "false"
			switch {
			case v.held:
				got = "held"
			case v.unknown:
				got = "unknown"
			}
			says := v.checked + v.why
			if got != tt.want || !strings.Contains(says, tt.says) {
				t.Fatalf("%s: %q, want %s saying %q", got, says, tt.want, tt.says)
			}
		})
	}
}

// TestSkippedInInvariants: a skipped record needs no effect when its claim
// holds; a false claim is a lost record; one that cannot be checked leaves
// no-record-lost not evaluated; a claim for no record is false.
func TestSkippedInInvariants(t *testing.T) {
	recs := []Record{{ID: "a"}, {ID: "b"}}
	for _, tt := range []struct {
		name   string
		shows  bool
		stray  []Claim
		claims map[string][]Claim
		want   string
		bOK    bool // b's own claim held
	}{
		{"held", true, nil, map[string][]Claim{"b": {{Record: "b", Reason: ReasonS3TestEvent}}}, Held, true},
		{"false", false, nil, map[string][]Claim{"b": {{Record: "b", Reason: ReasonS3TestEvent}}}, Violated, false},
		{"unknown", true, nil, map[string][]Claim{"b": {{Record: "b", Reason: ReasonDuplicate, Key: "k"}}}, NotEvaluated, false},
		{"stray", true, []Claim{{Record: "z", Reason: ReasonS3TestEvent}}, map[string][]Claim{"b": {{Record: "b", Reason: ReasonS3TestEvent}}}, Violated, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, have := range []bool{true, false} {
				in := Input{Records: recs, Fates: map[string]string{"a": Processed, "b": Skipped}, Name: name(recs), Have: have,
					Effects: []Effect{{Record: "a"}}, Claims: tt.claims, Stray: tt.stray, Unordered: true,
					Shows: func(int, string) bool { return tt.shows }}
				res, claimed := Invariants(in)
				if got := find(res, NoLoss); got.Status != tt.want {
					t.Fatalf("effects given %v: %+v", have, got)
				}
				if c, ok := claimed["b"]; !ok || tt.bOK != (c.Problem == "") {
					t.Fatalf("claimed %+v", claimed)
				}
			}
		})
	}
}

// TestCheckLaneClaims: how the claim of a duplicate that its lane's
// checkpoint answered checks out: at the record's own position, by what
// the lane held before the run and holds after it.
func TestCheckLaneClaims(t *testing.T) {
	recs := []Record{{ID: "r"}}
	// lanes is a store's lanes: the positions each covers, and those it
	// no longer knows.
	type lane struct{ covered, forgotten []string }
	lanes := func(m map[string]lane) Lanes {
		return func(name, pos string) (bool, bool, error) {
			l := m[name]
			if slices.Contains(l.covered, pos) {
				return true, true, nil
			}
			return false, !slices.Contains(l.forgotten, pos), nil
		}
	}
	store := func(before, after map[string]lane, beforeErr, afterErr error) *Store {
		s := &Store{Before: map[string]bool{}, After: func() (map[string]bool, error) { return map[string]bool{}, nil },
			LanesBeforeErr: beforeErr, LanesAfter: func() (Lanes, error) { return lanes(after), afterErr }}
		if beforeErr == nil {
			s.LanesBefore = lanes(before)
		}
		return s
	}
	covers := map[string]lane{"L": {covered: []string{"0017"}}}
	none := map[string]lane{}
	claim := Claim{Reason: ReasonDuplicate, Key: "f#r", Lane: "L", Position: "0017"}
	for _, tt := range []struct {
		name      string
		claim     Claim
		position  string // the record's own; "" unknown
		effects   bool
		store     *Store
		want, say string
	}{
		{"covered before the run", claim, "0017", true, store(covers, covers, nil, nil), "held", `lane "L" covered its position before the run`},
		{"covered before, no effects given", claim, "0017", false, store(covers, covers, nil, nil), "held", "before the run"},
		{"another record's position", claim, "0018", true, store(covers, covers, nil, nil), "false", "the record's own position is 0018"},
		{"no position named", Claim{Reason: ReasonDuplicate, Key: "f#r", Lane: "L"}, "0017", true, store(covers, covers, nil, nil), "false", "named no position"},
		{"position unknown to the runner", claim, "", true, store(covers, covers, nil, nil), "unknown", "cannot tell the record's position"},
		{"no store", claim, "0017", true, nil, "unknown", "was not given the function's idempotency store"},
		{"lanes unreadable by the runner", claim, "0017", true, &Store{After: func() (map[string]bool, error) { return nil, nil }}, "unknown", "cannot read the lanes"},
		{"never covered", claim, "0017", true, store(none, none, nil, nil), "false", "does not hold that position completed"},
		{"forgotten", claim, "0017", true, store(none, map[string]lane{"L": {forgotten: []string{"0017"}}}, nil, nil), "unknown", "no longer records"},
		{"covered only since the run began, effects given", claim, "0017", true, store(none, covers, nil, nil), "false",
			"moved past it without its function running"},
		{"covered only since the run began, no effects", claim, "0017", false, store(none, covers, nil, nil), "unknown", "--effects"},
		{"lanes unreadable at the start", claim, "0017", true, store(nil, covers, errors.New("down"), nil), "unknown", "when the run started (down)"},
		{"lanes unreadable at the end", claim, "0017", true, store(none, nil, nil, errors.New("gone")), "unknown", "could not be read (gone)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Records: recs, Have: tt.effects, Store: tt.store, Position: func(int) (string, bool) { return tt.position, tt.position != "" }}
			v := checkClaim(in, 0, tt.claim, false)
			got := "false"
			switch {
			case v.held:
				got = "held"
			case v.unknown:
				got = "unknown"
			}
			says := v.checked + v.why
			if got != tt.want || !strings.Contains(says, tt.say) {
				t.Fatalf("%s: %q, want %s saying %q", got, says, tt.want, tt.say)
			}
		})
	}
}

// TestStoredKeys: a claim's key is looked up in the form the store keeps
// it (a long key by its digest).
func TestStoredKeys(t *testing.T) {
	s := &Store{Before: map[string]bool{"digest-of-k": true}, After: func() (map[string]bool, error) { return nil, nil },
		Stored: func(k string) string { return "digest-of-" + k }}
	v := checkClaim(Input{Records: []Record{{ID: "r"}}, Store: s}, 0, Claim{Reason: ReasonDuplicate, Key: "k"}, false)
	if !v.held {
		t.Fatalf("%+v: want held, the store keeping the key by its digest", v)
	}
}
