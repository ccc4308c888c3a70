package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultInFlight is WithInFlight's default: it bounds the store requests
// in flight at once (claims, completes, releases and renewals together)
// for a batch whose claims are taken ahead (ClaimBatch; package
// handlers' WithIdempotency claims every new key of a batch at once), and
// the claims held for records that have not started. The HTTP client of the store's SDK must allow that many
// connections to the store's host, or the requests queue for a
// connection: the AWS SDK for Go v2 opens any number (MaxConnsPerHost 0)
// but keeps only 10 idle per host (MaxIdleConnsPerHost), so set
// MaxIdleConnsPerHost to DefaultInFlight on the client's transport to
// reuse them across batches.
const DefaultInFlight = 128

// MaxInFlight is the most WithInFlight allows.
const MaxInFlight = 1024

// DefaultOrderedDepth is how many of an ordered lane's records (a message
// group, a shard, a partition, in a batch claimed ahead: Batch.Ordered)
// may wait, completed, for their completion to be stored while the
// lane's next record runs (WithOrderedDepth): a record's function starts
// only while at most d of its lane's records wait. It bounds what a
// process killed mid-lane leaves to run again: the running record and up
// to d before it, with their effects done and nothing stored, which run
// again on the retry, in their order.
//
// On a lane that keeps a checkpoint (LaneStore) the d records go in one
// write of the checkpoint, the next record running beside it, so a lane
// of instant effects writes once per d records (d = 8: 0.15 writes a
// record with the lane's claim, on a batch of 40); a lane of slower
// effects writes sooner, once its oldest waiting record has waited a
// store round trip. With a claim per record the completes are written in
// the lane's order: the first at once, and every one that comes while a
// write is in flight goes in the next write, one request on a
// GroupCompleter (all-or-nothing), so the completions stored are always
// a prefix of the lane (a complete in a group costs two write units on
// DynamoDB, a transaction item). The default, 8, weighs the repeats a
// kill can cause (9 records a lane) against the writes; WithOrderedDepth(32)
// writes less for effects that a repeat does not harm,
// WithOrderedDepth(0) stores each record's completion before the next
// record's function starts. Only a write that fails for good (the store
// refusing it past its retries) lets a record's repeat come after the
// effects of later records whose completion was stored.
const DefaultOrderedDepth = 8

// ErrLaneStopped reports a record of an ordered lane that did not run
// because an earlier record of its lane ran but its completion could not
// be stored: the earlier record is reported, so this one is delivered
// again after it. It is not the record's own failure (dead letters do not
// count it as an attempt).
var ErrLaneStopped = errors.New("idempotency: an earlier record of this ordered lane ran but its completion was not stored; this record did not run")

// Batch runs the records of one batch at most once per key, as Do runs
// one record, with the claims of the batch's keys taken ahead, all at once
// (ClaimBatch), so that the claim round trips of a whole batch overlap
// instead of costing one per record. It is what package handlers'
// WithIdempotency runs, for a caller that writes its own loop over a
// batch. Each record runs with Do or DoLane when its turn comes, under the
// claim taken for it; its complete (or release) is sent as its function
// returns, without waiting for it, and Finish waits for them all. A
// record's outcome is only final when Finish has returned: Finish reports
// the keys whose complete failed, whose records must then fail as Do
// would have failed them (their effects ran but their completions are not
// stored: report them, so they are delivered again).
//
// While a claim is held, for a record waiting for its turn or running,
// one keeper per batch renews it (Store.Extend) when less than two thirds
// of its lease is left, several at once; a claim lost meanwhile cancels
// its running function's context (cause ErrLeaseLost), as Do's renewal
// does, and a record whose claim was lost before it started claims its
// key again. Finish releases every claim whose record never started (its
// lane stopped at a failure, the deadline came): a crash instead leaves
// them to lapse within one lease, as any claim.
//
// The records of a key that names a lane (BatchKey.Lane, on a LaneStore)
// are not claimed one by one: their lane is claimed once and keeps a
// checkpoint (see the package doc).
//
// A Batch is for renewed leases (the default): with WithLease it claims
// nothing ahead and Do is the package's Do. Its Do and DoLane may be
// called from several goroutines at once (a record each); Ordered comes
// before any of them, and Finish once, after every record returned.
type Batch struct {
	store   Store
	cfg     config
	ordered bool            // records of a lane wait for its completes beyond depth (Ordered)
	depth   int             // completes unwritten per ordered lane
	ctx     context.Context // the batch's context: completes and renewals run under it
	sem     chan struct{}   // store requests in flight
	held    chan struct{}   // claims held for records that have not started

	mu      sync.Mutex
	entries map[string]*entry
	order   []*entry // in claim order, for the keeper and Finish
	failed  map[string]error
	lanes   map[string]*lane
	lanesCk []*ckLane          // the checkpointed lanes (lanes.go)
	byKey   map[string]*ckLane // a checkpointed record's key -> its lane

	calls    sync.WaitGroup // completes and releases in flight
	stop     chan struct{}
	stopOnce sync.Once
	keeper   sync.WaitGroup
}

