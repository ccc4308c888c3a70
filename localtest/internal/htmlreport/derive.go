package htmlreport

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/localtest/internal/checks"
)

// Results the derivations read, as localtest's Result constants spell
// them (localtest's TestHTMLReportSpellsTheSameWords keeps the spellings
// equal). Any other result is a failure of the whole batch.
const (
	ResultSuccess = "success"
	ResultPartial = "partial"
)

// Slots place a mark on a lane's timeline: slot 2i is just before
// invocation i (in the run's order), 2i+1 just after it; slotStart is
// before anything ran, slotNever a record never resolved.
const (
	slotStart = -1
	slotNever = int(^uint(0) >> 1)
)

func after(i int) int  { return 2*i + 1 }
func before(i int) int { return 2 * i }

// inv is one invocation as the derivations read it: its records by index
// (each record's lane is recLane[rec]), its result and flags.
type inv struct {
	recs     []int
	result   string
	bisect   bool
	dup      bool
	reported []int
}

// lastDelivery is, per record, the last invocation that delivered it other
// than as an injected duplicate, or -1. A record is sent again only while
// it is unresolved (a stream's checkpoint is before it, a message is still
// in the queue), so its last delivery is where its fate was settled: the
// invocation that processed it, that it was quarantined in, or the last
// one before Lambda gave up on it.
func lastDelivery(invs []inv, nrec int) []int {
	last := make([]int, nrec)
	for i := range last {
		last[i] = -1
	}
	for i, v := range invs {
		if v.dup {
			continue
		}
		for _, r := range v.recs {
			last[r] = i
		}
	}
	return last
}

// laneRecs is the share of invocation v of lane l.
func laneRecs(v inv, recLane []int, l int) []int {
	var out []int
	for _, r := range v.recs {
		if recLane[r] == l {
			out = append(out, r)
		}
	}
	return out
}

// laneInvs lists, per lane, the invocations (other than duplicates) that
// delivered records of it, in order.
func laneInvs(invs []inv, recLane []int, nlanes int) [][]int {
	out := make([][]int, nlanes)
	for i, v := range invs {
		if v.dup {
			continue
		}
		seen := map[int]bool{}
		for _, r := range v.recs {
			if l := recLane[r]; !seen[l] {
				seen[l] = true
				out[l] = append(out[l], i)
			}
		}
	}
	return out
}

