package idempotency

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// p is the position of record n of a test lane.
func p(n int) string {
	s, ok := Position(strconv.Itoa(n))
	if !ok {
		panic(n)
	}
	return s
}

func TestPosition(t *testing.T) {
	ordered := [][]string{
		{"0"}, {"7"}, {"9"}, {"10"}, {"0000011"}, {"99"}, {"100"},
		{"49590338271490256608559692538361571095921575989136588898"},
		{"49590338271490256608559692538361571095921575989136588898", "0"},
		{"49590338271490256608559692538361571095921575989136588898", "2"},
		{"49590338271490256608559692538361571095921575989136588898", "10"},
		{"49590338271490256608559692538361571095921575989136588899"},
		{strings.Repeat("9", 129)},
	}
	var prev string
	for i, parts := range ordered {
		got, ok := Position(parts...)
		if !ok {
			t.Fatalf("Position(%q) refused", parts)
		}
		if i > 0 && got <= prev {
			t.Errorf("Position(%q) = %q does not sort after %q", parts, got, prev)
		}
		if after(got) <= got || i > 0 && after(prev) >= got {
			t.Errorf("after(%q) is not between it and the next position", prev)
		}
		prev = got
	}
	if a, _ := Position("007"); a != "0017" {
		t.Errorf(`Position("007") = %q, want "0017": leading zeros do not count`, a)
	}
	for _, bad := range [][]string{nil, {""}, {"-1"}, {"1.5"}, {"12a"}, {"1", ""}, {strings.Repeat("1", 1000)}} {
		if got, ok := Position(bad...); ok {
			t.Errorf("Position(%q) = %q, want refused", bad, got)
		}
	}
}

// rec builds a lane's records: positions from, from+1, ... with statuses.
func recs(from int, statuses ...laneStatus) []laneRecord {
	out := make([]laneRecord, len(statuses))
	for i, s := range statuses {
		out[i] = laneRecord{pos: p(from + i), status: s}
	}
	return out
}

