package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/engine"
)

// EnvFunctionName names the environment variable whose value (the Lambda
// function's name) prefixes every idempotency key, so functions sharing a
// table never share keys.
const EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"

// WithIdempotencyKeyPrefix puts prefix, instead of the function's name,
// before every idempotency key the handler claims: keys become prefix,
// "#" and the record's key, as Powertools' key prefix (Python key_prefix,
// TypeScript keyPrefix, .NET KeyPrefix) replaces its function name. Keys
// that start with the function's name change when the function is
// renamed (or a stack replacement renames it), and every record still in
// the table's retention would then run again; a fixed prefix survives a
// rename, and lets two functions share keys on purpose. Set it to the
// function's current name to keep the keys a deployed table already
// holds. package fromenv reads it from SLUICE_IDEMPOTENCY_KEY_PREFIX,
// which the CDK constructs set (infra: the IdempotencyKeyPrefix prop). A
// tumbling window's final write is keyed under it too.
func WithIdempotencyKeyPrefix(prefix string) Option {
	return func(c *config) {
		if prefix == "" {
			c.errs = append(c.errs, errors.New(`WithIdempotencyKeyPrefix(""): give a prefix, or leave the option out to keep the function's name`))
			return
		}
		c.idemPrefix = &prefix
	}
}

// idemOptions are the idempotency options of a handler that need no
// type parameter.
type idemOptions struct {
	set       bool // an option that needs WithIdempotency was given
	perRecord bool // WithIdempotencyPerRecord
	pf        int  // WithParallelizationFactor (0: unset)
}

// EnvParallelizationFactor names the environment variable that tells a
// Kinesis handler its mapping's ParallelizationFactor, 1 to 10 (the CDK
// constructs set it on every stream consumer with an idempotency table,
// and sluice run from the mapping it runs); WithParallelizationFactor
// overrides it. Set to any valid value, 1 included, it declares the
// factor; unset (or empty), the factor is undeclared (see
// WithParallelizationFactor).
const EnvParallelizationFactor = "SLUICE_PARALLELIZATION_FACTOR"

// WithIdempotencyPerRecord claims and completes every record's key in
// the store, as Powertools does, instead of keeping a checkpoint per
// ordered lane (see WithIdempotency). It costs a claim and a complete per
// record; choose it when a record's stored result matters (WithOnDuplicate,
// which needs it, implies it) or when a completed record must become
// new again after idempotency.WithTTL. It needs WithIdempotency.
func WithIdempotencyPerRecord() Option {
	return func(c *config) { c.idem.perRecord, c.idem.set = true, true }
}

// WithParallelizationFactor declares a Kinesis handler's event source
// mapping's ParallelizationFactor (1 to 10; default
// SLUICE_PARALLELIZATION_FACTOR), which decides the lanes its idempotency
// checkpoints keep (see WithIdempotency):
//
//   - declared 1: a checkpoint per shard, the cheap mode: a lane claim
//     and a write per group of records of the shard's batch;
//   - declared above 1: Lambda runs several batches of one shard at once,
//     each holding the records of some partition keys, their positions
//     interleaved, so a shard's checkpoint would cover records another
//     batch has not reached yet: a checkpoint per shard and partition key;
//   - undeclared (neither the option nor the variable): a checkpoint per
//     shard and partition key too, which is right whatever the factor
//     (Lambda never runs one partition key's records of a shard at once or
//     out of order), at the cost of a claim and a write per partition key
//     of each batch; the handler logs once, at its first batch, that
//     declaring the factor would save that.
//
// Declare the mapping's own factor: a handler told 1 while Lambda runs
// more batches of a shard at once takes records of another batch for
// duplicates, and their effects never happen. The lanes' keys depend on
// the declaration, so a redrive or a replay that should see a function's
// checkpoints declares what the function declares.
func WithParallelizationFactor(n int) Option {
	return func(c *config) {
		if n < 1 || n > 10 {
			c.errs = append(c.errs, fmt.Errorf("WithParallelizationFactor(%d): want 1 to 10, as the mapping takes", n))
			return
		}
		c.idem.pf = n
	}
}

