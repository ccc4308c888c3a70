// Package checks is the pure logic of the checks a localtest run ends
// with: no record lost, order per key, effect once and fate as expected.
// It reads plain values (records in source order, their fates, the
// effects the function recorded) and returns results; package localtest
// gathers those values from a run and turns the results into its
// Report's InvariantResult and RecordFate values. Its words (fates,
// statuses, check names) are localtest's, spelled again here because
// localtest's public constants cannot name an internal package; a test in
// localtest keeps the two spellings equal.
package checks

import (
	"fmt"
	"strconv"
	"strings"
)

// Fates of a record, as localtest's Fate constants spell them.
const (
	Processed    = "processed"
	Quarantined  = "quarantined"
	OnFailure    = "on-failure"
	DeadLettered = "dead-lettered"
	Filtered     = "filtered"
	Left         = "left"
	Skipped      = "skipped"
)

// Statuses of a check, as localtest's Status constants spell them.
const (
	Held         = "held"
	Violated     = "violated"
	NotEvaluated = "not-evaluated"
)

// Check names, as localtest's Invariant constants spell them.
const (
	NoLoss = "no-record-lost"
	Order  = "order-per-key"
	Once   = "effect-once"
	Fates  = "fate-as-expected"
)

// Result is one check: localtest.InvariantResult without its JSON tags
// (the two convert into each other).
type Result struct {
	Name string
	// Status is Held, Violated or NotEvaluated.
	Status string
	// Reason says why the check could not be evaluated; on a check that
	// held, what it allowed.
	Reason     string
	Violations []string
}

// Violate marks r violated, with one more violation (the first 20 are
// kept).
func (r *Result) Violate(format string, args ...any) {
	r.Status = Violated
	if len(r.Violations) < 20 {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	} else if len(r.Violations) == 20 {
		r.Violations = append(r.Violations, "... more")
	}
}

// NotEvaluated marks r not evaluated, unless it is already violated (a
// record without a fate is lost whatever the effects say).
func (r Result) NotEvaluated(why string) Result {
	if r.Status == Violated {
		if r.Reason == "" {
			r.Reason = "not fully checked: " + why
		}
		return r
	}
	if r.Status == NotEvaluated {
		return r // keep the first reason
	}
	r.Status, r.Reason = NotEvaluated, why
	return r
}

// Record is one record of the run, as the checks read it.
type Record struct {
	ID  string // its id in the source, as fates and effects name it
	Key string // its ordering key
	// Field is the value of the payload's top-level field the effects are
	// matched by (Input.Field), and HasField whether the payload has it.
	Field    string
	HasField bool
	// Items is how many items the record carries that effects may name
	// one by one (the S3 records of an S3 event notification), each as
	// "<id>#<i>" (events.ItemID); 0 for none.
	Items int
}

// Effect is one effect the function recorded: the record it names (by
// id), its payload id (or the value of Input.Field) and the request id of
// the invocation that made it.
type Effect struct {
	Record, ID, Request string
}