// entry states.
const (
	queued  = iota // its claim is not issued yet
	issued         // its claim is in flight
	ready          // the claim's answer is in
	taken          // a record took the entry
	settled        // its claim is no longer held: completed, released or lost
)

// lane is what an ordered lane's records share: its completes not yet
// written, the group of them waiting for the write in flight, and the
// first one that failed.
type lane struct {
	unwritten int           // completes of the lane sent or waiting, not yet returned
	pending   []completion  // completes waiting for the write in flight, in lane order
	writing   bool          // a writer is writing the lane's groups
	err       error         // the first complete of the lane that failed
	wake      chan struct{} // closed (and replaced) when unwritten drops or err is set
}

// completion is one record's complete waiting in its lane's group.
type completion struct {
	e      *entry
	c      Claim
	result []byte
	lost   error
}

type entry struct {
	c        Claim
	state    int
	answered chan struct{} // closed when the claim's answer is in
	done     chan struct{} // closed when the entry is settled
	existing *Record       // the record that holds the key instead
	err      error         // the claim's store failure
	lost     bool          // a renewal found the claim lost
	cancel   context.CancelCauseFunc
	running  bool
	lane     *lane // its ordered lane, or nil
	lookup   bool  // read before it is claimed (BatchKey.Lookup)
}

// BatchKey is a key that ClaimBatch claims ahead: a record of the batch.
type BatchKey struct {
	// Key is the record's idempotency key, as Do takes it. An empty key
	// is not claimed ahead, and a key given twice is claimed once: its
	// second record waits for the first's outcome (see Batch.Do).
	Key string
	// Payload, when HasPayload is set, is what the record hashes, as
	// WithPayload's payload: the claim stores its hash, and a key
	// completed with another payload fails with ErrPayloadMismatch.
	Payload    []byte
	HasPayload bool
	// Lookup reads the key (one batch read with the batch's other
	// lookups, on a store that is a Getter) before claiming it, for a
	// record that was probably completed before: a redelivery. A first
	// delivery is claimed at once, its duplicate answered by the refused
	// claim.
	Lookup bool
	// Lane and Pos, when both are set and the store is a LaneStore, put
	// the record in a checkpointed lane: Lane is the lane's key, Pos the
	// record's position in it (Position). Order is its ordering key, the
	// lane DoLane is given for it (the records of one order run one at a
	// time, in order; "" for the whole batch). A lane's records must be
	// run in their order, each under the lane's claim: a record at or
	// below the lane's checkpoint is a duplicate. A checkpoint keeps
	// neither a payload's hash nor a result (SetResult): give a key with a
	// payload, or whose duplicate needs the stored result, no lane.
	Lane, Pos, Order string
}