// parallelization is the mapping's ParallelizationFactor as the handler
// was told it: WithParallelizationFactor, else SLUICE_PARALLELIZATION_FACTOR,
// else 0 (undeclared).
func (c *config) parallelization() (int, error) {
	if c.idem.pf > 0 {
		return c.idem.pf, nil
	}
	v, ok := c.lookupEnv(EnvParallelizationFactor)
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10 {
		return 0, fmt.Errorf("%s=%q: want the mapping's ParallelizationFactor, 1 to 10", EnvParallelizationFactor, v)
	}
	return n, nil
}

// laneByKey decides whether a Kinesis record's checkpoint is kept per
// shard and partition key rather than per shard, from the factor as
// declared (0: undeclared): per shard only when 1 was declared, since a
// shard's checkpoint is right only when Lambda runs one batch of the shard
// at a time, and a shard and partition key's is right under any factor.
func laneByKey(pf int) bool { return pf != 1 }

// keyPrefix is what comes before "#" in every idempotency key: the
// prefix given (WithIdempotencyKeyPrefix), else the function's name
// (AWS_LAMBDA_FUNCTION_NAME), else "".
func (c *config) keyPrefix() string {
	if c.idemPrefix != nil {
		return *c.idemPrefix
	}
	name, _ := c.lookupEnv(EnvFunctionName)
	return name
}

// ErrNoIdempotencyKey reports a record whose idempotency key is empty. The
// record fails (it is never run without a claim) unless the handler has
// WithIdempotencyOptionalKey.
var ErrNoIdempotencyKey = errors.New("sluice: record has no idempotency key")

// WithIdempotency runs each record's function at most once per key, with
// idempotency.Do on store (opts configure it: TTL, lease, clock, store
// retries). The key is the function name (AWS_LAMBDA_FUNCTION_NAME, omitted
// when unset; WithIdempotencyKeyPrefix sets another), "#", and the
// record's stable id: the event id (Kinesis,
// DynamoDB Streams; for a KPL user record, ":" and its sub-sequence number
// after it), the message id (SQS), or "<topic>-<partition>-<offset>"
// (Kafka); WithIdempotencyKey takes it from the record instead. Per record:
//
//   - its effect already completed: the function does not run, the record
//     succeeds and is counted as a duplicate (RecordOutcome.Duplicate,
//     BatchReport.Duplicates, "duplicates" in the batch log line);
//   - claimed elsewhere and in progress: the record waits (within the
//     deadline margin and idempotency.WithWait, two leases by default) for
//     that claim to complete, and is then a duplicate, or to lapse (its
//     owner died: a crash leaves a claim that lapses within one lease,
//     idempotency.DefaultLease) or be released, and then runs. Only when
//     the wait runs out does it fail with idempotency.ErrInProgress; it is
//     reported, so Lambda retries it later, and dead letters do not count
//     it as an attempt of its own. Two records of one batch with the same
//     key (WithIdempotencyKey) wait for each other the same way: the
//     second is a duplicate of the first;
//   - the function fails: its claim is released, so a retry runs it at once;
//   - the store fails (after its own retries): the record fails;
//   - the claim was lost while the function ran (its renewals failed until
//     the lease ran out, or a fixed idempotency.WithLease ran out) and
//     another invocation took the key: the function's context is canceled
//     and the record fails with idempotency.ErrLeaseLost (its effect may
//     have run; fencing kept the new owner's record intact).
//
// While the function runs its claim's lease is renewed (a write every third
// of the lease, so only a record that runs longer than that pays one).
// In-process retries (WithRetry) run inside one claim.
//
// On an SQS standard queue every key of a batch is claimed at once (up to
// idempotency.WithInFlight requests in flight; let the store's HTTP
// client keep that many connections): a refused claim answers a
// duplicate, so a first delivery needs no read, while a redelivered
// message (ApproximateReceiveCount above 1) is read first, with the
// batch's other redeliveries in one request (a request per hundred keys on
// DynamoDB), and claimed only if it did not complete. A record's complete
// is sent as its function returns, and the batch answers once every
// complete landed (a record whose complete failed fails).
//
// On an ordered source (Kinesis and DynamoDB Streams, Kafka, SQS FIFO),
// with the record's own id as its key and a store that keeps lanes
// (idempotency.LaneStore), each lane keeps a checkpoint instead of a claim
// per record: a Kinesis shard and partition key (a shard when the
// mapping's factor is declared 1: WithParallelizationFactor), a DynamoDB
// item, a Kafka partition, a FIFO message group. The batch claims each lane once (its lease, and its
// checkpoint in the same answer); a record at or below the checkpoint is
// a duplicate (a replayed batch costs one refused claim a lane); the
// checkpoint is written once per group of completed records, overlapping
// the next records' functions (at most idempotency.DefaultOrderedDepth
// waiting, WithOrderedDepth sets it), the last write releasing the lease.
// A record the batch quarantined (WithDeadLetters) stays out of the
// checkpoint, so its redrive runs it. A business key (WithIdempotencyKey),
// a payload (WithIdempotencyPayload), a stored result (WithOnDuplicate) or
// WithIdempotencyPerRecord claim per record instead: the claims at once,
// the completes written in the lane's order, in groups (one request per
// group: idempotency.GroupCompleter), a complete that fails stopping its
// lane (its record and the later ones are reported; those that ran
// completed, and are duplicates on the retry). docs/handlers.md says what
// each costs. Pass idempotency.WithCache to keep completed keys in a warm
// container; WithIdempotencyPayload, WithOnDuplicate and
// idempotency.SetResult do the rest of what Powertools users know.
func WithIdempotency(store idempotency.Store, opts ...idempotency.Option) Option {
	return func(c *config) {
		if store == nil {
			c.errs = append(c.errs, errors.New("WithIdempotency: store is nil"))
		}
		c.idemStore = store
		c.idemOpts = opts
	}
}