// splits finds the bisections: invocation i is split in lane l when its
// batch failed as a whole (a result other than success or partial) with
// more than one record of l, and the next invocation of l is a half of a
// bisected batch whose records of l are a proper prefix of i's: the first
// half, which Lambda sends next.
func splits(invs []inv, recLane []int, byLane [][]int) [][2]int {
	var out [][2]int
	for l, list := range byLane {
		for k := 0; k+1 < len(list); k++ {
			i, j := list[k], list[k+1]
			if r := invs[i].result; r == ResultSuccess || r == ResultPartial || !invs[j].bisect {
				continue
			}
			a, b := laneRecs(invs[i], recLane, l), laneRecs(invs[j], recLane, l)
			if len(a) > 1 && len(b) < len(a) && len(b) > 0 && equalInts(a[:len(b)], b) {
				out = append(out, [2]int{i, l})
			}
		}
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// retriesConsumed counts, per lane, the times the retries of the lane's
// head record went up from one invocation of the lane to the next: each
// is a retry consumed (streams, Kafka). A lane's count starts again when
// its head moves (the trace's retry drops).
func retriesConsumed(retry []int, byLane [][]int) int {
	n := 0
	for _, list := range byLane {
		prev := 0
		for _, i := range list {
			if retry[i] > prev {
				n += retry[i] - prev
			}
			prev = retry[i]
		}
	}
	return n
}

// placement is where an on-failure record lands on a lane: after the
// invocation whose request id it carries (Lambda gave up after that one),
// or, for one that names no invocation of the run (a record past
// MaximumRecordAge, given up on before it was sent), just before the
// lane's next invocation that delivered a record after the given-up ones
// (the end of the lane when none did).
type placement struct {
	lane int
	slot int
	recs []int
}

// placeOnFailure places an on-failure record that names the records
// recs of lane l (in lane order) and the invocation at (-1: none of the
// run). pos is each record's position in its lane's order.
func placeOnFailure(at, l int, recs []int, invs []inv, recLane, pos []int, byLane [][]int) placement {
	p := placement{lane: l, recs: recs}
	if at >= 0 {
		p.slot = after(at)
		return p
	}
	end := -1
	for _, r := range recs {
		end = max(end, pos[r])
	}
	p.slot = slotNever
	for _, i := range byLane[l] {
		for _, r := range laneRecs(invs[i], recLane, l) {
			if pos[r] > end {
				p.slot = before(i)
				return p
			}
		}
	}
	if list := byLane[l]; len(list) > 0 {
		p.slot = after(list[len(list)-1])
	}
	return p
}

// resolvedAt is, per record, the slot after which its fate was settled:
// filtered records before anything ran (Lambda drops them as it reads),
// records given up on where their on-failure record lands, records left in
// the source never, and every other record (processed, quarantined,
// dead-lettered, or a fate this package does not know) at its last
// delivery, or before anything ran when it was never delivered.
func resolvedAt(fate []string, last []int, onFailure []placement) []int {
	at := make([]int, len(fate))
	for r, f := range fate {
		switch {
		case f == checks.Filtered:
			at[r] = slotStart
		case f == checks.Left || f == "":
			at[r] = slotNever
		case last[r] >= 0:
			at[r] = after(last[r])
		default:
			at[r] = slotStart
		}
	}
	for _, p := range onFailure {
		for _, r := range p.recs {
			if fate[r] == checks.OnFailure {
				at[r] = p.slot
			}
		}
	}
	return at
}

// advance is a checkpoint that moved: after slot, lane's checkpoint is rec.
type advance struct {
	slot, lane, rec int
}

// checkpoints derives where each ordered lane's checkpoint moved: the
// checkpoint is the last record of the longest prefix of the lane's order
// whose records are all resolved, as the runner computes its final
// checkpoints; it moves at each slot where that prefix grows.
func checkpoints(order [][]int, at []int) []advance {
	var out []advance
	for l, recs := range order {
		slots := make([]int, 0, len(recs))
		for _, r := range recs {
			if at[r] != slotNever {
				slots = append(slots, at[r])
			}
		}
		slices.Sort(slots)
		pos := 0
		for k, s := range slots {
			if k > 0 && s == slots[k-1] {
				continue
			}
			from := pos
			for pos < len(recs) && at[recs[pos]] <= s {
				pos++
			}
			if pos > from {
				out = append(out, advance{slot: s, lane: l, rec: recs[pos-1]})
			}
		}
	}
	return out
}

// filteredMarks places each filtered record of an ordered lane just before
// the lane's first invocation that delivered a record after it (Lambda
// skipped it when it read past it), or after the lane's last invocation;
// a filtered record of a lane without an order (a queue) at the lane's
// start.
func filteredMarks(filtered []int, recLane, pos []int, ordered []bool, invs []inv, byLane [][]int) []advance {
	var out []advance
	for _, r := range filtered {
		l := recLane[r]
		m := advance{slot: slotStart, lane: l, rec: r}
		if ordered[l] {
			m.slot = slotNever
			for _, i := range byLane[l] {
				found := false
				for _, x := range laneRecs(invs[i], recLane, l) {
					if pos[x] > pos[r] {
						found = true
						break
					}
				}
				if found {
					m.slot = before(i)
					break
				}
			}
			if m.slot == slotNever {
				if list := byLane[l]; len(list) > 0 {
					m.slot = after(list[len(list)-1])
				} else {
					m.slot = slotStart
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// nameRef matches how reports name a record by where it came from:
// "line 5" (a records-file line) or "record 3" (a position among the
// records given in Go), and for a KPL user record its sub-sequence number
// after a colon ("line 5:2").
var nameRef = regexp.MustCompile(`\b(line|record) ([0-9]+)(?::([0-9]+))?\b`)

// place is a record's line or position, and its sub-sequence number (-1
// for a record that is not a KPL user record).
type place struct{ n, sub int }

// linkViolation lists the records a violation names, in the order it
// names them: by "line N" or "record N" (RecordFate.Name), or by their id
// in the source (records read from a real source are named by it).
func linkViolation(text string, byLine, byInput map[place]int, byID map[string]int) []int {
	var out []int
	seen := map[int]bool{}
	add := func(r int) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, m := range nameRef.FindAllStringSubmatchIndex(text, -1) {
		n, err := strconv.Atoi(text[m[4]:m[5]])
		if err != nil {
			continue
		}
		at := place{n, -1}
		if m[6] >= 0 {
			if at.sub, err = strconv.Atoi(text[m[6]:m[7]]); err != nil {
				continue
			}
		}
		by := byInput
		if text[m[2]:m[3]] == "line" {
			by = byLine
		}
		if r, ok := by[at]; ok {
			add(r)
		}
	}
	for _, tok := range strings.FieldsFunc(text, func(c rune) bool {
		return c == ' ' || c == ',' || c == '(' || c == ')' || c == '"' || c == ';' || c == '='
	}) {
		tok = strings.TrimRight(tok, ":.")
		if r, ok := byID[tok]; ok {
			add(r)
		}
	}
	return out
}