// ClaimBatch starts claiming keys ahead and returns at once: at most
// WithInFlight's number of requests in flight, and of claims held for
// records that have not started, in the order given. Each record then
// runs with the batch's Do or DoLane, which waits for its claim's answer;
// a record whose key was not given runs with the package's Do. A key to
// look up first (BatchKey.Lookup) is read with the others in one Getter
// request, sent with the first claims, and claimed only if it is not
// completed; the keys of a lane (BatchKey.Lane) claim their lane once.
//
// opts are Do's, for every record (a record's own WithPayload goes in its
// BatchKey, and to DoLane). A key the cache (WithCache) holds is not
// claimed: its record is a duplicate. Without WithCache the batch keeps
// what it completes, or finds completed, in a cache of its own for its
// life, so a record whose key another record of the batch completed needs
// no store request. ctx bounds the whole batch: the claims, the renewals
// and the completes Finish waits for run under it.
//
// ClaimBatch fails only for options Do would refuse. Call Finish once
// every record returned: it releases the claims not used.
func ClaimBatch(ctx context.Context, store Store, keys []BatchKey, opts ...Option) (*Batch, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.cache == nil {
		cfg.cache = newBatchCache(len(keys))
	}
	b := &Batch{
		store: store, cfg: cfg, ctx: ctx, depth: cfg.depth,
		sem: make(chan struct{}, cfg.inFlight), held: make(chan struct{}, cfg.inFlight),
		entries: make(map[string]*entry, len(keys)), stop: make(chan struct{}),
	}
	if cfg.fixed {
		return b, nil // a fixed lease is never renewed: a claim waiting for its turn could lapse
	}
	keys = b.newLanes(keys)
	now := cfg.now()
	_, getter := store.(Getter)
	for _, k := range keys {
		if k.Key == "" || b.entries[k.Key] != nil {
			continue
		}
		if cfg.cache != nil {
			if _, ok := cfg.cache.get(k.Key, now); ok {
				continue
			}
		}
		e := &entry{c: Claim{Key: k.Key}, answered: make(chan struct{}), done: make(chan struct{}), lookup: k.Lookup && getter}
		if k.HasPayload {
			e.c.PayloadHash = PayloadHash(k.Payload)
		}
		b.entries[k.Key] = e
		b.order = append(b.order, e)
	}
	if len(b.order) == 0 && len(b.lanesCk) == 0 {
		return b, nil
	}
	b.keeper.Add(2)
	go func() { defer b.keeper.Done(); b.issue() }()
	go func() { defer b.keeper.Done(); b.keep() }()
	return b, nil
}

// issue sends the claims in order, holding at most WithInFlight's number
// of claims of records that have not started; the keys to look up first
// are read meanwhile, in one request, and those not completed are claimed
// after the others.
func (b *Batch) issue() {
	b.claimLanes()
	var wg sync.WaitGroup
	defer wg.Wait()
	var look []*entry
	for _, e := range b.order {
		if e.lookup {
			look = append(look, e)
		}
	}
	later := make(chan []*entry, 1)
	if len(look) > 0 {
		b.sem <- struct{}{}
		go func() {
			defer func() { <-b.sem }()
			later <- b.lookAhead(look)
		}()
	} else {
		later <- nil
	}
	first := b.claimAll(&wg, b.order, true)
	rest := <-later // bounded by the batch's context, like every request
	if first && len(rest) > 0 {
		b.claimAll(&wg, rest, false)
	}
}

// lookAhead reads look's keys in one Getter request: each completed,
// unexpired record settles its entry as a duplicate (as its refused claim
// would), and the entries left are returned, to be claimed. A failed read
// leaves them all to their claims.
func (b *Batch) lookAhead(look []*entry) []*entry {
	keys := make([]string, len(look))
	for i, e := range look {
		keys[i] = e.c.Key
	}
	recs, _ := b.store.(Getter).Get(b.ctx, keys) // soft: a miss is found by the claim
	now := b.cfg.now()
	var rest []*entry
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range look {
		r := recs[e.c.Key]
		if r == nil || r.Status != StatusCompleted || r.Expires.Unix() < now.Unix() || e.state != queued {
			rest = append(rest, e)
			continue
		}
		if b.cfg.cache != nil {
			b.cfg.cache.put(r)
		}
		e.existing, e.state = r, settled
		close(e.answered)
		close(e.done)
	}
	return rest
}