// WithIdempotencyKey takes each record's idempotency key from the record
// (a business key, e.g. an order id) instead of its stable id; key takes the
// handler's record type, e.g. func(r handlers.SQSRecord[Order]) string, and
// a handler of another record type fails to build. The function name (or
// WithIdempotencyKeyPrefix's prefix) still prefixes the key. An empty key
// fails the record (ErrNoIdempotencyKey) unless WithIdempotencyOptionalKey
// is set. It needs WithIdempotency.
func WithIdempotencyKey[R any](key func(R) string) Option {
	return func(c *config) {
		if key == nil {
			c.errs = append(c.errs, errors.New("WithIdempotencyKey: key function is nil"))
			return
		}
		c.idemKey = key
	}
}

// WithIdempotencyOptionalKey runs a record whose idempotency key is empty
// without idempotency, instead of failing it.
func WithIdempotencyOptionalKey() Option {
	return func(c *config) { c.idemOptional = true }
}

// WithIdempotencyPayload stores a hash of the part of each record that
// defines "the same request" (e.g. func(r handlers.SQSRecord[Order]) []byte
// { return []byte(r.Body()) }) with its claim; a record whose key completed
// with another payload then fails with idempotency.ErrPayloadMismatch
// (permanently: no retry will make it match), instead of being skipped. It
// matters with WithIdempotencyKey, where two different records can share a
// business key. It needs WithIdempotency.
func WithIdempotencyPayload[R any](payload func(R) []byte) Option {
	return func(c *config) {
		if payload == nil {
			c.errs = append(c.errs, errors.New("WithIdempotencyPayload: payload function is nil"))
			return
		}
		c.idemPayload = payload
	}
}

// WithOnDuplicate calls f, instead of the function, for a record whose
// effect already completed, with the result the first run stored
// (idempotency.SetResult; nil if it stored none): to answer a request
// again, say, without repeating its effect. An error from f fails the
// record. It needs WithIdempotency.
func WithOnDuplicate[R any](f func(ctx context.Context, r R, result []byte) error) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, errors.New("WithOnDuplicate: function is nil"))
			return
		}
		c.idemOnDup = f
	}
}

