package idempotency

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A batch's checkpointed lanes (BatchKey.Lane, on a LaneStore): instead of a
// claim and a complete per record, each lane of the batch is claimed once
// (its lease, and its checkpoint in the same answer), a record at or
// below the checkpoint is a duplicate, and the checkpoint is written once
// per group of the records that complete, the last write releasing the
// lease.
//
// When a lane writes (writeDue, a pure function): when depth records of
// it wait for a write (so the next record, which starts only while at
// most depth wait, runs beside it), when the oldest of them has waited as
// long as the store takes to answer (so a lane of slow effects writes as
// it goes, and never sits on a completion for longer than a round trip),
// and when its last record of the batch completed (that write releases
// the lease). A kill can so leave at most depth records and the one
// running with their effects done and the checkpoint not written: they
// run again, in order, when the lane is delivered again.

// ckLane is one checkpointed lane of a batch.
type ckLane struct {
	id    string
	recs  []*ckRec // by position
	owner string

	answered chan struct{} // closed once the claim settled (taken, not needed, or failed)
	held     bool          // the lease is this batch's: it must be released
	base     laneState     // the lane as claimed
	err      error         // the claim failed, or the lane is held elsewhere

	lease     time.Time // the lease as last written
	unwritten int       // records done or passed whose status no write has stored yet
	oldest    time.Time // when the oldest of them changed
	writing   bool
	released  bool          // the last write released the lease
	stopped   error         // a write failed (lease lost, or the store): the lane stops
	lost      bool          // the lease was lost (another owner took the lane)
	wake      chan struct{} // closed (and replaced) when a write returns
	rtt       time.Duration // how long the store takes to answer
	timer     *time.Timer
	lastWrite chan struct{} // closed when the write in flight returns
}

// ckRec is one record of a checkpointed lane.
type ckRec struct {
	key, pos, order string
	status          laneStatus
	dup             bool // covered when the batch began: nothing to write
	own             bool // a duplicate by its own key (readOwn), not by the lane
	written         bool // its status is stored
	arrived         bool // DoLane saw it
	failed          bool // its function failed
	running         bool
	busy            error // its own key is claimed and live elsewhere (readOwn)
	cancel          context.CancelCauseFunc
	result          []byte
}

// writeDue decides whether a lane writes its checkpoint now: never while
// a write is in flight or with nothing to write; else when depth records
// wait for a write (at least one), when the oldest has waited rtt, or
// when the lane's last record is done (final: that write releases).
func writeDue(writing bool, unwritten, depth int, waited, rtt time.Duration, final bool) bool {
	switch {
	case writing || unwritten == 0:
		return false
	case final, unwritten >= max(depth, 1), waited >= rtt:
		return true
	}
	return false
}

// laneGate decides whether a lane's next record may start: not once the
// lane stopped, and only while at most depth records wait for a write.
func laneGate(unwritten, depth int, stopped bool) (start, wait bool) {
	switch {
	case stopped:
		return false, false
	case unwritten <= depth:
		return true, false
	}
	return false, true
}

// newLanes groups the keys of keys that name a lane (on a LaneStore)
// into lanes, by position, and returns them and the rest.
func (b *Batch) newLanes(keys []BatchKey) []BatchKey {
	if _, ok := b.store.(LaneStore); !ok {
		return keys
	}
	var rest []BatchKey
	byID := map[string]*ckLane{}
	now := b.cfg.now()
	for _, k := range keys {
		if k.Lane == "" || k.Pos == "" || k.Key == "" || b.byKey[k.Key] != nil || b.entries[k.Key] != nil {
			if k.Lane == "" || k.Pos == "" {
				rest = append(rest, k)
			}
			continue
		}
		l := byID[k.Lane]
		if l == nil {
			l = &ckLane{id: k.Lane, answered: make(chan struct{}), wake: make(chan struct{})}
			byID[k.Lane] = l
			b.lanesCk = append(b.lanesCk, l)
		}
		r := &ckRec{key: k.Key, pos: k.Pos, order: k.Order}
		if b.cfg.cache != nil {
			if _, ok := b.cfg.cache.get(k.Key, now); ok {
				r.dup, r.written, r.status = true, true, done
			}
		}
		l.recs = append(l.recs, r)
		if b.byKey == nil {
			b.byKey = map[string]*ckLane{}
		}
		b.byKey[k.Key] = l
	}
	for _, l := range b.lanesCk {
		slices.SortStableFunc(l.recs, func(a, b *ckRec) int {
			switch {
			case a.pos < b.pos:
				return -1
			case a.pos > b.pos:
				return 1
			}
			return 0
		})
	}
	return rest
}