// claimAll claims the queued entries of es (skip: those looked up first
// are left for later), in order; it returns false when the batch stopped
// before it was through.
func (b *Batch) claimAll(wg *sync.WaitGroup, es []*entry, skip bool) bool {
	for _, e := range es {
		if skip && e.lookup {
			continue
		}
		select {
		case b.held <- struct{}{}:
		case <-b.stop:
			return false
		case <-b.ctx.Done():
			return false
		}
		b.mu.Lock()
		if e.state != queued { // its record came first and claims for itself
			b.mu.Unlock()
			<-b.held
			continue
		}
		e.state = issued
		b.mu.Unlock()
		b.sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-b.sem }()
			now := b.cfg.now()
			c := e.c
			c.Owner, c.Now = b.cfg.newOwner(), now
			c.LeaseUntil, c.Expires = b.cfg.leaseUntil(b.ctx, now), now.Add(b.cfg.ttl)
			existing, err := b.cfg.claim(b.ctx, b.store, c)
			b.mu.Lock()
			e.c, e.existing, e.err = c, existing, err
			if existing != nil || err != nil {
				e.state = settled // nothing held
				close(e.done)
				<-b.held
			} else if e.state == issued {
				e.state = ready
			}
			close(e.answered)
			b.mu.Unlock()
		})
	}
	return true
}

// keep renews the held claims whose lease has less than two thirds left,
// every sixth of the lease, until Finish.
func (b *Batch) keep() {
	every := b.cfg.lease / 6
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		now := b.cfg.now()
		var due []*entry
		b.mu.Lock()
		b.renewLanes(now)
		for _, e := range b.order {
			if (e.state == ready || e.state == taken && e.running) && !e.lost && e.c.LeaseUntil.Sub(now) <= 2*b.cfg.lease/3 {
				due = append(due, e)
			}
		}
		b.mu.Unlock()
		var wg sync.WaitGroup
		for _, e := range due {
			until := b.cfg.leaseUntil(b.ctx, now)
			b.mu.Lock()
			key, owner, lease := e.c.Key, e.c.Owner, e.c.LeaseUntil
			b.mu.Unlock()
			if !until.After(lease) {
				continue // the lease reached the deadline
			}
			b.sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-b.sem }()
				err := b.cfg.retry(b.ctx, func() error { return b.store.Extend(b.ctx, key, owner, until) })
				b.mu.Lock()
				defer b.mu.Unlock()
				switch {
				case err == nil:
					if e.c.Owner == owner {
						e.c.LeaseUntil = until
					}
				case errors.Is(err, ErrLeaseLost) && e.c.Owner == owner:
					e.lost = true
					if e.cancel != nil {
						e.cancel(fmt.Errorf("idempotency: key %q: the claim was lost while its function ran (its lease ran out and another claimant took the key): %w", key, err))
					}
				}
			})
		}
		wg.Wait()
	}
}

// Do runs fn at most once for key, as the package's Do does, under the
// claim taken ahead for key when there is one; opts are added to the
// batch's. When fn succeeds, Do returns its result at once and the
// complete is sent in the background: the record's outcome is only final
// when Finish returns (see Finish). A second record with the same key
// waits for the first's outcome, then is a duplicate of it (or runs, when
// the first failed and gave the claim back).
func (b *Batch) Do(ctx context.Context, key string, fn func(context.Context) ([]byte, error), opts ...Option) ([]byte, error) {
	return b.DoLane(ctx, "", key, fn, opts...)
}