// idemLayer runs each record's chain at most once per key. Before the
// batch runs, its hook hands the batch's keys (and, on an ordered source,
// each record's lane and position) to the claims taken ahead
// (idempotency.ClaimBatch), which claim them, or their lanes, at once.
type idemLayer[R any] struct {
	next     batch.Handler[R]
	key      func(R) string
	payload  func(R) []byte
	onDup    func(context.Context, R, []byte) error
	store    idempotency.Store
	opts     []idempotency.Option
	optional bool
	valueKey bool // the key comes from the decoded value (WithIdempotencyKey)
	prefix   string
	now      func() time.Time
	logger   *slog.Logger
	lanes    bool        // ordered lanes keep a checkpoint (checkpointMode)
	pf       int         // the mapping's ParallelizationFactor as declared; 0 undeclared
	noted    atomic.Bool // the undeclared factor's log line was written

	// runAhead is the function every record run under the claims taken
	// ahead gives DoLane: one for the layer, not a closure a record, so
	// a record's run allocates nothing whatever DoLane does with its
	// function (a closure capturing the record that escaped would cost a
	// record three allocations). It finds its record in the batch's runs.
	runAhead func(context.Context) ([]byte, error)
	spare    atomic.Pointer[[]idemRun[R]] // a batch's runs, kept for the next
}

// idemBatchKey carries one invocation's idemBatch to the records.
type idemBatchKey struct{}

// idemBatch is what one invocation's records share: the claims taken
// ahead (whose cache, the user's or the batch's own, every record of the
// batch shares) and the keys that more than one record of the batch has.
type idemBatch[R any] struct {
	shared map[string]bool
	ahead  *idempotency.Batch // the claims taken ahead, or nil
	lanes  []string           // item index -> its ordered lane, when the policy keys lanes
	runs   *[]idemRun[R]      // item index -> its run, when ahead is set
	// keyIndex maps the key of a record in a checkpointed lane to its
	// item index, for the lanes' last write.
	keyIndex map[string]int
}

// idemRun is item i of a batch run under the claims taken ahead: the
// record runAhead runs, whether it ran, and its key once it ran and
// DoLane returned (after fails it if its complete failed). Only the worker
// running item i touches it, until after reads it.
type idemRun[R any] struct {
	r   R
	ran bool
	key string
}

// idempotent builds the idempotency layer; defaultKey is the source's
// stable record id.
func idempotent[R any](c *config, defaultKey func(R) string) (*idemLayer[R], error) {
	var r R
	l := &idemLayer[R]{
		key: defaultKey, store: c.idemStore, opts: c.idemOpts, optional: c.idemOptional,
		now: c.now, logger: c.logger,
	}
	l.runAhead = l.runRecord
	if k, ok := envelopeKeyFor(defaultKey); ok {
		l.key, l.valueKey = k, true // an envelope's key is in the decoded value (envelopes.go)
	}
	if c.idemKey != nil {
		k, ok := c.idemKey.(func(R) string)
		if !ok {
			return nil, fmt.Errorf("WithIdempotencyKey: the key function is a %T, but this handler's records are %T: "+
				"pass a func(%T) string", c.idemKey, r, r)
		}
		l.key, l.valueKey = k, true
	}
	if c.idemPayload != nil {
		p, ok := c.idemPayload.(func(R) []byte)
		if !ok {
			return nil, fmt.Errorf("WithIdempotencyPayload: the payload function is a %T, but this handler's records are %T: "+
				"pass a func(%T) []byte", c.idemPayload, r, r)
		}
		l.payload = p
	}
	if c.idemOnDup != nil {
		f, ok := c.idemOnDup.(func(context.Context, R, []byte) error)
		if !ok {
			return nil, fmt.Errorf("WithOnDuplicate: the function is a %T, but this handler's records are %T: "+
				"pass a func(context.Context, %T, []byte) error", c.idemOnDup, r, r)
		}
		l.onDup = f
	}
	if p := c.keyPrefix(); p != "" {
		l.prefix = p + "#"
	}
	pf, err := c.parallelization()
	if err != nil {
		return nil, err
	}
	_, laneStore := c.idemStore.(idempotency.LaneStore)
	l.pf = pf
	l.lanes = checkpointMode(laneStore, l.valueKey, l.payload != nil, l.onDup != nil, c.idem.perRecord)
	if shadow, _ := shadowOn(c); shadow {
		l.prefix = ShadowKeyPrefix + l.prefix // a shadow replay's keys: a namespace of their own
	}
	return l, nil
}

