package localtest

import (
	"fmt"
)

// Invariant names in Report.Invariants.
const (
	InvariantNoLoss = "no-record-lost"
	InvariantOrder  = "order-per-key"
)

// checkInvariants checks, from the input records in order, each record's
// fate, and the effects the function recorded (in the order they
// happened):
//
//   - no record lost: every record was processed, sent to the on-failure
//     destination, moved to the dead-letter queue, or is still waiting in the
//     source; and, when effects are known, every record whose payload names
//     an id and that counts as processed has at least one effect (a record
//     acknowledged without its effect is lost: the mapping ignored its
//     failure).
//   - order per key: for every ordering key, the first effects of its records
//     happen in record order. Not checked for SQS standard queues, which
//     promise no order.
//
// Further checks (every effect exactly once, with idempotency) plug in here.
func checkInvariants(records []inputRef, fates map[string]string, effects []Effect, haveEffects, unordered bool) []InvariantResult {
	loss := InvariantResult{Name: InvariantNoLoss, Held: true}
	first := map[string]int{} // payload id -> position of its first effect
	for i, e := range effects {
		if _, ok := first[e.ID]; !ok {
			first[e.ID] = i
		}
	}
	for _, rec := range records {
		f, ok := fates[rec.id]
		switch {
		case !ok:
			loss.violate("record %s has no fate: it was never delivered and is not in the source", rec.id)
		case f == FateProcessed && haveEffects && rec.payloadID != "":
			if _, ok := first[rec.payloadID]; !ok {
				loss.violate("record %s (payload %s) was acknowledged as processed but its effect never happened", rec.id, rec.payloadID)
			}
		}
	}
	out := []InvariantResult{loss}
	if !haveEffects || unordered {
		return out
	}
	order := InvariantResult{Name: InvariantOrder, Held: true}
	last := map[string]inputRef{} // key -> record with the latest first effect so far
	index := map[string]int{}
	for i, rec := range records {
		if rec.payloadID != "" {
			index[rec.payloadID] = i
		}
	}
	// Walk records by the position of their first effect; within a key the
	// input index must grow.
	byPos := make([]string, len(effects))
	for id, pos := range first {
		byPos[pos] = id
	}
	for pos, id := range byPos {
		if id == "" {
			continue
		}
		i, ok := index[id]
		if !ok {
			continue // an effect of something that is not an input record
		}
		rec := records[i]
		if prev, ok := last[rec.key]; ok && index[prev.payloadID] > i {
			order.violate("key %s: record %s (payload %s) first took effect at %d, after record %s (payload %s), which comes later in the source",
				rec.key, rec.id, rec.payloadID, pos, prev.id, prev.payloadID)
			continue
		}
		last[rec.key] = rec
	}
	return append(out, order)
}

func (r *InvariantResult) violate(format string, args ...any) {
	r.Held = false
	if len(r.Violations) < 20 {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	} else if len(r.Violations) == 20 {
		r.Violations = append(r.Violations, "... more")
	}
}

// Held reports whether every invariant in the report held.
func (rep *Report) Held() bool {
	for _, inv := range rep.Invariants {
		if !inv.Held {
			return false
		}
	}
	return true
}