// DoLane is Do for a record of lane (an ordering key: a message group, a
// Kafka partition, a partition key; "" for a lane that is the whole
// batch). On an ordered Batch the records of one lane must come one at a
// time, in order: each waits, before its function runs, until at most the
// batch's depth (WithOrderedDepth) of its lane's completes are unwritten,
// and fails with ErrLaneStopped, without running, once a complete of its
// lane has failed. A record of a checkpointed lane (its BatchKey named
// one) is given its BatchKey.Order as lane and runs under its lane's
// claim; opts are not used for it (a checkpoint keeps no payload). A
// duplicate returns the stored result without calling fn, so a caller
// that must tell a duplicate from a run notes in fn that it ran.
func (b *Batch) DoLane(ctx context.Context, laneKey, key string, fn func(context.Context) ([]byte, error), opts ...Option) ([]byte, error) {
	if cl := b.byKey[key]; cl != nil {
		return b.doLane(ctx, cl, laneKey, key, fn)
	}
	var l *lane
	if b.ordered {
		l = b.laneOf(laneKey)
		if err := b.gate(ctx, l, key); err != nil {
			return nil, err
		}
	}
	all := append(b.optsOf(), opts...)
	b.mu.Lock()
	e := b.entries[key]
	if e == nil {
		b.mu.Unlock()
		return Do(ctx, b.store, key, fn, all...)
	}
	if e.lookup && e.state == queued {
		// Its read is in flight: wait for it, and for the claim that
		// follows when the key is not completed.
		b.mu.Unlock()
		select {
		case <-e.answered:
		case <-ctx.Done():
			return nil, &StoreError{Op: "get", Key: key, Retryable: true, Err: ctx.Err()}
		}
		b.mu.Lock()
	}
	switch e.state {
	case queued:
		e.state = taken // the claimer skips it: this record claims for itself
		close(e.answered)
		close(e.done)
		b.mu.Unlock()
		return Do(ctx, b.store, key, fn, all...)
	case issued, ready:
		e.state = taken
		b.mu.Unlock()
	default: // another record of the batch took it, or its claim (or read) found another holder
		if rec := e.existing; rec != nil && rec.Status == StatusCompleted && e.err == nil {
			b.mu.Unlock()
			return duplicate(key, b.hashOf(opts, e), b.legacyOf(opts), rec)
		}
		b.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, &InProgressError{Key: key, Owner: e.c.Owner, LeaseUntil: e.c.LeaseUntil}
		}
		return Do(ctx, b.store, key, fn, all...) // the cache has its completion
	}
	select {
	case <-e.answered:
	case <-ctx.Done():
		b.mu.Lock()
		if e.state == taken { // give it back, so Finish releases it
			e.state = issued
			select {
			case <-e.answered:
				e.state = ready
			default:
			}
		}
		b.mu.Unlock()
		return nil, &StoreError{Op: "claim", Key: key, Retryable: true, Err: ctx.Err()}
	}
	b.mu.Lock()
	if e.existing != nil || e.err != nil {
		b.mu.Unlock()
		switch {
		case e.err != nil:
			return nil, e.err // the store failed after its retries, as Do's claim
		case e.existing.Status == StatusCompleted:
			return duplicate(key, b.hashOf(opts, e), b.legacyOf(opts), e.existing)
		}
		return Do(ctx, b.store, key, fn, all...) // in progress elsewhere: wait as Do waits
	}
	<-b.held // it started: another claim may be taken ahead
	if e.lost {
		e.state = settled
		close(e.done)
		b.mu.Unlock()
		return Do(ctx, b.store, key, fn, all...) // its claim lapsed before its turn: claim again
	}
	if l != nil && l.err != nil { // a complete of the lane failed while the claim was coming
		b.mu.Unlock()
		b.settle(e, nil, false, nil)
		return nil, stopped(key, l.err)
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.cancel, e.running, e.lane = cancel, true, l
	b.mu.Unlock()

	slot := &resultSlot{}
	result, err := run(context.WithValue(fctx, resultKey{}, slot), fn, func() { b.settle(e, nil, false, nil) })
	b.mu.Lock()
	e.running, e.cancel = false, nil
	lost := e.lost
	b.mu.Unlock()
	var lostErr error
	if lost {
		lostErr = context.Cause(fctx)
	}
	if err != nil {
		b.settle(e, nil, false, nil)
		return nil, errors.Join(err, lostErr)
	}
	if result == nil {
		result = slot.b
	}
	b.settle(e, result, true, lostErr)
	return result, nil
}

