package localtest

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/idempotency"
)

// Invariant names in Report.Invariants.
const (
	InvariantNoLoss = "no-record-lost"
	InvariantOrder  = "order-per-key"
	// InvariantOnce is checked with Options.ExactlyOnce: no record took
	// effect twice (what idempotency promises).
	InvariantOnce = "effect-once"
)

// effectsInput is what the invariant checks read.
type effectsInput struct {
	records []inputRef        // every record of the run, in source order
	fates   map[string]string // record id -> fate
	// have is true when the run was given effects to check (Options.Effects);
	// err is why they could not be read.
	have    bool
	effects []Effect
	err     error
	// field, if set, matches an effect to the record whose payload's
	// top-level field of that name equals Effect.ID; otherwise Effect.Record
	// names the record's id.
	field     string
	unordered bool // SQS standard: no order to check
	once      bool // check that no record took effect twice
	// unknown, if set, is why a processed record may have been quarantined
	// instead (the function's dead letters could not be read): such a
	// record without an effect is not known to be lost.
	unknown string
	// killed names, by request id, the invocations the runner killed in
	// the middle of their batch (a mid-batch crash, or a timeout frozen
	// mid-batch); killRepeatsOK accepts an effect repeated because such a
	// kill cut its record's run short (see Options.AllowKillRepeats).
	killed        map[string]bool
	killRepeatsOK bool
}

// Effects a kill can have cut short, per killed invocation: a process
// killed mid-batch after a record's effect and before its completion was
// stored leaves the record to run again, the window no idempotency store
// closes, since the effect is outside it. Only the records running at the
// kill, or whose completion was still in flight, can be in it: on an
// ordered lane the last killWindowPerKey effects of each ordering key (the
// record running and up to idempotency.DefaultOrderedDepth before it
// whose completions were still in flight: the handlers let that many of a
// lane's completes overlap its next records, and a key's records are in
// one lane), on an unordered queue the last killWindowUnordered of the
// invocation: the handler runs 8 records at once and, on an unordered
// queue, sends each completion without waiting for it, with up to
// idempotency.DefaultInFlight (128) store requests in flight.
const (
	killWindowPerKey    = idempotency.DefaultOrderedDepth + 1
	killWindowUnordered = idempotency.DefaultInFlight + 8
)

