package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Position returns the ordered form of a record's position in its lane
// from its parts, decimal numbers (a Kinesis sequence number and, for a
// KPL user record, its sub-sequence number; a Kafka offset; a DynamoDB
// Streams or SQS FIFO sequence number): each part as its count of digits,
// in three digits, then its digits without leading zeros, the parts
// joined by ":". Positions then compare as strings in the order of their
// numbers, which is how a store compares them (LaneClaim.Upto) without
// parsing numbers longer than it holds (Kinesis sequence numbers have up
// to 129 digits). ok is false when a part is not a decimal number of at
// most 999 digits.
func Position(parts ...string) (string, bool) {
	if len(parts) == 0 {
		return "", false
	}
	var b strings.Builder
	for i, p := range parts {
		if p == "" {
			return "", false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return "", false
			}
		}
		p = strings.TrimLeft(p, "0")
		if p == "" {
			p = "0"
		}
		if len(p) > 999 {
			return "", false
		}
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%03d", len(p))
		b.WriteString(p)
	}
	return b.String(), true
}

// after is the least string above position p: no position lies between
// p and after(p) ("!" sorts below the digits and ":", so no position that
// p is a prefix of comes first). A hole of one record is [p, after(p)).
func after(p string) string { return p + "!" }

// laneState is what a lane's checkpoint holds: which of the lane's
// records completed, so a record delivered again is a duplicate.
//
// A record at position p is covered (completed) when Floor < p <= C and
// p is in no hole, or p is one of Extras. C only grows. Holes are the
// records at or below C that the lane moved past without completing
// them: quarantined (dead-lettered) records, and the records Lambda
// skipped (a batch whose retries ran out, sent to the on-failure
// destination), so that a redrive of them runs them. Extras are records
// above C that completed while a record before them had not (keys of a
// shard run at once, one failed): Lambda delivers them again with the
// failed one, and they are duplicates then. Next, when set, is the
// lane's record right after C (the first that did not complete); when
// empty, the lane's next batch starts right after C (the last batch
// completed to its end). A hole may lie above C: records Lambda skipped
// right after a record that failed and is still the lane's next. A batch that starts above Next is a batch after
// records Lambda skipped. Floor rises when holes expire (or too many
// pile up): records at or below it are no longer known, and run again if
// they come back, as a record whose key expired does (WithTTL).
type laneState struct {
	C      string   `json:"c,omitempty"`
	Next   string   `json:"n,omitempty"`
	Holes  []hole   `json:"h,omitempty"`
	Extras []string `json:"x,omitempty"`
	Floor  string   `json:"f,omitempty"`
	// Own says the records' own keys hold nothing for this lane any
	// more: a batch read them and found none. Until then a claim reads
	// the keys of its records that the lane does not cover, for what a
	// version that claimed per record left (completed, or in progress).
	Own bool `json:"o,omitempty"`
	// Exp is when the state stops being true (Unix seconds): WithTTL
	// after its last write. A state past it is as if none were stored.
	Exp int64 `json:"e"`
}

// hole is the positions in [Lo, Hi) of a lane that did not complete;
// Exp is when it is dropped (raising the floor over it).
type hole struct {
	Lo, Hi string
	Exp    int64
}

func (h hole) MarshalJSON() ([]byte, error) { return json.Marshal([]any{h.Lo, h.Hi, h.Exp}) }

func (h *hole) UnmarshalJSON(b []byte) error {
	var v []json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil || len(v) != 3 {
		return errors.New("a hole is [lo, hi, expiry]")
	}
	if json.Unmarshal(v[0], &h.Lo) != nil || json.Unmarshal(v[1], &h.Hi) != nil || json.Unmarshal(v[2], &h.Exp) != nil {
		return errors.New("a hole is [lo, hi, expiry]")
	}
	return nil
}

// laneStateVersion is the version of the state's encoding.
const laneStateVersion = 1

// maxHoles bounds a lane's holes: past it the oldest are dropped, as when
// they expire.
const maxHoles = 32

// encodeLaneState is the stored form of s: versioned JSON, which an
// operator reads in the table as it is.
func encodeLaneState(s laneState) []byte {
	type stored struct {
		V int `json:"v"`
		laneState
	}
	b, _ := json.Marshal(stored{laneStateVersion, s}) // strings and numbers only: cannot fail
	return b
}