// Ordered makes the batch's records ordered lanes (DoLane): a record's
// function starts only when at most the batch's depth
// (WithOrderedDepth, default DefaultOrderedDepth) of its lane's completes
// are still unwritten, so the completes overlap the next records' effects
// by a bounded depth, and those that come while one is being written are
// written together (see DefaultOrderedDepth); with depth 0 each record's completion is durable
// before the next record's effect starts, as with the package's Do. A
// complete that fails stops its lane: the lane's next record fails with
// ErrLaneStopped without running, and Finish reports the failed key, so
// the failed record is reported and delivered again with every later
// record of its lane (the ordered policies report from the first failure
// on); the later records that already ran completed, so the retry finds
// them duplicates. Call it before any Do.
func (b *Batch) Ordered() { b.ordered = true }

// laneOf returns the state of the ordered lane named key.
func (b *Batch) laneOf(key string) *lane {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lanes[key]
	if l == nil {
		if b.lanes == nil {
			b.lanes = map[string]*lane{}
		}
		l = &lane{wake: make(chan struct{})}
		b.lanes[key] = l
	}
	return l
}

// gate waits until at most the batch's depth of l's completes are
// unwritten, or fails once one of them failed.
func (b *Batch) gate(ctx context.Context, l *lane, key string) error {
	for {
		b.mu.Lock()
		err, n, wake := l.err, l.unwritten, l.wake
		b.mu.Unlock()
		switch {
		case err != nil:
			return stopped(key, err)
		case n <= b.depth:
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return &StoreError{Op: "complete", Key: key, Retryable: true,
				Err: fmt.Errorf("waiting for the completes of the earlier records of its lane: %w", ctx.Err())}
		}
	}
}

// stopped is the error of a record whose lane stopped at the failed
// complete err.
func stopped(key string, err error) error {
	return fmt.Errorf("idempotency: key %q: %w (%v)", key, ErrLaneStopped, err)
}

// hashOf is the payload hash of a record's own options, or its entry's.
func (b *Batch) hashOf(opts []Option, e *entry) string {
	cfg := b.cfg
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.hasHash {
		return PayloadHash(cfg.payload)
	}
	return e.c.PayloadHash
}

// legacyOf is the hash of a record's payload as earlier versions stored
// it (the bytes as they are), or "".
func (b *Batch) legacyOf(opts []Option) string {
	cfg := b.cfg
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.hasHash {
		return ""
	}
	return rawHash(cfg.payload)
}

func (b *Batch) optsOf() []Option {
	cfg := b.cfg
	return []Option{func(c *config) { *c = cfg }}
}

// settle sends e's complete (ok) or release in the background; Finish
// waits for it. A complete that fails is reported by Finish. The complete
// of a record of an ordered lane joins its lane's group (writeLane).
func (b *Batch) settle(e *entry, result []byte, ok bool, lost error) {
	b.mu.Lock()
	if e.state == settled {
		b.mu.Unlock()
		return
	}
	e.state = settled
	c, l := e.c, e.lane
	if ok && l != nil {
		l.unwritten++
		g := completion{e: e, c: c, result: result, lost: lost}
		if l.writing { // it goes in the next group, once the write in flight returned
			l.pending = append(l.pending, g)
			b.mu.Unlock()
			return
		}
		l.writing = true // no write in flight: this one is written at once, alone
		b.calls.Add(1)
		b.mu.Unlock()
		go b.writeLane(l, []completion{g})
		return
	}
	b.mu.Unlock()
	b.calls.Add(1)
	b.sem <- struct{}{}
	go func() {
		defer b.calls.Done()
		defer func() { <-b.sem }()
		defer close(e.done)
		if !ok {
			_ = b.cfg.release(b.ctx, b.store, c) // a failed release lapses within the lease; a failed record stops its lane itself
			return
		}
		expires := b.cfg.now().Add(b.cfg.ttl)
		err := b.cfg.retry(b.ctx, func() error { return b.store.Complete(b.ctx, c.Key, c.Owner, result, expires) })
		_ = b.completed(completion{e: e, c: c, result: result, lost: lost}, expires, err)
	}()
}