func TestAdvance(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	exp := now.Add(time.Hour).Unix()
	one := func(n int) hole { return hole{Lo: p(n), Hi: after(p(n)), Exp: exp} }
	for _, tc := range []struct {
		name    string
		from    laneState
		recs    []laneRecord
		want    laneState
		covered []int // records covered afterwards
		not     []int // records not covered afterwards
	}{
		{"a fresh lane, every record done", laneState{}, recs(1, done, done, done),
			laneState{C: p(3)}, []int{1, 2, 3}, []int{4}},
		{"a fresh lane, the third fails, the rest not run", laneState{}, recs(1, done, done, open, open, open),
			laneState{C: p(2), Next: p(3)}, []int{1, 2}, []int{3, 4, 5}},
		{"the retry from the failed record", laneState{C: p(2), Next: p(3)}, recs(3, done, done, done),
			laneState{C: p(5)}, []int{1, 5}, []int{6}},
		{"the whole batch again after a crash: the records up to C are duplicates", laneState{C: p(3), Next: p(4)}, recs(1, done, done, done, done, done),
			laneState{C: p(5)}, []int{5}, nil},
		{"a record quarantined: the lane moves past it, and it is a hole", laneState{}, recs(1, done, passed, done),
			laneState{C: p(3), Holes: []hole{one(2)}}, []int{1, 3}, []int{2}},
		{"its redrive completes it: it leaves its hole", laneState{C: p(3), Holes: []hole{one(2)}}, recs(2, done),
			laneState{C: p(3)}, []int{2}, nil},
		{"its redrive fails again: it stays a hole", laneState{C: p(3), Holes: []hole{one(2)}}, recs(2, open),
			laneState{C: p(3), Holes: []hole{one(2)}}, nil, []int{2}},
		{"Lambda skipped 3 to 5 after 3 failed: a hole", laneState{C: p(2), Next: p(3)}, recs(6, done, done),
			laneState{C: p(7), Holes: []hole{{Lo: p(3), Hi: p(6), Exp: exp}}}, []int{2, 6, 7}, []int{3, 4, 5}},
		{"the redrive of a skipped record cuts the hole", laneState{C: p(7), Holes: []hole{{Lo: p(3), Hi: p(6), Exp: exp}}}, recs(4, done),
			laneState{C: p(7), Holes: []hole{{Lo: p(3), Hi: p(4), Exp: exp}, {Lo: after(p(4)), Hi: p(6), Exp: exp}}}, []int{4}, []int{3, 5}},
		{"a skip over an extra: the extra stays covered", laneState{C: p(2), Next: p(3), Extras: []string{p(4)}}, recs(6, done),
			laneState{C: p(6), Holes: []hole{{Lo: p(3), Hi: p(4), Exp: exp}, {Lo: after(p(4)), Hi: p(6), Exp: exp}}}, []int{4, 6}, []int{3, 5}},
		{"keys at once: 2 failed, 3 and 5 completed", laneState{}, recs(1, done, open, done, open, done),
			laneState{C: p(1), Next: p(2), Extras: []string{p(3), p(5)}}, []int{1, 3, 5}, []int{2, 4}},
		{"their retry: the extras are duplicates", laneState{C: p(1), Next: p(2), Extras: []string{p(3), p(5)}}, recs(2, done, open, done, done),
			laneState{C: p(5)}, []int{2, 3, 4, 5}, nil},
		{"a fresh lane's first record fails", laneState{}, recs(1, open, open),
			laneState{Next: p(1)}, nil, []int{1, 2}},
		{"then Lambda skips it: the skipped records are a hole below C", laneState{Next: p(1)}, recs(5, done),
			laneState{C: p(5), Holes: []hole{{Lo: p(1), Hi: p(5), Exp: exp}}}, []int{5}, []int{1, 4}},
		{"a skip whose first record fails: the hole waits above C", laneState{C: p(2), Next: p(3)}, recs(6, open),
			laneState{C: p(2), Next: p(6), Holes: []hole{{Lo: p(3), Hi: p(6), Exp: exp}}}, []int{2}, []int{3, 6}},
		{"the records of the first half of a bisected batch", laneState{C: p(2), Next: p(3)}, recs(1, done, done),
			laneState{C: p(2), Next: p(3)}, []int{1, 2}, []int{3}},
		{"a redelivery of records at or below C only: nothing moves", laneState{C: p(9)}, recs(4, done, done),
			laneState{C: p(9)}, []int{4, 9}, []int{10}},
		{"an expired hole goes, and the floor rises over it", laneState{C: p(9), Holes: []hole{{Lo: p(3), Hi: after(p(3)), Exp: exp - 7200}, one(7)}}, nil,
			laneState{C: p(9), Floor: after(p(3)), Holes: []hole{one(7)}}, []int{4, 9}, []int{1, 3, 7}},
		{"an expired hole above C: the floor passes C", laneState{C: p(2), Next: p(3), Holes: []hole{{Lo: p(3), Hi: p(6), Exp: exp - 7200}}}, nil,
			laneState{C: p(2), Next: p(3), Floor: p(6)}, nil, []int{1, 2, 3, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.from.check(); err != nil {
				t.Fatalf("the state before does not hold: %v", err)
			}
			got := advance(tc.from, tc.recs, now, time.Hour)
			tc.want.Exp = exp
			if !reflect.DeepEqual(norm(got), norm(tc.want)) {
				t.Fatalf("advance:\n got %+v\nwant %+v", got, tc.want)
			}
			if err := got.check(); err != nil {
				t.Fatalf("the state after does not hold: %v", err)
			}
			for _, n := range tc.covered {
				if !got.covered(p(n)) {
					t.Errorf("record %d is not covered", n)
				}
			}
			for _, n := range tc.not {
				if got.covered(p(n)) {
					t.Errorf("record %d is covered", n)
				}
			}
			// advance is a function of the claimed state: a write that
			// follows another, lost one, says the same.
			if again := advance(tc.from, tc.recs, now, time.Hour); !reflect.DeepEqual(norm(again), norm(got)) {
				t.Errorf("advance is not a function of its arguments")
			}
			// And its encoding reads back as it is.
			back, err := decodeLaneState(encodeLaneState(got))
			if err != nil || !reflect.DeepEqual(norm(back), norm(got)) {
				t.Errorf("the state reads back as %+v, %v", back, err)
			}
		})
	}
}