// layer is the idempotency layer: a before, a wrap around the next
// layers (the retries) and an after.
func (l *idemLayer[R]) layer() layer[R] {
	return layer[R]{before: l.before, after: l.after, wrap: func(next batch.Handler[R]) batch.Handler[R] {
		l.next = next
		return l
	}}
}

// recordKey is record r's full key, or "" when it has none.
func (l *idemLayer[R]) recordKey(r R) string {
	k := l.key(r)
	if k == "" {
		return ""
	}
	return l.prefix + k
}

func (l *idemLayer[R]) before(ctx context.Context, b *hookBatch[R]) context.Context {
	st := &idemBatch[R]{}
	ctx = context.WithValue(ctx, idemBatchKey{}, st)
	lanes := l.lanes && checkpointed(b.policy)
	if len(b.items) < 2 && !lanes {
		return ctx // one claim answers as cheaply as one read
	}
	keys := make([]string, 0, len(b.items))
	var ahead []idempotency.BatchKey
	for i := range b.items {
		if !l.valueKey && l.payload == nil {
			r := b.shell(i) // the default key: no need to decode the value
			k := l.recordKey(r)
			keys = append(keys, k)
			a := idempotency.BatchKey{Key: k, Lookup: lookupFirst(r)}
			if lanes {
				if lane, pos := laneOf(r, b.items[i], l.pf); lane != "" {
					if l.pf == 0 && !l.noted.Load() && strings.HasPrefix(lane, "kinesis#") {
						l.noteUndeclared(ctx)
					}
					a.Lane, a.Pos, a.Order = l.prefix+"lane#"+lane, pos, orderOf(b.policy, b.items[i])
					if st.keyIndex == nil {
						st.keyIndex = make(map[string]int, len(b.items))
					}
					st.keyIndex[k] = i
				}
			}
			ahead = append(ahead, a)
			continue
		}
		r, err := b.record(i)
		if err != nil {
			continue // it fails to decode; no key to look up
		}
		k := l.recordKey(r)
		keys = append(keys, k)
		a := idempotency.BatchKey{Key: k, Lookup: lookupFirst(r)}
		if l.payload != nil {
			a.Payload, a.HasPayload = l.payload(r), true
		}
		ahead = append(ahead, a)
	}
	if l.valueKey {
		st.shared = sharedKeys(keys)
		if st.shared != nil { // a key two records share is claimed by each, as it comes
			ahead = slices.DeleteFunc(ahead, func(a idempotency.BatchKey) bool { return st.shared[a.Key] })
		}
	}
	// Claim every key at once (those the warm cache holds are skipped):
	// a refused claim answers a duplicate with the record it found, so a
	// first delivery costs no read. A redelivery is read first, with the
	// batch's other redeliveries in one request, and claimed only if it
	// did not complete. Each record then finds its claim in. Without the
	// user's warm cache (idempotency.WithCache) the batch keeps one of its
	// own, so a record whose key another record of the batch completed
	// needs no store request.
	if a, err := idempotency.ClaimBatch(ctx, l.store, ahead, l.opts...); err == nil {
		if b.policy != engine.Independent {
			// A record's effect starts once at most the depth of its lane's
			// earlier completes are still in flight.
			a.Ordered()
			if b.policy == engine.OrderedPerGroup || b.policy == engine.StreamPerKey || b.policy == engine.PerPartition {
				st.lanes = make([]string, len(b.items))
				for i, it := range b.items {
					st.lanes[i] = it.Key
				}
			}
		}
		st.ahead = a
		runs := l.spare.Swap(nil)
		if runs == nil {
			runs = new([]idemRun[R])
		}
		if cap(*runs) < len(b.items) {
			*runs = make([]idemRun[R], len(b.items))
		}
		*runs = (*runs)[:len(b.items)]
		st.runs = runs
	}
	return ctx
}