// claimLanes claims every lane, at most WithInFlight at once.
func (b *Batch) claimLanes() {
	for _, l := range b.lanesCk {
		b.sem <- struct{}{}
		b.calls.Add(1)
		go func() {
			defer b.calls.Done()
			defer func() { <-b.sem }()
			b.claimLane(l)
		}()
	}
}

// claimLane takes l's lease, when one of its records is not yet covered:
// a claim that finds every record at or below the lane's position is
// refused and answers the lane; one that finds the lease held elsewhere
// waits, as Do waits for a key in progress, for it to be released or
// to lapse. A lane never written (or expired) is read from the records'
// own keys too: records a version that claimed per record completed are
// duplicates.
func (b *Batch) claimLane(l *ckLane) {
	defer close(l.answered)
	ctx := b.ctx
	l.owner = b.cfg.newOwner()
	upto := ""
	for _, r := range l.recs {
		if !r.dup {
			upto = r.pos
		}
	}
	if upto == "" {
		return // the warm cache knows every record
	}
	ls := b.store.(LaneStore)
	budget := b.cfg.waitFor()
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl))
	}
	var waited time.Duration
	for n := 1; ; n++ {
		now := b.cfg.now()
		c := LaneClaim{Lane: l.id, Owner: l.owner, Upto: upto, Now: now, LeaseUntil: b.cfg.leaseUntil(ctx, now), Expires: now.Add(b.cfg.ttl)}
		start := time.Now()
		var rec *LaneRecord
		err := b.cfg.retry(ctx, func() (err error) { rec, err = ls.ClaimLane(ctx, c); return err })
		b.mu.Lock()
		l.rtt = max(time.Since(start), time.Millisecond)
		b.mu.Unlock()
		if err != nil {
			l.err = err
			return
		}
		st, err := decodeLaneState(rec.State)
		if err != nil {
			l.err = &StoreError{Op: "claim lane", Key: l.id, Err: err}
			return
		}
		st = st.live(now)
		taken := rec.Owner == l.owner
		b.mu.Lock()
		all := true
		for _, r := range l.recs {
			if !r.dup && st.covered(r.pos) {
				r.dup, r.written, r.status = true, true, done
			}
			all = all && r.dup
		}
		l.base = st
		if taken {
			l.held, l.lease = true, c.LeaseUntil
		}
		b.mu.Unlock()
		switch {
		case all && taken:
			b.release(l) // nothing to run after all (a cache, extras)
			return
		case all:
			return // a replay: every record completed, and no lease
		case taken:
			if !st.Own {
				b.readOwn(l)
			}
			return
		}
		// Refused with records to run: the lease is live elsewhere, or
		// the position covers the batch but not its holes.
		if rec.LeaseUntil.IsZero() || rec.LeaseUntil.UnixMilli() < now.UnixMilli() {
			upto = "" // holes to run: take the free lease whatever the position
			continue
		}
		d := b.pollDelay(n, rec.LeaseUntil, budget-waited)
		if d <= 0 || b.cfg.sleep(ctx, d) != nil {
			l.err = &InProgressError{Key: l.id, Owner: rec.Owner, LeaseUntil: rec.LeaseUntil, Waited: waited}
			return
		}
		waited += d
	}
}

