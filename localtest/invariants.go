package localtest

import (
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/localtest/internal/checks"
)

// Invariant names in Report.Invariants.
const (
	InvariantNoLoss = "no-record-lost"
	InvariantOrder  = "order-per-key"
	// InvariantOnce is checked with Options.ExactlyOnce: no record took
	// effect twice (what idempotency promises).
	InvariantOnce = "effect-once"
)

// effectsInput is what the invariant checks read: the run's records and
// the effects the function recorded, with the rest of checks.Input (its
// Records, Effects and kill window sizes are filled from them and from
// the constants below).
type effectsInput struct {
	records []inputRef // every record of the run, in source order
	effects []Effect
	checks.Input
}

// Effects a kill can have cut short, per killed invocation: a process
// killed mid-batch after a record's effect and before its completion was
// stored leaves the record to run again, the window no idempotency store
// closes, since the effect is outside it. Only the records running at the
// kill, or whose completion was still waiting to be stored, can be in it:
// on an ordered lane the last killWindowPerKey effects of each ordering
// key (the record running and up to idempotency.DefaultOrderedDepth
// before it: the handlers let that many of a lane's records wait for the
// lane's checkpoint, or for their grouped completes, while its next
// record runs, and a key's records are in one lane), on an unordered
// queue the last killWindowUnordered of the invocation: the handler runs
// 8 records at once and, on an unordered queue, sends each completion
// without waiting for it, with up to idempotency.DefaultInFlight (128,
// WithInFlight's default) store requests in flight.
const (
	killWindowPerKey    = idempotency.DefaultOrderedDepth + 1
	killWindowUnordered = idempotency.DefaultInFlight + 8
)

// killWindow returns the positions of the effects a kill can have cut
// short: for each invocation in killed, its last killWindowPerKey effects
// of each key (ordered), or its last killWindowUnordered effects.
// key(pos) is the ordering key of the record effect pos belongs to.
func killWindow(effects []Effect, killed map[string]bool, ordered bool, key func(pos int) string) map[int]bool {
	return checks.KillWindow(checkEffects(effects), killed, ordered, killWindowPerKey, killWindowUnordered, key)
}

// checkInvariants checks, from the records in source order, each record's
// fate, and the effects the function recorded (in the order they
// happened), as checks.Invariants does: no record lost, order per key
// (not for SQS standard queues) and, with once, effect once.
// It also says how the claim of each skipped record checked out.
func checkInvariants(in effectsInput) ([]InvariantResult, map[string]checks.Claimed) {
	c := in.Input
	c.Records, c.Name, c.Effects = checkRecords(in.records, c.Field), nameOf(in.records), checkEffects(in.effects)
	c.WindowPerKey, c.WindowUnordered = killWindowPerKey, killWindowUnordered
	res, claimed := checks.Invariants(c)
	out := make([]InvariantResult, len(res))
	for i, r := range res {
		out[i] = InvariantResult(r)
	}
	return out, claimed
}

// checkRecords is the records as the checks read them; field, if set, is
// the payload field effects are matched by.
func checkRecords(refs []inputRef, field string) []checks.Record {
	out := make([]checks.Record, len(refs))
	for i, ref := range refs {
		out[i] = checks.Record{ID: ref.id, Key: ref.key, Items: ref.items}
		if field != "" {
			out[i].Field, out[i].HasField = payloadField(ref.payload, field)
		}
	}
	return out
}

// nameOf names refs[i] for the checks.
func nameOf(refs []inputRef) func(i int) string { return func(i int) string { return refs[i].name() } }

// checkEffects is the effects as the checks read them.
func checkEffects(effects []Effect) []checks.Effect {
	out := make([]checks.Effect, len(effects))
	for i, e := range effects {
		out[i] = checks.Effect{Record: e.Record, ID: e.ID, Request: e.Request}
	}
	return out
}

// notEvaluated marks r not evaluated, unless it is already violated (a
// record without a fate is lost whatever the effects say).
func (r InvariantResult) notEvaluated(why string) InvariantResult {
	return InvariantResult(checks.Result(r).NotEvaluated(why))
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