// decodeLaneState reads a stored state; no bytes is no state. A state of
// an unknown version, or one that does not hold, is an error: a lane
// whose checkpoint cannot be read must not skip records.
func decodeLaneState(b []byte) (laneState, error) {
	var s struct {
		V int `json:"v"`
		laneState
	}
	if len(b) == 0 {
		return laneState{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return laneState{}, fmt.Errorf("idempotency: a lane checkpoint that cannot be read (%v): %.200q", err, b)
	}
	if s.V != laneStateVersion {
		return laneState{}, fmt.Errorf("idempotency: a lane checkpoint of version %d, this version reads %d: %.200q", s.V, laneStateVersion, b)
	}
	if err := s.check(); err != nil {
		return laneState{}, fmt.Errorf("idempotency: a lane checkpoint that does not hold (%v): %.200q", err, b)
	}
	return s.laneState, nil
}

// check verifies what the rest of the code assumes of a state.
func (s laneState) check() error {
	if s.Next != "" && s.Next <= s.C {
		return errors.New("the next record is not after the position")
	}
	for _, h := range s.Holes {
		if h.Lo >= h.Hi {
			return fmt.Errorf("hole [%s, %s) is empty", h.Lo, h.Hi)
		}
	}
	for _, x := range s.Extras {
		if x <= s.C {
			return fmt.Errorf("extra %s is not above the position", x)
		}
	}
	return nil
}

// live is s as it holds at now: none once it expired.
func (s laneState) live(now time.Time) laneState {
	if s.Exp < now.Unix() {
		return laneState{}
	}
	return s
}

// covered reports whether the record at position p completed.
func (s laneState) covered(p string) bool {
	if slices.Contains(s.Extras, p) {
		return true
	}
	return s.C != "" && p <= s.C && p > s.Floor && !inHoles(s.Holes, p)
}

// LaneCovers reports what lane rec (a LaneStore's item, as ClaimLane
// returns it; nil when the store holds none) says at now of the record
// at position pos (a Position): covered, when the lane holds it
// completed, so the record delivered again is a duplicate. When it is
// not covered, known says whether the lane still tells: false when the
// lane expired, or pos is at or below the floor that expired or dropped
// holes raised (the lane no longer records what became of it). A lane
// never written covers nothing, and knows it. The local runner uses it to
// check a handler's claim that its lane's checkpoint answered a record as
// a duplicate.
func LaneCovers(rec *LaneRecord, pos string, now time.Time) (covered, known bool, err error) {
	if rec == nil {
		return false, true, nil
	}
	if !rec.Expires.IsZero() && rec.Expires.Unix() < now.Unix() {
		return false, false, nil
	}
	st, err := decodeLaneState(rec.State)
	if err != nil {
		return false, false, err
	}
	if len(rec.State) != 0 && st.Exp < now.Unix() {
		return false, false, nil
	}
	switch {
	case st.covered(pos):
		return true, true, nil
	case st.Floor != "" && pos <= st.Floor:
		return false, false, nil
	}
	return false, true, nil
}

func inHoles(hs []hole, p string) bool {
	for _, h := range hs {
		if h.Lo <= p && p < h.Hi {
			return true
		}
	}
	return false
}

// A laneStatus is what became of one record of a lane in a batch, as far
// as the lane's checkpoint goes.
type laneStatus uint8

const (
	// open: not completed (yet): pending, running, failed, not attempted.
	open laneStatus = iota
	// done: completed here, or a duplicate.
	done
	// passed: the lane moved past it without completing it (it was
	// quarantined, or answered without the function): a hole.
	passed
)

// laneRecord is one record of a lane in a batch: its position and what
// became of it.
type laneRecord struct {
	pos    string
	status laneStatus
}

// advance is the lane's state after a batch that started from s (as the
// lane was claimed) ran recs (the lane's records in the batch, ascending
// by position), at now, with holes kept for ttl. It is a function of the
// claimed state and the records' statuses only, so every write of a
// batch sends the whole truth, and a write that follows a lost one loses
// nothing.
//
// Records at or above C's successor extend the lane: C moves to the last
// of the first run of records that completed or were passed (those
// passed become holes), Next to the first that did not, and those that
// completed after it become extras. Records at or below C are a
// redelivery: one in a hole that completed now leaves its hole (a
// redrive runs a quarantined record once). A batch that starts above the
// lane's known next record follows records Lambda skipped: they become a
// hole, so their redrive runs them.
func advance(s laneState, recs []laneRecord, now time.Time, ttl time.Duration) laneState {
	out := s
	out.Holes = slices.Clone(s.Holes)
	out.Extras = slices.Clone(s.Extras)
	exp := now.Add(ttl).Unix()
	var ext []laneRecord
	for _, r := range recs {
		if s.C != "" && r.pos <= s.C {
			if r.status == done && inHoles(out.Holes, r.pos) {
				out.Holes = cutHole(out.Holes, r.pos)
			}
			continue
		}
		ext = append(ext, r)
	}
	if len(ext) > 0 {
		if g, ok := skipped(s, recs); ok {
			out.Holes = append(out.Holes, holesAround(g, s.Extras, exp)...)
		}
		i := 0
		for ; i < len(ext); i++ {
			r := ext[i]
			if r.status == open && !slices.Contains(s.Extras, r.pos) {
				break
			}
			out.C = r.pos
			if r.status == passed {
				out.Holes = append(out.Holes, hole{Lo: r.pos, Hi: after(r.pos), Exp: exp})
			}
		}
		out.Next = ""
		if i < len(ext) {
			out.Next = ext[i].pos
			for _, r := range ext[i+1:] {
				if r.status == done && !slices.Contains(out.Extras, r.pos) {
					out.Extras = append(out.Extras, r.pos)
				}
			}
		}
		out.Extras = slices.DeleteFunc(out.Extras, func(x string) bool { return x <= out.C })
		slices.Sort(out.Extras)
	}
	// Holes that expired go, and the floor rises over them: the records
	// at or below it are no longer known. So do the oldest past maxHoles.
	slices.SortFunc(out.Holes, func(a, b hole) int { return strings.Compare(a.Lo, b.Lo) })
	for len(out.Holes) > 0 {
		oldest := 0
		for i, h := range out.Holes {
			if h.Exp < out.Holes[oldest].Exp {
				oldest = i
			}
		}
		if out.Holes[oldest].Exp >= now.Unix() && len(out.Holes) <= maxHoles {
			break
		}
		// The floor may pass C: a hole of skipped records above C then
		// stays uncovered when C passes it.
		out.Floor = max(out.Floor, out.Holes[oldest].Hi)
		out.Holes = slices.DeleteFunc(out.Holes, func(h hole) bool { return h.Hi <= out.Floor })
		for i := range out.Holes {
			out.Holes[i].Lo = max(out.Holes[i].Lo, after(out.Floor))
		}
	}
	out.Exp = exp
	return out
}

// skipped returns the records a batch of recs skipped: when the lane's
// next record is known and every record of the batch lies above it,
// Lambda moved past [Next, first) without delivering it here. (A batch
// that reaches back to C or below holds C's successor, as a batch is a
// contiguous run of its lane.)
func skipped(s laneState, recs []laneRecord) (hole, bool) {
	if s.Next == "" || len(recs) == 0 || recs[0].pos <= s.Next {
		return hole{}, false
	}
	return hole{Lo: s.Next, Hi: recs[0].pos}, true
}

// holesAround is hole g with exp, less the extras in it (which
// completed): the pieces between them.
func holesAround(g hole, extras []string, exp int64) []hole {
	var out []hole
	lo := g.Lo
	for _, x := range extras {
		if x < lo || x >= g.Hi {
			continue
		}
		if lo < x {
			out = append(out, hole{Lo: lo, Hi: x, Exp: exp})
		}
		lo = after(x)
	}
	if lo < g.Hi {
		out = append(out, hole{Lo: lo, Hi: g.Hi, Exp: exp})
	}
	return out
}

// cutHole takes position p out of the holes (a hole around it splits).
func cutHole(hs []hole, p string) []hole {
	var out []hole
	for _, h := range hs {
		if p < h.Lo || p >= h.Hi {
			out = append(out, h)
			continue
		}
		if h.Lo < p {
			out = append(out, hole{Lo: h.Lo, Hi: p, Exp: h.Exp})
		}
		if a := after(p); a < h.Hi {
			out = append(out, hole{Lo: a, Hi: h.Hi, Exp: h.Exp})
		}
	}
	return out
}