// pollDelay is how long a wait for a held lease sleeps before its nth
// look: Do's back-off, or until the lease ends, within what is left.
func (b *Batch) pollDelay(n int, leaseUntil time.Time, left time.Duration) time.Duration {
	poll := b.cfg.poll
	if poll == nil {
		poll = defaultPoll
	}
	d := poll.Delay(n)
	if lapse := leaseUntil.Add(time.Millisecond).Sub(b.cfg.now()); lapse > 0 && lapse < d {
		d = lapse
	}
	return min(d, left)
}

// readOwn reads the records of a lane that its checkpoint does not cover
// from their own keys (Getter), until a read finds none (laneState.Own):
// those completed are duplicates, and those claimed and live elsewhere
// are in progress there (a version that claimed per record completed or
// still runs them). A lane that never had records claimed per record
// pays one read, in its first batch.
func (b *Batch) readOwn(l *ckLane) {
	g, ok := b.store.(Getter)
	if !ok {
		return
	}
	var keys []string
	for _, r := range l.recs {
		if !r.dup {
			keys = append(keys, r.key)
		}
	}
	recs, err := g.Get(b.ctx, keys) // soft: a record not read runs, as on a fresh lane
	now := b.cfg.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && len(recs) == 0 {
		l.base.Own = true
	}
	for _, r := range l.recs {
		rec := recs[r.key]
		switch {
		case r.dup || rec == nil || Claimable(*rec, now):
		case rec.Status == StatusCompleted:
			r.dup, r.own, r.written, r.status = true, true, true, done
		default:
			r.busy = &InProgressError{Key: r.key, Owner: rec.Owner, LeaseUntil: rec.LeaseUntil}
		}
	}
}

// doLane runs fn for the record of key in its lane l (order is its
// ordering key: the records of one order come one at a time, in order).
func (b *Batch) doLane(ctx context.Context, l *ckLane, order, key string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	select {
	case <-l.answered:
	case <-ctx.Done():
		return nil, &StoreError{Op: "claim lane", Key: l.id, Retryable: true, Err: ctx.Err()}
	}
	b.mu.Lock()
	var r *ckRec
	for _, x := range l.recs {
		if x.key == key {
			r = x
			continue
		}
		// A record before it of its order that did not complete: the
		// policy went on past it (it was quarantined, or answered without
		// the function), so the lane moves past it too.
		if r == nil && x.order == order && x.status == open {
			b.pass(l, x)
		}
	}
	r.arrived, r.order = true, order
	if r.dup {
		b.mu.Unlock()
		return nil, nil
	}
	if l.err != nil || r.busy != nil {
		err := l.err
		if err == nil {
			err = r.busy
		}
		b.mu.Unlock()
		return nil, err
	}
	for {
		start, wait := laneGate(l.unwritten, b.depth, l.stopped != nil)
		if start {
			break
		}
		if !wait {
			err := l.stopped
			b.mu.Unlock()
			return nil, stopped(key, err)
		}
		b.writeIfDue(l, false)
		wake := l.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, &StoreError{Op: "save lane", Key: key, Retryable: true,
				Err: fmt.Errorf("waiting for the checkpoint of the earlier records of its lane: %w", ctx.Err())}
		}
		b.mu.Lock()
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.running, r.cancel = true, cancel
	b.mu.Unlock()

	slot := &resultSlot{}
	result, err := run(context.WithValue(fctx, resultKey{}, slot), fn, func() { b.ranLane(l, r, nil, false) })
	if err != nil {
		b.ranLane(l, r, nil, false)
		if l.lostNow(b) {
			err = errors.Join(err, context.Cause(fctx))
		}
		return nil, err
	}
	if result == nil {
		result = slot.b
	}
	b.ranLane(l, r, result, true)
	return result, nil
}