// Input is what the invariant checks read.
type Input struct {
	Records []Record          // every record of the run, in source order
	Fates   map[string]string // record id -> fate
	// Name is how reports name Records[i] ("line 5 (id o5)"), asked only
	// for the records a result names.
	Name func(i int) string
	// Have is true when the run was given effects to check; Err is why
	// they could not be read.
	Have    bool
	Effects []Effect
	Err     error
	// Field, if set, matches an effect to the record whose payload's
	// top-level field of that name equals Effect.ID; otherwise
	// Effect.Record names the record's id.
	Field     string
	Unordered bool // SQS standard: no order to check
	Once      bool // check that no record took effect twice
	// Unknown, if set, is why a processed record may have been quarantined
	// instead (the function's dead letters could not be read): such a
	// record without an effect is not known to be lost.
	Unknown string
	// Killed names, by request id, the invocations the runner killed in
	// the middle of their batch; KillRepeatsOK accepts an effect repeated
	// because such a kill cut its record's run short. WindowPerKey and
	// WindowUnordered size the kill window (see KillWindow).
	Killed                        map[string]bool
	KillRepeatsOK                 bool
	WindowPerKey, WindowUnordered int

	// Claims are, by record id, what the handlers said of the records
	// they answered without the user's function (MarkSkipped made those
	// that took no effect Skipped); Stray the claims that name no record
	// of the run. Shows(i, reason) says whether record i's payload is
	// what reason says (an s3:TestEvent, a CloudWatch Logs control
	// message). Store is the function's idempotency store, nil when the
	// run was not given it.
	Claims map[string][]Claim
	Stray  []Claim
	Shows  func(i int, reason string) bool
	Store  *Store
	// Position, when set, is record i's position in its ordered lane as
	// the handlers name it (idempotency.Position), and false when the
	// runner cannot tell it: a duplicate a lane's checkpoint answered is
	// checked at the record's own position.
	Position func(i int) (string, bool)
	// Aggregates is, per id of a Kinesis record that is a KPL aggregate,
	// how many user records it holds: an effect naming the aggregate
	// rather than one of its user records is told what to name.
	Aggregates map[string]int
}

// KillWindow returns the positions of the effects a kill can have cut
// short: for each invocation in killed, its last perKey effects of each
// key (ordered), or its last unordered effects. key(pos) is the ordering
// key of the record effect pos belongs to.
func KillWindow(effects []Effect, killed map[string]bool, ordered bool, perKey, unordered int, key func(pos int) string) map[int]bool {
	in := map[int]bool{}
	seen := map[string]int{} // invocation (and key) -> effects counted from the end
	for pos := len(effects) - 1; pos >= 0; pos-- {
		req := effects[pos].Request
		if req == "" || !killed[req] {
			continue
		}
		limit, lane := unordered, req
		if ordered {
			limit, lane = perKey, req+"\x00"+key(pos)
		}
		if seen[lane] < limit {
			in[pos] = true
		}
		seen[lane]++
	}
	return in
}

// killRepeats is how many of a record's repeated effects a kill explains:
// its effects (at, positions in the order they happened) other than the
// last that lie in the kill window.
func killRepeats(at []int, window map[int]bool) int {
	n := 0
	for _, pos := range at[:max(len(at)-1, 0)] {
		if window[pos] {
			n++
		}
	}
	return n
}