// killWindow returns the positions of the effects a kill can have cut
// short: for each invocation in killed, its last killWindowPerKey effects
// of each key (ordered), or its last killWindowUnordered effects.
// key(pos) is the ordering key of the record effect pos belongs to.
func killWindow(effects []Effect, killed map[string]bool, ordered bool, key func(pos int) string) map[int]bool {
	in := map[int]bool{}
	seen := map[string]int{} // invocation (and key) -> effects counted from the end
	for pos := len(effects) - 1; pos >= 0; pos-- {
		req := effects[pos].Request
		if req == "" || !killed[req] {
			continue
		}
		limit, lane := killWindowUnordered, req
		if ordered {
			limit, lane = killWindowPerKey, req+"\x00"+key(pos)
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

// checkInvariants checks, from the records in source order, each record's
// fate, and the effects the function recorded (in the order they
// happened):
//
//   - no record lost: every record was processed, sent to the on-failure
//     destination, moved to the dead-letter queue, filtered out by the
//     mapping's FilterCriteria, or is still waiting in the source; and, when effects are given, every record that counts as
//     processed has at least one effect (a record acknowledged without its
//     effect is lost: the mapping ignored its failure).
//   - order per key: for every ordering key, the first effects of its records
//     happen in record order. Not checked for SQS standard queues, which
//     promise no order.
//
// A check that cannot be evaluated says why and is not held: no effects
// given (order-per-key and effect-once), effects that cannot be read,
// effects that name no record of the run, no effects at all although
// records were acknowledged as processed, or (matching by a payload field)
// processed records whose payload lacks the field. Records that share the
// field's value are one business key (see matchEffects): one effect covers
// them all, and effect-once counts the key's effects.
func checkInvariants(in effectsInput) []InvariantResult {
	loss := InvariantResult{Name: InvariantNoLoss, Status: StatusHeld}
	processed := 0
	for _, rec := range in.records {
		f, ok := in.fates[rec.id]
		switch {
		case !ok:
			loss.violate("record %s has no fate: it was never delivered and is not in the source", rec.name())
		case f == FateProcessed:
			processed++
		}
	}
	if !in.have {
		out := []InvariantResult{loss}
		if !in.unordered {
			out = append(out, InvariantResult{Name: InvariantOrder, Status: StatusNotEvaluated,
				Reason: "no effects were given to check (Options.Effects, --effects): the order records took effect in is unknown"})
		}
		if in.once {
			out = append(out, InvariantResult{Name: InvariantOnce, Status: StatusNotEvaluated,
				Reason: "no effects were given to check (Options.Effects, --effects)"})
		}
		return out
	}
	group, first, count, at, why := matchEffects(in, processed)
	if why != "" {
		out := []InvariantResult{loss.notEvaluated(why)}
		if !in.unordered {
			out = append(out, InvariantResult{Name: InvariantOrder, Status: StatusNotEvaluated, Reason: why})
		}
		if in.once {
			out = append(out, InvariantResult{Name: InvariantOnce, Status: StatusNotEvaluated, Reason: why})
		}
		return out
	}
	unsure := 0
	for i, rec := range in.records {
		if in.fates[rec.id] == FateProcessed && first[group[i]] < 0 {
			if in.unknown != "" {
				unsure++
				continue
			}
			loss.violate("record %s was acknowledged as processed but no effect names it: its effect never happened "+
				"(if the function parked it in its dead letters, give the runner that destination: SLUICE_DLQ_FILE, Options.Quarantine)", rec.name())
		}
	}
	if unsure > 0 {
		loss = loss.notEvaluated(fmt.Sprintf("%d records acknowledged as processed have no effect, and %s", unsure, in.unknown))
	}
	out := []InvariantResult{loss}
	if in.once {
		once := InvariantResult{Name: InvariantOnce, Status: StatusHeld}
		size := map[int]int{}
		for i := range in.records {
			size[group[i]]++
		}
		members := map[int][]string{} // representative -> the records sharing its key
		for i, rec := range in.records {
			if size[group[i]] > 1 {
				members[group[i]] = append(members[group[i]], rec.name())
			}
		}
		owner := make([]int, len(in.effects)) // effect position -> record index
		for i := range in.records {
			for _, pos := range at[i] {
				owner[pos] = i
			}
		}
		window := killWindow(in.effects, in.killed, !in.unordered, func(pos int) string { return in.records[owner[pos]].key })
		allowed := 0
		for i, rec := range in.records {
			if count[i] <= 1 {
				continue
			}
			what := fmt.Sprintf("record %s", rec.name())
			if len(members[i]) > 0 {
				v, _ := payloadField(rec.payload, in.field)
				what = fmt.Sprintf("%s %q (records %s)", in.field, v, strings.Join(members[i], ", "))
			}
			cut := killRepeats(at[i], window)
			switch {
			case cut >= count[i]-1 && in.killRepeatsOK:
				allowed += count[i] - 1
			case cut >= count[i]-1:
				once.violate("%s took effect %d times: its run in an invocation the runner killed made the effect and died before "+
					"its completion was stored, so the record ran again. No idempotency store closes that window (the effect is "+
					"outside it): make the effect itself idempotent (pass the record's idempotency key to the service it goes to), "+
					"then accept such repeats with --allow-kill-repeats (Options.AllowKillRepeats)", what, count[i])
			default:
				once.violate("%s took effect %d times", what, count[i])
			}
		}
		if allowed > 0 && once.Status == StatusHeld {
			once.Reason = fmt.Sprintf("%d effects repeated because the invocation that first made them was killed before their completion "+
				"was stored, allowed by --allow-kill-repeats (Options.AllowKillRepeats)", allowed)
		}
		out = append(out, once)
	}
	if in.unordered {
		return out
	}
	order := InvariantResult{Name: InvariantOrder, Status: StatusHeld}
	// Walk records by the position of their first effect; within a key the
	// source index must grow.
	byPos := make([]int, len(in.effects))
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
		rec := in.records[i]
		if prev, ok := last[rec.key]; ok && prev > i {
			order.violate("key %s: record %s first took effect at effect %d, after record %s, which comes later in the source",
				rec.key, rec.name(), pos+1, in.records[prev].name())
			continue
		}
		last[rec.key] = i
	}
	return append(out, order)
}

// matchEffects returns, per record, the record that answers for its
// effects (group: itself, or with a payload field the representative of the
// records that share its value), and per representative the position of its
// first effect (-1 for none) and how many effects name it; or why the
// effects cannot be matched to the records.
//
// Matching by a payload field (a business key such as paymentId) reads an
// effect as the effect of that key: records that carry the same value (a
// producer's duplicate) are one business entity, with one effect between
// them. Their representative is the first of them, in source order, that
// ended processed (else the first of them): the one whose delivery the
// effect came from when the duplicates keep their order.
func matchEffects(in effectsInput, processed int) (group, first, count []int, at [][]int, why string) {
	if in.err != nil {
		return nil, nil, nil, nil, "the effects could not be read: " + in.err.Error()
	}
	group = make([]int, len(in.records))
	for i := range group {
		group[i] = i
	}
	if len(in.effects) == 0 {
		if processed == 0 { // nothing needed an effect
			none := make([]int, len(in.records))
			for i := range none {
				none[i] = -1
			}
			return group, none, make([]int, len(in.records)), make([][]int, len(in.records)), ""
		}
		return nil, nil, nil, nil, fmt.Sprintf("no effect was recorded (an effects file that was never written) although %d records were "+
			"acknowledged as processed: the function must write one effect per processed record (SLUICE_EFFECTS_FILE)", processed)
	}
	index := make(map[string]int, len(in.records))
	if in.field == "" {
		for i, rec := range in.records {
			index[rec.id] = i
		}
	} else {
		var missing []string
		for i, rec := range in.records {
			v, ok := payloadField(rec.payload, in.field)
			if !ok {
				if in.fates[rec.id] == FateProcessed {
					missing = append(missing, rec.name())
				}
				continue
			}
			j, dup := index[v]
			switch {
			case !dup:
				index[v] = i
			case in.fates[in.records[j].id] != FateProcessed && in.fates[rec.id] == FateProcessed:
				index[v] = i // a processed record answers for the key
			}
		}
		if len(missing) > 0 {
			return nil, nil, nil, nil, fmt.Sprintf("%d processed records have no top-level payload field %q to match effects by (%s)",
				len(missing), in.field, list(missing))
		}
		for i, rec := range in.records {
			if v, ok := payloadField(rec.payload, in.field); ok {
				group[i] = index[v]
			}
		}
	}
	first, count, at = make([]int, len(in.records)), make([]int, len(in.records)), make([][]int, len(in.records))
	for i := range first {
		first[i] = -1
	}
	var stray []string
	for pos, e := range in.effects {
		name := e.Record
		if in.field != "" {
			name = e.ID
		}
		i, ok := index[name]
		if !ok {
			stray = append(stray, fmt.Sprintf("effect %d %s", pos+1, e.describe(in.field)))
			continue
		}
		if first[i] < 0 {
			first[i] = pos
		}
		count[i]++
		at[i] = append(at[i], pos)
	}
	if len(stray) > 0 {
		how := `"record" (the record's id in its source)`
		if in.field != "" {
			how = fmt.Sprintf("the payload field %q", in.field)
		}
		return nil, nil, nil, nil, fmt.Sprintf("%d of %d effects name no record of this run by %s (%s)", len(stray), len(in.effects), how, list(stray))
	}
	return group, first, count, at, ""
}

func (e Effect) describe(field string) string {
	if field != "" {
		return fmt.Sprintf("%s=%q", field, e.ID)
	}
	if e.Record == "" {
		return `has no "record"`
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

func (r *InvariantResult) violate(format string, args ...any) {
	r.Status = StatusViolated
	if len(r.Violations) < 20 {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	} else if len(r.Violations) == 20 {
		r.Violations = append(r.Violations, "... more")
	}
}

// notEvaluated marks r not evaluated, unless it is already violated (a
// record without a fate is lost whatever the effects say).
func (r InvariantResult) notEvaluated(why string) InvariantResult {
	if r.Status == StatusViolated {
		if r.Reason == "" {
			r.Reason = "not fully checked: " + why
		}
		return r
	}
	if r.Status == StatusNotEvaluated {
		return r // keep the first reason
	}
	r.Status, r.Reason = StatusNotEvaluated, why
	return r
}

// Held reports whether the run tested the function (no Failure), ran to
// its end (not Stopped) and every invariant held. A check that could not be
// evaluated is not held.
func (rep *Report) Held() bool {
	if rep.Failure != nil || rep.Stopped != "" {
		return false
	}
	for _, inv := range rep.Invariants {
		if inv.Status != StatusHeld {
			return false
		}
	}
	return true
}