// Covered returns the lane and position of the record of key when DoLane
// answered it as a duplicate by its lane's checkpoint (or by the warm
// cache, which holds what the lane's writes stored): what shows it is a
// duplicate is then the lane's item, which holds that position as
// completed, not an item of the record's own key. ok is false for any
// other record, a duplicate by its own key included (what a version that
// claimed per record completed).
func (b *Batch) Covered(key string) (lane, pos string, ok bool) {
	l := b.byKey[key]
	if l == nil {
		return "", "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range l.recs {
		if r.key == key {
			if r.dup && !r.own {
				return l.id, r.pos, true
			}
			break
		}
	}
	return "", "", false
}

// lostNow reports whether l's lane's lease was lost.
func (l *ckLane) lostNow(b *Batch) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return l.lost
}

// ranLane records the end of r's function: done (ok) or failed.
func (b *Batch) ranLane(l *ckLane, r *ckRec, result []byte, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !r.running {
		return // a panic's release ran first
	}
	r.running, r.cancel = false, nil
	if !ok {
		r.failed = true
		return
	}
	r.status, r.result = done, result
	b.changed(l)
	b.writeIfDue(l, settledAll(l))
}

// settledAll reports whether no record of l is open: nothing about the
// lane can change before the batch ends, so its next write is its last.
// Under b.mu.
func settledAll(l *ckLane) bool {
	for _, x := range l.recs {
		if x.status == open {
			return false
		}
	}
	return true
}

// pass moves the lane past r, which did not complete. Under b.mu.
func (b *Batch) pass(l *ckLane, r *ckRec) {
	r.status = passed
	b.changed(l)
}

// changed counts a record whose status changed. Under b.mu.
func (b *Batch) changed(l *ckLane) {
	if l.unwritten == 0 {
		l.oldest = time.Now()
	}
	l.unwritten++
}

// writeIfDue starts a write of l's checkpoint when writeDue says so, or
// sets a timer for when its oldest record will have waited a round
// trip. Under b.mu.
func (b *Batch) writeIfDue(l *ckLane, final bool) {
	if !l.held || l.released || l.stopped != nil {
		return
	}
	waited := time.Since(l.oldest)
	if !writeDue(l.writing, l.unwritten, b.depth, waited, l.rtt, final) {
		if !l.writing && l.unwritten > 0 && l.timer == nil {
			l.timer = time.AfterFunc(l.rtt-waited, func() {
				b.mu.Lock()
				defer b.mu.Unlock()
				l.timer = nil
				b.writeIfDue(l, false)
			})
		}
		return
	}
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	b.startWrite(l, final)
}

// startWrite sends l's checkpoint as its records stand now, with the
// lease moved on (or released, final). Under b.mu.
func (b *Batch) startWrite(l *ckLane, final bool) {
	l.writing = true
	l.lastWrite = make(chan struct{})
	var snap []laneRecord
	var in []*ckRec
	for _, r := range l.recs {
		snap = append(snap, laneRecord{pos: r.pos, status: r.status})
		if !r.written && r.status != open {
			in = append(in, r)
		}
	}
	now := b.cfg.now()
	st := advance(l.base, snap, now, b.cfg.ttl)
	sv := LaneSave{Lane: l.id, Owner: l.owner, Position: st.C, State: encodeLaneState(st), Expires: now.Add(b.cfg.ttl)}
	if len(in) == 0 && !final {
		sv.State = nil // a renewal: the lease moves, the checkpoint stands
	}
	if !final {
		sv.LeaseUntil = b.cfg.leaseUntil(b.ctx, now)
	}
	b.calls.Add(1)
	go func() {
		defer b.calls.Done()
		b.sem <- struct{}{}
		start := time.Now()
		err := b.cfg.retry(b.ctx, func() error { return b.store.(LaneStore).SaveLane(b.ctx, sv) })
		took := time.Since(start)
		<-b.sem
		b.wroteLane(l, in, sv, err, took)
	}()
}