// Invariants checks, from the records in source order, each record's
// fate, and the effects the function recorded (in the order they
// happened):
//
//   - no record lost: every record was processed, sent to the on-failure
//     destination, moved to the dead-letter queue, filtered out by the
//     mapping's FilterCriteria, skipped by its handler for a reason the
//     runner could check (Claims), or is still waiting in the source; and,
//     when effects are given, every record that counts as processed has
//     at least one effect, or effects naming each of its items (a record
//     acknowledged without its effect is lost: the mapping ignored its
//     failure).
//   - order per key: for every ordering key, the first effects of its records
//     happen in record order. Not checked for SQS standard queues, which
//     promise no order.
//
// A check that cannot be evaluated says why and is not held: no effects
// given (order-per-key and effect-once), effects that cannot be read,
// effects that name no record of the run, no effects at all although
// records were acknowledged as processed, (matching by a payload field)
// processed records whose payload lacks the field, or a skipped record's
// claim that cannot be checked. Records that share the field's value are
// one business key (see matchEffects): one effect covers them all, and
// effect-once counts the key's effects.
//
// It also returns, per skipped record, how its claims checked out.
func Invariants(in Input) ([]Result, map[string]Claimed) {
	loss := Result{Name: NoLoss, Status: Held}
	processed := 0
	for i, rec := range in.Records {
		f, ok := in.Fates[rec.ID]
		switch {
		case !ok:
			loss.Violate("record %s has no fate: it was never delivered and is not in the source", in.Name(i))
		case f == Processed:
			processed++
		}
	}
	if !in.Have {
		claimed, unsure, why := checkSkipped(in, &loss, func(int) bool { return false })
		if unsure > 0 {
			loss = loss.NotEvaluated(skipsUnsure(unsure, why))
		}
		out := []Result{loss}
		if !in.Unordered {
			out = append(out, Result{Name: Order, Status: NotEvaluated,
				Reason: "no effects were given to check (Options.Effects, --effects): the order records took effect in is unknown"})
		}
		if in.Once {
			out = append(out, Result{Name: Once, Status: NotEvaluated,
				Reason: "no effects were given to check (Options.Effects, --effects)"})
		}
		return out, claimed
	}
	m, why := matchEffects(in, processed)
	if why != "" {
		claimed, _, _ := checkSkipped(in, &loss, func(int) bool { return false })
		out := []Result{loss.NotEvaluated(why)}
		if !in.Unordered {
			out = append(out, Result{Name: Order, Status: NotEvaluated, Reason: why})
		}
		if in.Once {
			out = append(out, Result{Name: Once, Status: NotEvaluated, Reason: why})
		}
		return out, claimed
	}
	group, first := m.group, m.first
	unsure := 0
	for i, rec := range in.Records {
		if in.Fates[rec.ID] != Processed {
			continue
		}
		if first[group[i]] >= 0 {
			if missing := m.missingItems(group[i]); len(missing) > 0 {
				loss.Violate("record %s was acknowledged as processed, and effects name some of its %d items but not item %s: their effects never happened",
					in.Name(i), rec.Items, strings.Join(missing, ", "))
			}
			continue
		}
		if in.Unknown != "" {
			unsure++
			continue
		}
		loss.Violate("record %s was acknowledged as processed but no effect names it: its effect never happened "+
			"(if the function parked it in its dead letters, give the runner that destination: SLUICE_DLQ_FILE, Options.Quarantine)", in.Name(i))
	}
	if unsure > 0 {
		loss = loss.NotEvaluated(fmt.Sprintf("%d records acknowledged as processed have no effect, and %s", unsure, in.Unknown))
	}
	claimed, unsureSkips, whySkips := checkSkipped(in, &loss, func(i int) bool { return in.Field != "" && first[group[i]] >= 0 })
	if unsureSkips > 0 {
		loss = loss.NotEvaluated(skipsUnsure(unsureSkips, whySkips))
	}
	out := []Result{loss}
	if in.Once {
		out = append(out, effectOnce(in, m))
	}
	if in.Unordered {
		return out, claimed
	}
	order := Result{Name: Order, Status: Held}
	// Walk records by the position of their first effect; within a key the
	// source index must grow.
	byPos := make([]int, len(in.Effects))
	for i := range byPos {
		byPos[i] = -1
	}
	for i, pos := range first {
		if pos >= 0 {
			byPos[pos] = i
		}
	}
	last := map[string]int{} // key -> record index with the latest first effect so far
	for pos, i := range byPos {
		if i < 0 {
			continue
		}
		rec := in.Records[i]
		if prev, ok := last[rec.Key]; ok && prev > i {
			order.Violate("key %s: record %s first took effect at effect %d, after record %s, which comes later in the source",
				rec.Key, in.Name(i), pos+1, in.Name(prev))
			continue
		}
		last[rec.Key] = i
	}
	return append(out, order), claimed
}

// skipsUnsure is why no-record-lost is not evaluated when claims of
// skipped records could not be checked.
func skipsUnsure(n int, why string) string {
	if n == 1 {
		return "a record its handler answered without running the function cannot be shown to have taken effect: " + why
	}
	return fmt.Sprintf("%d records their handlers answered without running the function cannot be shown to have taken effect; the first, %s", n, why)
}