// norm makes empty slices nil, so states compare by what they hold.
func norm(s laneState) laneState {
	if len(s.Holes) == 0 {
		s.Holes = nil
	}
	if len(s.Extras) == 0 {
		s.Extras = nil
	}
	return s
}

// TestAdvanceHolesBounded: past maxHoles quarantined records, the oldest
// holes go and the floor rises over them; the newest stay holes.
func TestAdvanceHolesBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var s laneState
	for i := range maxHoles + 5 {
		now = now.Add(time.Second)
		s = advance(s, recs(2*i+1, done, passed), now, time.Hour)
	}
	if len(s.Holes) != maxHoles {
		t.Fatalf("%d holes, want %d", len(s.Holes), maxHoles)
	}
	newest := 2*(maxHoles+4) + 2
	if s.covered(p(newest)) || !s.covered(p(newest-1)) {
		t.Fatalf("the newest quarantined record is covered, or the one before it is not")
	}
	if s.covered(p(2)) || s.covered(p(1)) {
		t.Fatalf("records below the floor are covered")
	}
}

func TestLaneStateLive(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := laneState{C: p(5), Exp: now.Unix()}
	if !reflect.DeepEqual(s.live(now), s) || s.live(now.Add(time.Second)).C != "" {
		t.Fatal("a state is live through its expiry second, and none after")
	}
}

func TestDecodeLaneState(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{``, ""},
		{`{"v":1,"c":"0015","e":1}`, ""},
		{`{"v":2,"c":"0015","e":1}`, "version 2"},
		{`{"v":1,"c":"0015","e":1,"z":1}`, "cannot be read"},
		{`{"v":1,"c":"0015","n":"0014","e":1}`, "does not hold"},
		{`{"v":1,"c":"0015","h":[["0013","0013",1]],"e":1}`, "does not hold"},
		{`{"v":1,"c":"0015","x":["0015"],"e":1}`, "does not hold"},
		{`{"v":1,"c":"0015","h":[["0013"]],"e":1}`, "cannot be read"},
		{`not json`, "cannot be read"},
	} {
		_, err := decodeLaneState([]byte(tc.in))
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("decode %s: %v, want %q", tc.in, err, tc.err)
		}
	}
}

// FuzzDecodeLaneState: any bytes decode to a state that holds or to an
// error, and a state that decodes encodes to bytes that decode to it.
func FuzzDecodeLaneState(f *testing.F) {
	f.Add([]byte(`{"v":1,"c":"0015","n":"0016","h":[["0013","0013!",9]],"x":["0018"],"f":"0011","e":99}`))
	f.Add(encodeLaneState(laneState{C: p(3), Exp: 5}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeLaneState(b)
		if err != nil {
			return
		}
		if err := s.check(); err != nil {
			t.Fatalf("decoded a state that does not hold: %v", err)
		}
		back, err := decodeLaneState(encodeLaneState(s))
		if err != nil || !reflect.DeepEqual(norm(back), norm(s)) {
			t.Fatalf("re-encoded %+v reads back as %+v, %v", s, back, err)
		}
		// covered and advance take any state that holds.
		for _, r := range []string{p(1), s.C, s.Next} {
			_ = s.covered(r)
		}
		_ = advance(s, recs(1, done, open), time.Unix(s.Exp, 0), time.Hour)
	})
}

func TestCutHole(t *testing.T) {
	h := []hole{{Lo: p(3), Hi: p(9)}}
	got := cutHole(h, p(3))
	if len(got) != 1 || got[0].Lo != after(p(3)) || got[0].Hi != p(9) {
		t.Fatalf("cut at the low end: %+v", got)
	}
	got = cutHole(cutHole(h, p(8)), p(5))
	want := []hole{{Lo: p(3), Hi: p(5)}, {Lo: after(p(5)), Hi: p(8)}, {Lo: after(p(8)), Hi: p(9)}}
	slices.SortFunc(got, func(a, b hole) int { return strings.Compare(a.Lo, b.Lo) })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cuts: %+v, want %+v", got, want)
	}
	if b, _ := json.Marshal(hole{Lo: "a", Hi: "b", Exp: 3}); string(b) != `["a","b",3]` {
		t.Fatalf("a hole encodes as %s", b)
	}
}