// coveredBy returns the lane and position of key's record when its
// lane's checkpoint answered it as a duplicate (st may be nil).
func (st *idemBatch[R]) coveredBy(key string) (lane, pos string, ok bool) {
	if st == nil || st.ahead == nil || st.keyIndex == nil {
		return "", "", false
	}
	return st.ahead.Covered(key)
}

// noteUndeclared logs, once, that the Kinesis checkpoints are kept per
// shard and partition key because the factor was not declared, and what
// declaring it saves.
func (l *idemLayer[R]) noteUndeclared(ctx context.Context) {
	if l.noted.Swap(true) || l.logger == nil {
		return
	}
	l.logger.LogAttrs(ctx, slog.LevelInfo, "sluice: the mapping's ParallelizationFactor is not declared, so the idempotency checkpoints "+
		"are kept per shard and partition key, which is right whatever the factor; declaring it ("+EnvParallelizationFactor+"=1, "+
		"or handlers.WithParallelizationFactor(1), when the mapping's factor is 1; Sluice's CDK constructs set it) keeps one per shard: "+
		"a lane claim and a checkpoint write per shard of each batch instead of per partition key (40 records over 50 keys: "+
		"0.15 write units a record instead of 1.26)",
		slog.String("variable", EnvParallelizationFactor))
}

// runRecord is runAhead: it runs the record of the item under ctx.
func (l *idemLayer[R]) runRecord(ctx context.Context) ([]byte, error) {
	i, _ := engine.Index(ctx)
	run := &(*ctx.Value(idemBatchKey{}).(*idemBatch[R]).runs)[i]
	run.ran = true
	return nil, l.next.Handle(ctx, run.r)
}

// after waits for the completes and releases the records sent while the
// batch went on, releases the claims taken ahead for records that never
// ran, and fails each record whose complete did not land, as
// idempotency.Do fails it, so the answer never reports a record done
// whose completion is not durable.
func (l *idemLayer[R]) after(ctx context.Context, _ *hookBatch[R], res *engine.Result) {
	st, _ := ctx.Value(idemBatchKey{}).(*idemBatch[R])
	if st == nil || st.ahead == nil {
		return
	}
	var handled func(key string) bool
	if st.keyIndex != nil {
		// What the batch answered for each record of a checkpointed lane:
		// one that succeeded without completing was quarantined (or
		// answered without the function), and its lane moves past it.
		handled = func(key string) bool {
			i, ok := st.keyIndex[key]
			return ok && res.Outcomes[i] == engine.Succeeded
		}
	}
	failed := st.ahead.Finish(handled)
	runs := *st.runs
	if len(failed) != 0 {
		for i := range runs {
			if k := runs[i].key; k != "" {
				if err := failed[k]; err != nil {
					res.Fail(i, err)
				}
			}
		}
	}
	clear(runs) // no record kept past its batch
	l.spare.Store(st.runs)
}

