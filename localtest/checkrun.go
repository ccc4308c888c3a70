package localtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/checks"
)

// checkRun settles the fate of every record of the run (runRecords: a KPL
// user record is one) from the engine's fates, what the function
// quarantined and what its handlers skipped; counts them; and runs the
// invariant checks and the fate check.
func (r *runner) checkRun(ctx context.Context) {
	engineRecs := r.records()
	recs := runRecords(engineRecs)
	fates, aggregates := runFates(engineRecs, r.fates)
	unknown := r.readQuarantine(ctx, fates)

	in := effectsInput{records: recs, Input: checks.Input{Fates: fates, Have: r.opts.Effects != nil,
		Field: r.opts.EffectsKey, Unordered: r.s.source == sevents.SourceSQS, Once: r.opts.ExactlyOnce,
		Killed: map[string]bool{}, KillRepeatsOK: r.opts.AllowKillRepeats, Aggregates: aggregates}}
	for _, k := range r.report.Kills {
		// At the hand-over no record ran; before answering every record had
		// completed: only a kill mid-batch can cut a record's run short.
		if k.Point == invocation.KillMidBatch {
			in.Killed[k.RequestID] = true
		}
	}
	// An invocation that ran into its deadline was killed wherever it was,
	// as Lambda kills it: a slow batch under load is cut short as an
	// injected mid-batch kill is.
	for id := range r.timedOut {
		in.Killed[id] = true
	}
	if in.Have {
		in.effects, in.Err = r.opts.Effects()
		if in.Err == nil {
			countKillEffects(r.report.Kills, in.effects, r.opts.FunctionTimeout)
		}
	}
	if r.opts.Skips != nil {
		skips, err := r.opts.Skips()
		if err != nil {
			unknown = joinWhy(unknown, fmt.Sprintf("what the function's handlers answered without running it could not be read (%v): "+
				"a record it skipped cannot be told from one it lost", err))
		}
		claims := make([]checks.Claim, len(skips))
		for i, s := range skips {
			claims[i] = checks.Claim{Record: s.Record, Reason: s.Reason, Key: s.Key, Request: s.Request, Lane: s.Lane, Position: s.Position}
		}
		var took func(string) bool
		if in.Have && in.Err == nil {
			named := make(map[string]bool, len(in.effects))
			for _, e := range in.effects {
				id := e.Record
				if at := strings.LastIndexByte(id, '#'); at >= 0 {
					named[id[:at]] = true // an item's effect: its record ran
				}
				named[id] = true
			}
			took = func(id string) bool { return named[id] }
		}
		in.Claims, in.Stray = checks.MarkSkipped(fates, claims, took)
		in.Shows = func(i int, reason string) bool { return payloadShows(recs[i].payload, reason) }
		in.Position = func(i int) (string, bool) { return recs[i].position(r.s.source) }
		if r.opts.Idempotency != nil {
			in.Store = r.idempotencyStore(ctx)
		}
	}
	in.Unknown = unknown

	t := &r.report.Totals
	t.Records = len(fates)
	for _, ref := range engineRecs {
		if ref.users != nil {
			t.Aggregates++
			t.UserRecords += len(ref.users)
		}
	}
	for _, f := range fates {
		switch f {
		case FateProcessed:
			t.Processed++
		case FateSkipped:
			t.Skipped++
		case FateQuarantined:
			t.Quarantined++
		case FateOnFailure:
			t.OnFailure++
		case FateDeadLettered:
			t.DeadLettered++
		case FateLeft:
			t.Left++
		case FateFiltered:
			t.Filtered++
		}
	}
	r.report.Fates = fates
	for _, ref := range recs {
		if f := fates[ref.id]; f != FateProcessed && f != FateFiltered && f != FateSkipped {
			r.report.Unprocessed = append(r.report.Unprocessed, ref.fate(f))
		}
	}
	var claimed map[string]checks.Claimed
	r.report.Invariants, claimed = checkInvariants(in)
	for _, ref := range recs {
		if c, ok := claimed[ref.id]; ok {
			r.report.Skipped = append(r.report.Skipped, SkippedRecord{RecordFate: ref.fate(FateSkipped), Reason: c.Reason,
				IdempotencyKey: c.Key, IdempotencyLane: c.Lane, LanePosition: c.Position, Checked: c.Checked, Problem: c.Problem})
		}
	}
	r.checkFates(recs, fates, unknown)
}

// readCompletedBefore reads, before the first invocation, the keys the
// function's idempotency store holds completed (Options.Idempotency), and
// its lanes when it reads them (IdempotencyLanes).
func (r *runner) readCompletedBefore(ctx context.Context) {
	if r.opts.Idempotency == nil || r.opts.Skips == nil {
		return
	}
	r.completedBefore, r.completedBeforeErr = r.opts.Idempotency.CompletedKeys(ctx)
	if r.completedBeforeErr != nil {
		r.completedBefore = nil
	}
	if l, ok := r.opts.Idempotency.(IdempotencyLanes); ok {
		r.lanesBeforeAt = time.Now()
		r.lanesBefore, r.lanesBeforeErr = l.Lanes(ctx)
	}
}

// idempotencyStore is what the claims of skipped duplicates are checked
// against: the keys and lanes read before the run, and how to read them
// after it. A lane's expiry is the function's wall clock, so the lanes
// are judged at the wall-clock time they were read.
func (r *runner) idempotencyStore(ctx context.Context) *checks.Store {
	st := &checks.Store{Before: r.completedBefore, BeforeErr: r.completedBeforeErr,
		After: func() (map[string]bool, error) { return r.opts.Idempotency.CompletedKeys(ctx) }}
	if s, ok := r.opts.Idempotency.(IdempotencyStoredKeys); ok {
		st.Stored = s.StoredKey
	}
	l, ok := r.opts.Idempotency.(IdempotencyLanes)
	if !ok {
		return st
	}
	at := func(lanes map[string]*idempotency.LaneRecord, now time.Time) checks.Lanes {
		return func(lane, pos string) (bool, bool, error) {
			return idempotency.LaneCovers(lanes[lane], pos, now)
		}
	}
	if r.lanesBeforeErr == nil {
		st.LanesBefore = at(r.lanesBefore, r.lanesBeforeAt)
	}
	st.LanesBeforeErr = r.lanesBeforeErr
	st.LanesAfter = func() (checks.Lanes, error) {
		now := time.Now()
		lanes, err := l.Lanes(ctx)
		if err != nil {
			return nil, err
		}
		return at(lanes, now), nil
	}
	return st
}

// joinWhy joins two reasons, either of which may be "".
func joinWhy(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; and " + b
}