// effectOnce is the check effect-once, from what matchEffects found.
func effectOnce(in Input, m matched) Result {
	once := Result{Name: Once, Status: Held}
	group := m.group
	size := map[int]int{}
	for i := range in.Records {
		size[group[i]]++
	}
	members := map[int][]string{} // representative -> the records sharing its key
	for i := range in.Records {
		if size[group[i]] > 1 {
			members[group[i]] = append(members[group[i]], in.Name(i))
		}
	}
	owner := make([]int, len(in.Effects)) // effect position -> record index
	for i := range in.Records {
		for _, pos := range m.at[i] {
			owner[pos] = i
		}
		for _, at := range m.items[i] {
			for _, pos := range at {
				owner[pos] = i
			}
		}
	}
	window := KillWindow(in.Effects, in.Killed, !in.Unordered, in.WindowPerKey, in.WindowUnordered,
		func(pos int) string { return in.Records[owner[pos]].Key })
	allowed := 0
	check := func(at []int, name func() string) {
		n := len(at)
		if n <= 1 {
			return
		}
		what := name()
		cut := killRepeats(at, window)
		switch {
		case cut >= n-1 && in.KillRepeatsOK:
			allowed += n - 1
		case cut >= n-1:
			once.Violate("%s took effect %d times: its run in an invocation the runner killed made the effect and died before "+
				"its completion was stored, so the record ran again. No idempotency store closes that window (the effect is "+
				"outside it): make the effect itself idempotent (pass the record's idempotency key to the service it goes to), "+
				"then accept such repeats with --allow-kill-repeats (Options.AllowKillRepeats)", what, n)
		default:
			once.Violate("%s took effect %d times", what, n)
		}
	}
	for i, rec := range in.Records {
		check(m.at[i], func() string {
			if len(members[i]) > 0 {
				return fmt.Sprintf("%s %q (records %s)", in.Field, rec.Field, strings.Join(members[i], ", "))
			}
			return "record " + in.Name(i)
		})
		for j := range rec.Items {
			check(m.items[i][j], func() string { return fmt.Sprintf("item %d of record %s", j, in.Name(i)) })
		}
	}
	if allowed > 0 && once.Status == Held {
		once.Reason = fmt.Sprintf("%d effects repeated because the invocation that first made them was killed before their completion "+
			"was stored, allowed by --allow-kill-repeats (Options.AllowKillRepeats)", allowed)
	}
	return once
}

// matched is what matchEffects found: per record, the record that answers
// for its effects (group: itself, or with a payload field the
// representative of the records that share its value); per
// representative the position of its first effect (-1 for none), the
// positions of the effects that name it whole (at), and of those that
// name each of its items (items, nil for a record none names by item).
type matched struct {
	group, first []int
	at           [][]int
	items        []map[int][]int
	records      []Record
}

// missingItems lists the items of record i that no effect names when
// effects name some of its items and none names it whole, or nil.
func (m matched) missingItems(i int) []string {
	if len(m.at[i]) > 0 || len(m.items[i]) == 0 {
		return nil
	}
	var out []string
	for j := range m.records[i].Items {
		if len(m.items[i][j]) == 0 {
			out = append(out, strconv.Itoa(j))
		}
	}
	return out
}