// Handle runs r's chain at most once per key.
func (l *idemLayer[R]) Handle(ctx context.Context, r R) error {
	k := l.recordKey(r)
	if k == "" {
		if l.optional {
			return l.next.Handle(ctx, r)
		}
		return batch.Permanent(fmt.Errorf("%w: the key function returned \"\"; give every record a key, "+
			"or build the handler with handlers.WithIdempotencyOptionalKey() to run such records without idempotency",
			ErrNoIdempotencyKey))
	}
	opts := l.opts
	st, _ := ctx.Value(idemBatchKey{}).(*idemBatch[R])
	if l.payload != nil {
		opts = append(opts[:len(opts):len(opts)], idempotency.WithPayload(l.payload(r)))
	}
	ran := false
	fn := func(ctx context.Context) ([]byte, error) {
		ran = true
		return nil, l.next.Handle(ctx, r)
	}
	var result []byte
	var err error
	if i, ok := engine.Index(ctx); ok && st != nil && st.ahead != nil {
		var own []idempotency.Option
		if l.payload != nil {
			own = opts[len(opts)-1:]
		}
		lane := ""
		if st.lanes != nil {
			lane = st.lanes[i]
		}
		// A key two records share was not claimed ahead: DoLane runs it
		// with idempotency.Do, after its lane's completes.
		run := &(*st.runs)[i]
		run.r, run.ran = r, false
		result, err = st.ahead.DoLane(ctx, lane, k, l.runAhead, own...)
		ran = run.ran
		if ran && err == nil {
			run.key = k
		}
	} else {
		result, err = idempotency.Do(ctx, l.store, k, fn, opts...)
	}
	if errors.Is(err, idempotency.ErrPayloadMismatch) {
		return batch.Permanent(err)
	}
	if st != nil && st.shared[k] && errors.Is(err, idempotency.ErrInProgress) {
		return fmt.Errorf("sluice: another record of this batch has the same idempotency key and was still running it "+
			"when this record stopped waiting; this one is retried later: %w", err)
	}
	if err != nil || ran {
		return err
	}
	if lane, pos, ok := st.coveredBy(k); ok {
		answeredByCheckpoint(ctx, k, lane, pos) // the lane's item, not k's, shows it
	} else {
		answeredWithout(ctx, SkipDuplicate, k)
	}
	if l.onDup != nil {
		return l.onDup(ctx, r, result)
	}
	return nil
}

// lookupFirst decides whether record r's key is read before it is
// claimed: when r is a redelivery (an SQS message received before, by
// ApproximateReceiveCount), it probably completed, and a read costs half
// a read unit where a refused claim costs a write unit, in the same round
// trip. A first delivery (or a record that cannot say) is claimed at
// once, so a batch of new records costs a claim and a complete each and
// no read.
func lookupFirst[R any](r R) bool {
	c, ok := any(r).(interface{ ReceiveCount() int })
	return ok && redelivered(c.ReceiveCount())
}

// redelivered reports whether a receive count says the message was
// received before.
func redelivered(receiveCount int) bool { return receiveCount > 1 }

// checkpointMode decides whether a handler keeps a checkpoint per ordered
// lane instead of a claim per record: when its store keeps lanes, the key
// is the record's own id (a business key can turn up in any lane; an
// envelope's id is one), no payload is hashed (a record's own id names
// one payload), no stored result is asked for (a checkpoint stores none),
// and WithIdempotencyPerRecord was not given.
func checkpointMode(laneStore, valueKey, payload, onDup, perRecord bool) bool {
	return laneStore && !valueKey && !payload && !onDup && !perRecord
}

// checkpointed reports whether a batch of policy runs in lanes that can
// keep a checkpoint: every ordered policy. An SQS standard queue's
// records are independent.
func checkpointed(policy engine.Policy) bool { return policy != engine.Independent }

// orderOf is the ordering key the engine runs item it under (the records
// of one run one at a time, in order): its key on the per-key policies,
// the whole batch on the others.
func orderOf(policy engine.Policy, it engine.Item) string {
	switch policy {
	case engine.OrderedPerGroup, engine.StreamPerKey, engine.PerPartition:
		return it.Key
	}
	return ""
}

// laneOf is the checkpointed lane of record r (item it, of a mapping
// with parallelization factor pf as declared, 0 undeclared) and its
// position there, or "" when the record names none.
func laneOf[R any](r R, it engine.Item, pf int) (lane, pos string) {
	if l, ok := any(r).(interface {
		idemLane(it engine.Item, pf int) (string, string)
	}); ok {
		return l.idemLane(it, pf)
	}
	return "", ""
}