// writeLane writes group, the complete that found no write of l in
// flight, and then l's next completes, a group at a time, until none is
// waiting: every complete that came while a write was in flight goes in
// the next write, in the lane's order (one request on a GroupCompleter;
// one complete after another on other stores). So the completions stored
// are always a prefix of the lane, and what a kill leaves to run again is
// the lane's last records (at most the batch's depth and the one
// running), in order.
func (b *Batch) writeLane(l *lane, group []completion) {
	defer b.calls.Done()
	for {
		b.sem <- struct{}{}
		expires := b.cfg.now().Add(b.cfg.ttl)
		errs := b.writeGroup(group, expires)
		<-b.sem
		for i, g := range group {
			errs[i] = b.completed(g, expires, errs[i])
		}
		b.mu.Lock()
		l.unwritten -= len(group)
		for _, err := range errs {
			if err != nil && l.err == nil {
				l.err = err
			}
		}
		close(l.wake)
		l.wake = make(chan struct{})
		next := l.pending
		l.pending = nil
		l.writing = len(next) > 0
		b.mu.Unlock()
		for _, g := range group {
			close(g.e.done)
		}
		if len(next) == 0 {
			return
		}
		group = next
	}
}

// writeGroup writes the completes of group, in order, and returns each
// one's error: one CompleteAll when the store has it and the group has
// more than one, and otherwise, or when that fails (after its retries),
// one Complete after another, so that only the records whose own
// complete fails fail, as when every complete was written alone (a
// CompleteAll is all-or-nothing: one key whose owner lost it, or one
// result the store refuses, would fail the whole group).
func (b *Batch) writeGroup(group []completion, expires time.Time) []error {
	errs := make([]error, len(group))
	if gc, ok := b.store.(GroupCompleter); ok && len(group) > 1 {
		cs := make([]Completion, len(group))
		for i, g := range group {
			cs[i] = Completion{Key: g.c.Key, Owner: g.c.Owner, Result: g.result, Expires: expires}
		}
		if b.cfg.retry(b.ctx, func() error { return gc.CompleteAll(b.ctx, cs) }) == nil {
			return errs
		}
	}
	for i, g := range group {
		errs[i] = b.cfg.retry(b.ctx, func() error { return b.store.Complete(b.ctx, g.c.Key, g.c.Owner, g.result, expires) })
	}
	return errs
}

// completed records the outcome of g's complete, written with expires
// (err: the store's answer): its failure for Finish, which it returns, or
// its completion in the cache.
func (b *Batch) completed(g completion, expires time.Time, err error) error {
	if err != nil || g.lost != nil {
		err = fmt.Errorf("idempotency: key %q: fn succeeded but its result was not stored: %w", g.c.Key, errors.Join(err, g.lost))
		b.mu.Lock()
		if b.failed == nil {
			b.failed = map[string]error{}
		}
		b.failed[g.c.Key] = err
		b.mu.Unlock()
		return err
	}
	if b.cfg.cache != nil {
		b.cfg.cache.put(&Record{Key: g.c.Key, Status: StatusCompleted, Result: g.result, PayloadHash: g.c.PayloadHash, Expires: expires.Truncate(time.Second)})
	}
	return nil
}

// Finish stops the claims ahead, releases every claim whose record never
// started, writes the last checkpoint of every lane (handled says which
// records the batch answered as handled without their completing: a
// record quarantined, or answered without the function; the lane moves
// past those), waits for every complete and release in flight, and
// returns the keys whose complete (or checkpoint) failed, each with the
// error Do would have returned (their functions succeeded but their
// results are not stored: fail those records, so they are delivered
// again). handled may be nil: the batch answered no record that way. It
// must be called once, after every record returned, and also when no
// record ran.
func (b *Batch) Finish(handled func(key string) bool) map[string]error {
	b.stopOnce.Do(func() { close(b.stop) })
	b.keeper.Wait()
	lanesFailed := b.finishLanes(handled)
	b.mu.Lock()
	var unused []*entry
	for _, e := range b.order {
		if e.state == ready || e.state == issued {
			unused = append(unused, e)
		}
	}
	b.mu.Unlock()
	for _, e := range unused {
		<-e.answered // issued claims have answered: issue returned
		b.settle(e, nil, false, nil)
	}
	b.calls.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, err := range lanesFailed {
		if b.failed == nil {
			b.failed = map[string]error{}
		}
		b.failed[k] = err
	}
	return b.failed
}