func TestWriteDue(t *testing.T) {
	const rtt = 50 * time.Millisecond
	for _, tc := range []struct {
		name             string
		writing          bool
		unwritten, depth int
		waited           time.Duration
		final, want      bool
	}{
		{"nothing to write", false, 0, 8, time.Hour, true, false},
		{"a write in flight", true, 8, 8, time.Hour, true, false},
		{"depth records wait", false, 8, 8, 0, false, true},
		{"fewer, not long", false, 7, 8, rtt - time.Millisecond, false, false},
		{"fewer, waited a round trip", false, 1, 8, rtt, false, true},
		{"the lane's last record", false, 3, 8, 0, true, true},
		{"depth 0 writes each record", false, 1, 0, 0, false, true},
	} {
		if got := writeDue(tc.writing, tc.unwritten, tc.depth, tc.waited, rtt, tc.final); got != tc.want {
			t.Errorf("%s: writeDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLaneGate(t *testing.T) {
	for _, tc := range []struct {
		unwritten, depth int
		stopped          bool
		start, wait      bool
	}{
		{0, 8, false, true, false},
		{8, 8, false, true, false},
		{9, 8, false, false, true},
		{0, 0, false, true, false},
		{1, 0, false, false, true},
		{0, 8, true, false, false},
		{9, 8, true, false, false},
	} {
		start, wait := laneGate(tc.unwritten, tc.depth, tc.stopped)
		if start != tc.start || wait != tc.wait {
			t.Errorf("laneGate(%d, %d, %v) = %v, %v; want %v, %v", tc.unwritten, tc.depth, tc.stopped, start, wait, tc.start, tc.wait)
		}
	}
}

// TestLaneCovers: what a stored lane says of a position, as the local
// runner asks it to check a duplicate answered by a checkpoint.
func TestLaneCovers(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	live := now.Add(time.Hour).Unix()
	st := laneState{C: p(10), Floor: p(2), Holes: []hole{{Lo: p(5), Hi: after(p(5)), Exp: live}}, Extras: []string{p(12)}, Exp: live}
	rec := &LaneRecord{Lane: "l", Position: st.C, State: encodeLaneState(st), Expires: now.Add(time.Hour)}
	expired := *rec
	expired.Expires = now.Add(-time.Second)
	stale := *rec
	old := st
	old.Exp = now.Add(-time.Second).Unix()
	stale.State = encodeLaneState(old)
	for _, tt := range []struct {
		name           string
		rec            *LaneRecord
		pos            string
		covered, known bool
	}{
		{"at the position", rec, p(10), true, true},
		{"below it", rec, p(3), true, true},
		{"in a hole (quarantined)", rec, p(5), false, true},
		{"above it", rec, p(11), false, true},
		{"an extra above it", rec, p(12), true, true},
		{"at the floor", rec, p(2), false, false},
		{"below the floor", rec, p(1), false, false},
		{"no lane", nil, p(1), false, true},
		{"a lane claimed, never written", &LaneRecord{Lane: "l", Expires: now.Add(time.Hour)}, p(1), false, true},
		{"the item expired", &expired, p(3), false, false},
		{"the state expired", &stale, p(3), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			covered, known, err := LaneCovers(tt.rec, tt.pos, now)
			if err != nil || covered != tt.covered || known != tt.known {
				t.Fatalf("covered %v known %v (%v), want %v %v", covered, known, err, tt.covered, tt.known)
			}
		})
	}
	bad := &LaneRecord{Lane: "l", State: []byte(`{"v":99}`), Expires: now.Add(time.Hour)}
	if _, _, err := LaneCovers(bad, p(1), now); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("a state of another version: %v", err)
	}
}