// wroteLane records the answer to a write of l's checkpoint that stored
// the records in.
func (b *Batch) wroteLane(l *ckLane, in []*ckRec, sv LaneSave, err error, took time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l.writing = false
	close(l.lastWrite)
	close(l.wake)
	l.wake = make(chan struct{})
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			l.lost = true
			err = fmt.Errorf("idempotency: lane %q: its lease was lost while its records ran (it ran out and another invocation took the lane): %w", l.id, err)
			for _, r := range l.recs {
				if r.cancel != nil {
					r.cancel(err)
				}
			}
		}
		if l.stopped == nil {
			l.stopped = err
		}
		return
	}
	l.rtt = max((3*l.rtt+took)/4, time.Millisecond)
	l.lease = sv.LeaseUntil
	l.released = sv.LeaseUntil.IsZero()
	for _, r := range in {
		r.written = true
		l.unwritten--
		if r.status == done && b.cfg.cache != nil {
			b.cfg.cache.put(&Record{Key: r.key, Status: StatusCompleted, Result: r.result, Expires: sv.Expires.Truncate(time.Second)})
		}
	}
	if l.unwritten > 0 {
		l.oldest = time.Now() // a fair start: those left changed during the write
		b.writeIfDue(l, settledAll(l))
	}
}

// release gives back the lease of a lane that had nothing to run.
func (b *Batch) release(l *ckLane) {
	now := b.cfg.now()
	sv := LaneSave{Lane: l.id, Owner: l.owner, Expires: now.Add(b.cfg.ttl)}
	if b.cfg.retry(b.ctx, func() error { return b.store.(LaneStore).SaveLane(b.ctx, sv) }) == nil {
		b.mu.Lock()
		l.released = true
		b.mu.Unlock()
	}
}

// renewLanes moves on the leases of the lanes whose lease has less than
// two thirds left and no write in flight. Under b.mu.
func (b *Batch) renewLanes(now time.Time) {
	for _, l := range b.lanesCk {
		if l.held && !l.released && l.stopped == nil && !l.writing && l.lease.Sub(now) <= 2*b.cfg.lease/3 {
			if until := b.cfg.leaseUntil(b.ctx, now); until.After(l.lease) {
				b.startWrite(l, false)
			}
		}
	}
}

// finishLanes settles every lane at the end of the batch: a record that
// did not complete but that the batch answered as handled (handled: it
// was quarantined, or answered without the function) is passed; the last
// write stores the rest and releases the lease. It returns the keys of
// the records that completed but whose completion is not stored, with
// the error their record fails with.
func (b *Batch) finishLanes(handled func(key string) bool) map[string]error {
	for _, l := range b.lanesCk {
		<-l.answered
	}
	// Let the writes in flight land, then write what is left, at once
	// for every lane.
	b.awaitLaneWrites()
	b.mu.Lock()
	for _, l := range b.lanesCk {
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
		if !l.held || l.released || l.stopped != nil {
			continue
		}
		for _, r := range l.recs {
			if r.status == open && handled != nil && handled(r.key) {
				b.pass(l, r)
			}
		}
		b.startWrite(l, true)
	}
	b.mu.Unlock()
	b.awaitLaneWrites()
	b.mu.Lock()
	defer b.mu.Unlock()
	var failed map[string]error
	for _, l := range b.lanesCk {
		for _, r := range l.recs {
			if r.status != done || r.written || r.dup {
				continue
			}
			if failed == nil {
				failed = map[string]error{}
			}
			cause := l.stopped
			if cause == nil {
				cause = errors.New("the lane's last write was not sent")
			}
			failed[r.key] = fmt.Errorf("idempotency: key %q: fn succeeded but the checkpoint of its lane %q was not stored: %w", r.key, l.id, cause)
		}
	}
	return failed
}

// awaitLaneWrites returns once no lane of the batch has a checkpoint
// write in flight.
func (b *Batch) awaitLaneWrites() {
	for {
		b.mu.Lock()
		var wait chan struct{}
		for _, l := range b.lanesCk {
			if l.writing {
				wait = l.lastWrite
				break
			}
		}
		b.mu.Unlock()
		if wait == nil {
			return
		}
		<-wait
	}
}