// matchEffects matches the effects to the records (see matched), or says
// why they cannot be matched.
//
// Matching by a payload field (a business key such as paymentId) reads an
// effect as the effect of that key: records that carry the same value (a
// producer's duplicate) are one business entity, with one effect between
// them. Their representative is the first of them, in source order, that
// ended processed (else the first of them): the one whose delivery the
// effect came from when the duplicates keep their order. Matching by
// record id, an effect may name a record whole or one of its items
// ("<id>#<i>", Record.Items).
func matchEffects(in Input, processed int) (m matched, why string) {
	if in.Err != nil {
		return m, "the effects could not be read: " + in.Err.Error()
	}
	n := len(in.Records)
	m = matched{group: make([]int, n), first: make([]int, n), at: make([][]int, n), items: make([]map[int][]int, n), records: in.Records}
	for i := range m.group {
		m.group[i], m.first[i] = i, -1
	}
	if len(in.Effects) == 0 {
		if processed == 0 { // nothing needed an effect
			return m, ""
		}
		return m, fmt.Sprintf("no effect was recorded (an effects file that was never written) although %d records were "+
			"acknowledged as processed: the function must write one effect per processed record (SLUICE_EFFECTS_FILE)", processed)
	}
	index := make(map[string]int, n)
	if in.Field == "" {
		for i, rec := range in.Records {
			index[rec.ID] = i
		}
	} else {
		var missing []string
		for i, rec := range in.Records {
			if !rec.HasField {
				if in.Fates[rec.ID] == Processed {
					missing = append(missing, in.Name(i))
				}
				continue
			}
			j, dup := index[rec.Field]
			switch {
			case !dup:
				index[rec.Field] = i
			case in.Fates[in.Records[j].ID] != Processed && in.Fates[rec.ID] == Processed:
				index[rec.Field] = i // a processed record answers for the key
			}
		}
		if len(missing) > 0 {
			return m, fmt.Sprintf("%d processed records have no top-level payload field %q to match effects by (%s)",
				len(missing), in.Field, list(missing))
		}
		for i, rec := range in.Records {
			if rec.HasField {
				m.group[i] = index[rec.Field]
			}
		}
	}
	var stray []string
	for pos, e := range in.Effects {
		name := e.Record
		if in.Field != "" {
			name = e.ID
		}
		i, ok := index[name]
		item := -1
		if !ok && in.Field == "" {
			i, item, ok = itemOf(index, in.Records, name)
		}
		if !ok {
			stray = append(stray, fmt.Sprintf("effect %d %s", pos+1, e.describe(in.Field, in.Aggregates)))
			continue
		}
		if m.first[i] < 0 {
			m.first[i] = pos
		}
		if item < 0 {
			m.at[i] = append(m.at[i], pos)
			continue
		}
		if m.items[i] == nil {
			m.items[i] = map[int][]int{}
		}
		m.items[i][item] = append(m.items[i][item], pos)
	}
	if len(stray) > 0 {
		how := `"record" (the record's id in its source)`
		if in.Field != "" {
			how = fmt.Sprintf("the payload field %q", in.Field)
		}
		return m, fmt.Sprintf("%d of %d effects name no record of this run by %s (%s)", len(stray), len(in.Effects), how, list(stray))
	}
	return m, ""
}

// itemOf reads name as "<id>#<i>", item i of a record that has at least
// i+1 items.
func itemOf(index map[string]int, recs []Record, name string) (rec, item int, ok bool) {
	at := strings.LastIndexByte(name, '#')
	if at < 0 {
		return 0, 0, false
	}
	i, found := index[name[:at]]
	if !found {
		return 0, 0, false
	}
	j, err := strconv.Atoi(name[at+1:])
	if err != nil || j < 0 || j >= recs[i].Items || strconv.Itoa(j) != name[at+1:] {
		return 0, 0, false
	}
	return i, j, true
}

func (e Effect) describe(field string, aggregates map[string]int) string {
	if field != "" {
		return fmt.Sprintf("%s=%q", field, e.ID)
	}
	if e.Record == "" {
		return `has no "record"`
	}
	if n, ok := aggregates[e.Record]; ok {
		return fmt.Sprintf("record=%q, a KPL aggregate: name each of its %d user records by \"<sequenceNumber>:<subSequenceNumber>\" (%s:0 to %s:%d; handlers.KinesisRecord.RecordID)",
			e.Record, n, e.Record, e.Record, n-1)
	}
	return fmt.Sprintf("record=%q", e.Record)
}

// list joins the first few items.
func list(items []string) string {
	if len(items) > 3 {
		return strings.Join(items[:3], "; ") + fmt.Sprintf("; ... %d more", len(items)-3)
	}
	return strings.Join(items, "; ")
}
