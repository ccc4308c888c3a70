package htmlreport

import (
	"reflect"
	"slices"
	"testing"
)

func TestSplits(t *testing.T) {
	lanes2 := []int{0, 0, 0, 0, 1, 1, 1, 1}
	for _, tc := range []struct {
		name    string
		invs    []inv
		recLane []int
		want    [][2]int
	}{
		{"a whole failure whose next invocation is its first half",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{0, 1}, result: "success", bisect: true}},
			lanes2, [][2]int{{0, 0}}},
		{"a timeout splits too",
			[]inv{{recs: []int{0, 1}, result: "timeout"}, {recs: []int{0}, result: "success", bisect: true}},
			lanes2, [][2]int{{0, 0}}},
		{"a whole failure retried whole is no split",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{0, 1, 2, 3}, result: "success"}},
			lanes2, nil},
		{"a half that is not a prefix is no split of this batch",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{2, 3}, result: "success", bisect: true}},
			lanes2, nil},
		{"a shorter batch that is not a half is no split",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{0, 1}, result: "function_error"}},
			lanes2, nil},
		{"a partial answer is never split",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "partial"}, {recs: []int{0, 1}, result: "success", bisect: true}},
			lanes2, nil},
		{"one record cannot be split",
			[]inv{{recs: []int{0}, result: "function_error"}, {recs: []int{0}, result: "function_error", bisect: true}},
			lanes2, nil},
		{"the halves of a half split again",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{0, 1}, result: "function_error", bisect: true},
				{recs: []int{0}, result: "function_error", bisect: true}},
			lanes2, [][2]int{{0, 0}, {1, 0}}},
		{"other lanes' invocations in between do not count",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{4, 5}, result: "success"},
				{recs: []int{0, 1}, result: "success", bisect: true}},
			lanes2, [][2]int{{0, 0}}},
		{"a duplicate delivery in between does not count",
			[]inv{{recs: []int{0, 1, 2, 3}, result: "function_error"}, {recs: []int{0, 1, 2, 3}, result: "success", dup: true},
				{recs: []int{0, 1}, result: "success", bisect: true}},
			lanes2, [][2]int{{0, 0}}},
		{"an event of two partitions splits in each",
			[]inv{{recs: []int{0, 1, 4, 5}, result: "function_error"}, {recs: []int{0, 4}, result: "success", bisect: true}},
			lanes2, [][2]int{{0, 0}, {0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := splits(tc.invs, tc.recLane, laneInvs(tc.invs, tc.recLane, 2))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("splits %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRetriesConsumed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		retry  []int
		byLane [][]int
		want   int
	}{
		{"none", []int{0, 0, 0}, [][]int{{0, 1, 2}}, 0},
		{"each rise is one retry; the halves of a split keep the count", []int{0, 1, 1, 2, 0, 1}, [][]int{{0, 1, 2, 3, 4, 5}}, 3},
		{"per lane", []int{0, 0, 1, 1}, [][]int{{0, 2}, {1, 3}}, 2},
		{"a rise by two counts two", []int{0, 2}, [][]int{{0, 1}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retriesConsumed(tc.retry, tc.byLane); got != tc.want {
				t.Fatalf("%d, want %d", got, tc.want)
			}
		})
	}
}

func TestPlaceOnFailure(t *testing.T) {
	// One lane of five records; invocation 0 delivers 0-1, invocation 1
	// delivers 3-4 (2 aged out between them).
	invs := []inv{{recs: []int{0, 1}}, {recs: []int{3, 4}}}
	recLane := []int{0, 0, 0, 0, 0}
	pos := []int{0, 1, 2, 3, 4}
	byLane := laneInvs(invs, recLane, 1)
	for _, tc := range []struct {
		name string
		at   int
		recs []int
		want int
	}{
		{"after the invocation it names", 0, []int{0, 1}, after(0)},
		{"an age-out before the next invocation past it", -1, []int{2}, before(1)},
		{"an age-out after which nothing ran ends the lane", -1, []int{4}, after(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := placeOnFailure(tc.at, 0, tc.recs, invs, recLane, pos, byLane)
			if p.slot != tc.want || !reflect.DeepEqual(p.recs, tc.recs) {
				t.Fatalf("%+v, want slot %d", p, tc.want)
			}
		})
	}
	if p := placeOnFailure(-1, 1, []int{9}, invs, recLane, append(pos, 0, 0, 0, 0, 0), [][]int{nil, nil}); p.slot != slotNever {
		t.Fatalf("an age-out on a lane that never ran: slot %d, want never", p.slot)
	}
}

func TestResolvedAt(t *testing.T) {
	fate := []string{"processed", "filtered", "left", "on-failure", "quarantined", "processed", "skipped"}
	last := []int{3, -1, 2, 4, 5, -1, 6}
	got := resolvedAt(fate, last, []placement{{lane: 0, slot: before(7), recs: []int{3}}})
	want := []int{after(3), slotStart, slotNever, before(7), after(5), slotStart, after(6)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order [][]int
		at    []int
		want  []advance
	}{
		{"moves with each resolved prefix",
			[][]int{{0, 1, 2, 3}}, []int{after(0), after(0), after(2), slotNever},
			[]advance{{after(0), 0, 1}, {after(2), 0, 2}}},
		{"a record resolved out of order waits for those before it",
			[][]int{{0, 1, 2}}, []int{after(5), after(1), after(1)},
			[]advance{{after(5), 0, 2}}},
		{"filtered records at the head move it before anything ran",
			[][]int{{0, 1, 2}}, []int{slotStart, slotStart, after(0)},
			[]advance{{slotStart, 0, 1}, {after(0), 0, 2}}},
		{"lanes are apart; an unordered lane has none",
			[][]int{{0}, nil, {1}}, []int{after(0), after(1)},
			[]advance{{after(0), 0, 0}, {after(1), 2, 1}}},
		{"nothing resolved, nothing moved", [][]int{{0, 1}}, []int{slotNever, after(0)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkpoints(tc.order, tc.at); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilteredMarks(t *testing.T) {
	// Lane 0 is ordered: records 0,1,2,3 at positions 0-3; invocation 0
	// delivers 0, invocation 1 delivers 3. Lane 1 is a queue.
	invs := []inv{{recs: []int{0}}, {recs: []int{3}}, {recs: []int{4}}}
	recLane := []int{0, 0, 0, 0, 1, 1}
	pos := []int{0, 1, 2, 3, 0, 0}
	byLane := laneInvs(invs, recLane, 2)
	got := filteredMarks([]int{1, 2, 5}, recLane, pos, []bool{true, false}, invs, byLane)
	want := []advance{{before(1), 0, 1}, {before(1), 0, 2}, {slotStart, 1, 5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	// Filtered after the lane's last delivery: after it.
	if got := filteredMarks([]int{2}, []int{0, 0, 0}, []int{0, 1, 2}, []bool{true}, []inv{{recs: []int{0, 1}}}, [][]int{{0}}); got[0].slot != after(0) {
		t.Fatalf("%v, want after the last invocation", got)
	}
}

func TestLinkViolation(t *testing.T) {
	byLine := map[place]int{{1, -1}: 10, {2, -1}: 11, {3, -1}: 12, {15, -1}: 13, {7, 0}: 40, {7, 1}: 41}
	byInput := map[place]int{{3, -1}: 20}
	byID := map[string]int{"49590338271490256608559690000000000000000000000000000003": 30, "orders-0@7": 31}
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"line 1 (id o1): expected processed, got on-failure (Lambda gave up on it)", []int{10}},
		{"line 15: expected processed, got left", []int{13}},
		{"key alice: record line 3 (id c) first took effect at effect 4, after record line 2 (id b), which comes later in the source", []int{12, 11}},
		{`payload id "o1" (records line 1, line 2) took effect 2 times`, []int{10, 11}},
		{"record 3 (id x): expected processed, got quarantined", []int{20}},
		{"record 49590338271490256608559690000000000000000000000000000003 has no fate: it was never delivered", []int{30}},
		{"orders-0@7: expected processed, got on-failure", []int{31}},
		{"line 99: expected processed, got left", nil},
		{"line 7:1 (id u1): expected processed, got quarantined", []int{41}},
		{"line 7 (id u1): a KPL line names its user records with their sub-sequence numbers", nil},
		{"... more", nil},
	} {
		t.Run(tc.text, func(t *testing.T) {
			if got := linkViolation(tc.text, byLine, byInput, byID); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
}

func TestFrontCodeAndRanges(t *testing.T) {
	ids := []string{"4959000001", "4959000002", "4959000110", "x", "", "xy"}
	prev, got := "", []string{}
	for _, id := range ids {
		n, rest := frontCode(prev, id)
		got = append(got, prev[:n]+rest)
		prev = id
	}
	if !reflect.DeepEqual(got, ids) {
		t.Fatalf("front coding does not round-trip: %q", got)
	}
	if n, rest := frontCode("4959000001", "4959000002"); n != 9 || rest != "2" {
		t.Fatalf("frontCode: %d %q", n, rest)
	}
	for _, tc := range []struct {
		in   []int
		want []int
	}{
		{nil, []int{}},
		{[]int{4}, []int{4, 1}},
		{[]int{1, 2, 3, 7, 8, 2}, []int{1, 3, 7, 2, 2, 1}},
	} {
		if got := ranges(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ranges(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	names := []string{"orders-10", "orders-2", "orders-1", "shardId-000000000001", "shardId-000000000000", "a", "orders-02", "b1", "b"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"a", "b", "b1", "orders-1", "orders-02", "orders-2", "orders-10", "shardId-000000000000", "shardId-000000000001"}
	if !slices.Equal(names, want) {
		t.Fatalf("%q, want %q", names, want)
	}
}