// A Kinesis record's lane is its shard ("kinesis#<stream ARN>#<shard
// id>") when the ParallelizationFactor was declared 1, else its shard and
// partition key (laneByKey): the Kinesis record's, by which Lambda gives a
// shard's records to its concurrent batches (a KPL user record's
// aggregate's, not its own, which another aggregate of another batch may
// share); its position its sequence number (and, for a KPL user record,
// its sub-sequence number).
func (r KinesisRecord[T]) idemLane(_ engine.Item, pf int) (string, string) {
	shard, _, ok := strings.Cut(r.Raw.EventID, ":")
	if !ok || shard == "" {
		return "", ""
	}
	var pos string
	if r.agg {
		pos, ok = idempotency.Position(r.Raw.Kinesis.SequenceNumber, strconv.Itoa(int(r.sub)))
	} else {
		pos, ok = idempotency.Position(r.Raw.Kinesis.SequenceNumber)
	}
	if !ok {
		return "", ""
	}
	lane := "kinesis#" + r.Raw.EventSourceArn + "#" + shard
	if laneByKey(pf) {
		key := r.Raw.Kinesis.PartitionKey
		if r.agg {
			key = r.outerKey
		}
		lane += "#" + key
	}
	return lane, pos
}

// A DynamoDB Streams record's lane is its item ("dynamodb#<stream
// ARN>#<the item's key>"): the event does not name the shard, and an
// item's changes are in one shard, in order (whatever the
// ParallelizationFactor); its position its sequence number.
func (r DynamoDBRecord[T]) idemLane(it engine.Item, _ int) (string, string) {
	pos, ok := idempotency.Position(r.Raw.Change.SequenceNumber)
	if !ok || it.Key == "" {
		return "", ""
	}
	return "dynamodb#" + r.Raw.EventSourceArn + "#" + it.Key, pos
}

// A Kafka record's lane is its topic-partition ("kafka#<topic>-<n>", as
// its default key names it, without the cluster); its position its
// offset.
func (r KafkaRecord[T]) idemLane(engine.Item, int) (string, string) {
	pos, ok := idempotency.Position(strconv.FormatInt(r.Raw.Offset, 10))
	if !ok {
		return "", ""
	}
	return "kafka#" + r.Raw.Topic + "-" + strconv.FormatInt(r.Raw.Partition, 10), pos
}

// An SQS FIFO message's lane is its message group ("sqs#<queue
// ARN>#<group>"); its position its SequenceNumber, which grows within a
// group.
func (r SQSRecord[T]) idemLane(engine.Item, int) (string, string) {
	group := r.Raw.Attributes["MessageGroupId"]
	pos, ok := idempotency.Position(r.Raw.Attributes["SequenceNumber"])
	if !ok || group == "" {
		return "", ""
	}
	return "sqs#" + r.Raw.EventSourceARN + "#" + group, pos
}

// sharedKeys returns the keys that occur more than once in keys, or nil.
func sharedKeys(keys []string) map[string]bool {
	var seen, shared map[string]bool
	for _, k := range keys {
		if k == "" {
			continue
		}
		if seen[k] {
			if shared == nil {
				shared = map[string]bool{}
			}
			shared[k] = true
			continue
		}
		if seen == nil {
			seen = make(map[string]bool, len(keys))
		}
		seen[k] = true
	}
	return shared
}

// The default idempotency keys: each source's stable record id.

func (r KinesisRecord[T]) idempotencyKey() string {
	if r.agg { // a KPL user record: its event id and sub-sequence number
		return kpl.SubSequenceKey(r.Raw.EventID, int(r.sub))
	}
	return r.Raw.EventID
}
func (r DynamoDBRecord[T]) idempotencyKey() string { return r.Raw.EventID }
func (r SQSRecord[T]) idempotencyKey() string      { return r.Raw.MessageId }
func (r KafkaRecord[T]) idempotencyKey() string {
	return r.Raw.Topic + "-" + strconv.FormatInt(r.Raw.Partition, 10) + "-" + strconv.FormatInt(r.Raw.Offset, 10)
}
