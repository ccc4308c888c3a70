// Package engine runs a per-record function over a batch under the ordering
// policy of its source and decides which records to report back to Lambda as
// failed. It is the machinery behind package handlers; a function author never
// sees it. The vocabulary it shares with function authors (outcomes, error
// classes, the errors of records that were not attempted) lives in package
// batch.
//
// The engine works on non-generic Items (an identifier, an ordering key and an
// arrival time); decoding records and calling the typed function is the
// caller's Process.
//
// # Policies
//
// A Policy says which records may run concurrently, what an earlier failure
// does to later records, and which records are reported (see Report):
//
//   - Independent (SQS standard): records are independent and run with bounded
//     concurrency; every record that did not succeed is reported.
//   - Ordered (SQS FIFO): records run in batch order; after a failure nothing
//     later runs, and the failed record and every later one are reported, as
//     Lambda requires for FIFO queues.
//   - OrderedPerGroup (SQS FIFO, skip-group mode): as Ordered, but a failure
//     stops and reports only the later records of the same message group;
//     other groups go on.
//   - Stream (Kinesis, DynamoDB Streams): records run in sequence order and the
//     batch stops at the first failure, which alone is reported: Lambda
//     restarts the shard from the lowest reported sequence number, so work
//     after it would be wasted and run twice.
//   - StreamPerKey: as Stream, but different ordering keys (partition keys) run
//     concurrently, each key in order; the lowest record that did not succeed
//     is reported, and records after it are not started.
//   - PerPartition (Kafka): each ordering key (topic-partition) runs in order,
//     partitions concurrently; a partition stops at its first failure, and the
//     failed record and every later record of that partition are reported.
//     Reporting the later ones too is correct whether Lambda restarts the
//     partition at the lowest reported offset or retries only what is listed.
//
// # Failures
//
// A panic in Process becomes a *batch.PanicError for that record. Before each
// record the deadline guard compares the time left before the Lambda deadline
// with a margin; when too little is left, that record and all records not yet
// started are not attempted (batch.ErrDeadline), so the function answers
// before Lambda times it out.
//
// When no record of a non-empty batch succeeded, Run returns a function error
// (batch.ErrNoProgress) instead of a partial response, so that Lambda's
// BisectBatchOnFunctionError can split the batch and isolate a poison record.
// Config.PartialResponseWhenNoneSucceed turns this off.
//
// In-process retries happen inside Process (batch.Retry); a retry middleware
// tells the engine about each one with NoteRetry, which counts it into the
// record's attempts and logs it at debug level. An idempotency middleware
// tells it about a record whose effect had already completed with
// NoteSkip (reason SkipDuplicate): the record succeeded, and is counted as
// a duplicate; any record answered without the user's function is noted
// the same way, with its reason (Result.Skipped). A
// dead-letter middleware quarantines a record with Park: the record counts
// as succeeded, so the policy goes on past it. On an ordered policy the
// middleware sends the record's envelope inside Process, before parking it,
// so a failed send is the record's failure and stops its lane; on
// Independent the Config.After hook sends every parked record of the batch
// at once, revoking (Result.Unpark) those it could not send, which are then
// reported as failed.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
)

// Policy is a source's ordering and reporting policy; see the package
// documentation.
type Policy uint8

const (
	Independent Policy = iota
	Ordered
	OrderedPerGroup
	Stream
	StreamPerKey
	PerPartition
)

func (p Policy) String() string {
	switch p {
	case Independent:
		return "independent"
	case Ordered:
		return "ordered"
	case OrderedPerGroup:
		return "ordered-per-group"
	case Stream:
		return "stream"
	case StreamPerKey:
		return "stream-per-key"
	case PerPartition:
		return "per-partition"
	}
	return fmt.Sprintf("Policy(%d)", p)
}

// keyed reports whether the policy runs ordering keys as separate lanes.
func (p Policy) keyed() bool {
	return p == OrderedPerGroup || p == StreamPerKey || p == PerPartition
}

// Item is one record as the engine sees it.
type Item struct {
	ID      string    // the identifier reported to Lambda
	Key     string    // the ordering key: message group, partition key, topic-partition
	Arrival time.Time // when the source received it; zero if unknown
}

// The outcomes, under short names.
const (
	NotAttempted = batch.NotAttempted
	Succeeded    = batch.Succeeded
	Failed       = batch.Failed
)

// Config configures one Run.
//
// Run goes in four steps: run fills Outcomes and Errors, settle completes
// them, the After hook may revoke quarantines, and decide (a pure function
// of the outcomes) picks the answer. A batch-level look before any record
// runs needs no engine support: the handler does it before calling Run and
// hands its findings to Process through ctx.
type Config struct {
	Policy Policy
	// Concurrency bounds how many records (Independent) or ordering keys
	// (the per-key policies) run at once. Values below 1 mean 1. Ordered and
	// Stream always run one record at a time.
	Concurrency int
	// Margin is the deadline guard: a record is started only while more than
	// Margin is left before ctx's deadline, and Process sees a context whose
	// deadline is Margin earlier than the Lambda deadline.
	Margin time.Duration
	// PartialResponseWhenNoneSucceed, when true, answers a batch in which no
	// record succeeded with a partial response naming them, instead of the
	// function error ErrNoProgress.
	PartialResponseWhenNoneSucceed bool
	// Source names the source in logs (events.SourceKinesis, ...).
	Source events.Source
	// Logger receives one summary line per batch, one line per failed record
	// and, at debug level, one line per in-process retry. Nil means no
	// logging.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// After, when set, runs once after every started record finished and
	// before the answer is decided, with the whole batch's result. It is
	// where records parked with Park are sent away in one go; a record
	// whose send failed is revoked with Result.Unpark, so it is reported.
	After func(ctx context.Context, res *Result)
	// OnRetry, when set, is told of each in-process retry NoteRetry
	// reports, with the record's index (a tracer's span event).
	OnRetry func(ctx context.Context, i, retry int, err error, wait time.Duration)
	// RecordContext, when set, gives the context the log line of failed
	// record i is written under (a tracer's record span, so the line
	// carries its ids); else the line is written under Run's context.
	RecordContext func(ctx context.Context, i int) context.Context
}

// Result is what Run decided.
type Result struct {
	Outcomes []batch.Outcome // per item
	// Errors says, per item, why it failed or was not attempted; it is nil
	// when every item succeeded. Use Error(i).
	Errors []error
	// Retries counts, per item, the in-process retries reported with
	// NoteRetry; it is nil when there were none. Use Attempts(i).
	Retries []int32
	// Report lists, ascending, the indexes of the items to report as batch
	// item failures. It is empty when Err is set.
	Report []int
	// Err, when non-nil, is a function error: the whole invocation fails.
	Err error

	// Skips holds, per item, why a record was answered without the user's
	// function (NoteSkip); it is nil when none was. Use Skipped(i) and
	// Duplicate(i).
	Skips []Skip

	// Parked holds, per item, the value given to Park for a record that was
	// quarantined instead of failing; it is nil when none was. A parked
	// record counts as succeeded. Use Parked(i).
	Parked []any

	Succeeded, Failed, NotAttempted int
	Retried                         int // in-process retries, all items
	Duplicated                      int // items skipped as SkipDuplicate that succeeded
	Quarantined                     int // items parked with Park and not revoked
	Duration                        time.Duration
	// Oldest is the arrival time of the oldest item that has one (zero if
	// none has): the batch's age, for logs and metrics.
	Oldest time.Time
}

// Park returns the value item i was parked with, or nil when it was not
// parked (or its park was revoked).
func (r *Result) Park(i int) any {
	if r.Parked == nil {
		return nil
	}
	return r.Parked[i]
}

// Unpark revokes item i's park: the record failed with err after all
// (its quarantine could not be completed), so it is reported and Lambda
// delivers it again. It is meant for a Config.After hook; an item that is
// not parked is left alone.
func (r *Result) Unpark(i int, err error) {
	if r.Park(i) == nil {
		return
	}
	if err == nil {
		err = errors.New("sluice: quarantine revoked")
	}
	r.Parked[i] = nil
	r.Outcomes[i] = Failed
	if r.Errors == nil {
		r.Errors = make([]error, len(r.Outcomes))
	}
	r.Errors[i] = err
	r.Succeeded--
	r.Failed++
	r.Quarantined--
}

// Fail turns item i, which succeeded, into a failure with err after all
// (its idempotency complete, sent while the batch went on, did not land),
// so it is reported and Lambda delivers it again. It is meant for a
// Config.After hook; an item that did not succeed is left alone.
func (r *Result) Fail(i int, err error) {
	if r.Outcomes[i] != Succeeded {
		return
	}
	if r.Park(i) != nil {
		r.Parked[i] = nil
		r.Quarantined--
	}
	if r.Duplicate(i) {
		r.Duplicated--
	}
	r.Outcomes[i] = Failed
	if r.Errors == nil {
		r.Errors = make([]error, len(r.Outcomes))
	}
	r.Errors[i] = err
	r.Succeeded--
	r.Failed++
}

// Error returns why item i failed or was not attempted, or nil.
func (r *Result) Error(i int) error {
	if r.Errors == nil {
		return nil
	}
	return r.Errors[i]
}

// Duplicate reports whether item i succeeded as a duplicate: its effect had
// already completed, so the function did not run.
func (r *Result) Duplicate(i int) bool {
	s, ok := r.Skipped(i)
	return ok && s.Reason == SkipDuplicate
}

// Skipped returns why item i was answered without the user's function,
// when it was and succeeded.
func (r *Result) Skipped(i int) (Skip, bool) {
	if r.Skips == nil || r.Skips[i].Reason == "" || r.Outcomes[i] != Succeeded {
		return Skip{}, false
	}
	return r.Skips[i], true
}

// Attempts returns how many times item i was run in this invocation: 0 when
// it was not attempted, else 1 plus its in-process retries.
func (r *Result) Attempts(i int) int {
	if r.Outcomes[i] == NotAttempted {
		return 0
	}
	if r.Retries == nil {
		return 1
	}
	return 1 + int(r.Retries[i])
}

// Process runs the record at index i. worker identifies the goroutine, from 0
// to Concurrency-1, so a caller can keep per-worker scratch space.
type Process func(ctx context.Context, worker, i int) error

// Run processes items under cfg's policy and returns the outcome of each and
// what to report. It returns when every started record has finished.
func Run(ctx context.Context, items []Item, cfg Config, process Process) *Result {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	n := len(items)
	r := &runner{
		items:    items,
		cfg:      cfg,
		now:      now,
		process:  process,
		outcomes: make([]batch.Outcome, n),
	}
	r.lowest.Store(int64(n))
	rctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		r.hasDeadline = true
		r.guard = dl.Add(-cfg.Margin)
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, r.guard)
		defer cancel()
	}
	r.run(rctx)
	res := r.settle()
	if cfg.After != nil {
		cfg.After(ctx, res)
	}
	decide(cfg, items, res)
	res.Duration = now().Sub(start)
	for _, it := range items {
		if !it.Arrival.IsZero() && (res.Oldest.IsZero() || it.Arrival.Before(res.Oldest)) {
			res.Oldest = it.Arrival
		}
	}
	logResult(ctx, cfg, items, res, start)
	return res
}

// settle gathers the outcomes, giving every record that was not attempted
// the reason why.
func (r *runner) settle() *Result {
	res := &Result{Outcomes: r.outcomes}
	for i, o := range r.outcomes {
		switch o {
		case Succeeded:
			res.Succeeded++
		case Failed:
			res.Failed++
		default:
			res.NotAttempted++
			r.initErrs()
			if r.errs[i] == nil {
				if r.expired.Load() {
					r.errs[i] = batch.ErrDeadline
				} else {
					r.errs[i] = batch.ErrStopped
				}
			}
		}
	}
	res.Errors = r.errs
	res.Retries = r.retries
	for _, n := range r.retries {
		res.Retried += int(n)
	}
	res.Skips = r.skips
	for i, s := range r.skips {
		if s.Reason == SkipDuplicate && r.outcomes[i] == Succeeded {
			res.Duplicated++
		}
	}
	for i, v := range r.parked {
		if v != nil && r.outcomes[i] != Succeeded {
			r.parked[i] = nil // a record that failed after Park is not parked
		}
		if r.parked[i] != nil {
			res.Quarantined++
		}
	}
	if res.Quarantined > 0 {
		res.Parked = r.parked
	}
	return res
}

// decide sets what to answer Lambda: the records to report, or a function
// error when none succeeded.
func decide(cfg Config, items []Item, res *Result) {
	if len(items) > 0 && res.Succeeded == 0 && !cfg.PartialResponseWhenNoneSucceed {
		res.Err = noProgressError(items, res.Outcomes, res.Errors)
		return
	}
	res.Report = Report(cfg.Policy, items, res.Outcomes)
}

func noProgressError(items []Item, outcomes []batch.Outcome, errs []error) error {
	for i, o := range outcomes {
		if o == Failed {
			return &batch.NoProgressError{Records: len(items), FirstFailed: items[i].ID, Err: errs[i]}
		}
	}
	return &batch.NoProgressError{Records: len(items), Err: errs[0]}
}

type runner struct {
	items   []Item
	cfg     Config
	now     func() time.Time
	process Process

	outcomes  []batch.Outcome
	errs      []error // allocated on the first failure
	errsOnce  sync.Once
	retries   []int32 // allocated on the first retry
	retryOnce sync.Once
	skips     []Skip // allocated on the first skip
	skipOnce  sync.Once
	parked    []any // allocated on the first Park
	parkOnce  sync.Once

	// slots[w] is the context worker w runs records under; it knows which
	// record that is, for NoteRetry.
	slots []slot

	hasDeadline bool
	guard       time.Time   // start no record at or after this instant
	expired     atomic.Bool // the guard tripped: start nothing more
	halted      atomic.Bool // Ordered/Stream: a failure stops the batch
	lowest      atomic.Int64
}

type slot struct {
	context.Context
	r *runner
	i int
}

type slotKey struct{}

// Value answers slotKey with the slot itself, and any other key as the
// context it wraps does.
func (s *slot) Value(key any) any {
	if key == (slotKey{}) {
		return s
	}
	return s.Context.Value(key)
}

// NoteRetry tells the engine that the record being processed under ctx (a
// context given to Process, or derived from one) failed its attempt number
// retry with a transient error and will be tried again after wait. The
// engine counts the retry into the record's attempts and logs it at debug
// level. Outside a Run it does nothing.
func NoteRetry(ctx context.Context, retry int, err error, wait time.Duration) {
	s, _ := ctx.Value(slotKey{}).(*slot)
	if s == nil || s.r == nil {
		return
	}
	r, i := s.r, s.i
	r.retryOnce.Do(func() { r.retries = make([]int32, len(r.items)) })
	r.retries[i]++ // only the worker running item i touches its count
	if l := r.cfg.Logger; l != nil && l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "sluice: record failed transiently, retrying",
			slog.String("source", string(r.cfg.Source)),
			slog.String("record", r.items[i].ID),
			slog.String("key", r.items[i].Key),
			slog.Int("attempt", retry),
			slog.String("error", err.Error()),
			slog.Duration("wait", wait),
		)
	}
	if f := r.cfg.OnRetry; f != nil {
		f(ctx, i, retry, err, wait)
	}
}

// Skip says why a record was answered without the user's function:
// Reason, and for a duplicate the idempotency key that had completed, or,
// when its lane's checkpoint answered it, that lane's key and the
// record's position in it.
type Skip struct {
	Reason, Key    string
	Lane, Position string
}

// SkipDuplicate is the Reason of a record skipped because its effect had
// already completed (its idempotency key, Skip.Key): it is counted as a
// duplicate.
const SkipDuplicate = "duplicate"

// NoteSkip tells the engine that the record being processed under ctx (a
// context given to Process, or derived from one) was answered without the
// user's function, and why (s.Reason not empty). If the record then
// succeeds, Result.Skipped says so, and a SkipDuplicate is counted as a
// duplicate in the Result and the batch log line. Outside a Run it does
// nothing.
func NoteSkip(ctx context.Context, s Skip) {
	sl, _ := ctx.Value(slotKey{}).(*slot)
	if sl == nil || sl.r == nil {
		return
	}
	r, i := sl.r, sl.i
	r.skipOnce.Do(func() { r.skips = make([]Skip, len(r.items)) })
	r.skips[i] = s // only the worker running item i touches its mark
}

// Index returns the index of the item being processed under ctx (a
// context given to Process, or derived from one), and false outside a Run.
func Index(ctx context.Context) (int, bool) {
	s, _ := ctx.Value(slotKey{}).(*slot)
	if s == nil || s.r == nil {
		return 0, false
	}
	return s.i, true
}

// Park tells the engine that the record being processed under ctx (a
// context given to Process, or derived from one) is quarantined instead of
// failing: v (not nil) describes it for the Config.After hook, which sends
// it away. The caller then returns nil, so the record counts as succeeded
// and the policy goes on past it; the hook revokes the park with
// Result.Unpark if the send fails. Outside a Run it does nothing.
func Park(ctx context.Context, v any) {
	s, _ := ctx.Value(slotKey{}).(*slot)
	if s == nil || s.r == nil || v == nil {
		return
	}
	r, i := s.r, s.i
	r.parkOnce.Do(func() { r.parked = make([]any, len(r.items)) })
	r.parked[i] = v // only the worker running item i touches its mark
}

func (r *runner) run(ctx context.Context) {
	n := len(r.items)
	if n == 0 {
		return
	}
	workers := max(r.cfg.Concurrency, 1)
	if !r.cfg.Policy.keyed() && r.cfg.Policy != Independent {
		workers = 1
	}
	r.slots = make([]slot, workers)
	for w := range r.slots {
		r.slots[w] = slot{Context: ctx, r: r}
	}
	switch {
	case r.cfg.Policy.keyed() && workers == 1:
		// One at a time: keep batch order across keys, skipping the later
		// records of a key that failed.
		var failed map[string]bool
		for i := 0; i < n; i++ {
			k := r.items[i].Key
			if failed[k] {
				continue
			}
			if !r.step(0, i) {
				if r.expired.Load() {
					return
				}
				if failed == nil {
					failed = map[string]bool{}
				}
				failed[k] = true
			}
		}
	case r.cfg.Policy.keyed():
		lanes := lanesByKey(r.items)
		workers = min(workers, len(lanes))
		var next atomic.Int64
		r.parallel(workers, func(w int) {
			for {
				l := int(next.Add(1) - 1)
				if l >= len(lanes) {
					return
				}
				r.lane(w, lanes[l])
			}
		})
	case r.cfg.Policy == Independent && workers > 1:
		var next atomic.Int64
		r.parallel(min(workers, n), func(w int) {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || !r.step(w, i) && r.expired.Load() {
					return
				}
			}
		})
	default:
		for i := 0; i < n; i++ {
			if !r.step(0, i) && (r.expired.Load() || r.halted.Load()) {
				return
			}
		}
	}
}

func (r *runner) parallel(workers int, f func(w int)) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() { f(w) })
	}
	wg.Wait()
}

// lane runs the items of one ordering key in order, stopping at the first
// one that does not succeed.
func (r *runner) lane(w int, lane []int) {
	for _, i := range lane {
		if !r.step(w, i) {
			return
		}
	}
}

// step runs item i if the guard, the policy and earlier failures allow it,
// and reports whether it succeeded.
func (r *runner) step(w, i int) bool {
	if r.expired.Load() || r.halted.Load() {
		return false
	}
	if r.cfg.Policy == StreamPerKey && int64(i) > r.lowest.Load() {
		return false // it will be redelivered from the lowest failure anyway
	}
	if r.hasDeadline && !r.now().Before(r.guard) {
		r.expired.Store(true)
		return false
	}
	r.slots[w].i = i
	err := r.call(&r.slots[w], w, i)
	if err == nil {
		r.outcomes[i] = Succeeded
		return true
	}
	r.outcomes[i] = Failed
	r.initErrs()
	r.errs[i] = err
	switch r.cfg.Policy {
	case Ordered, Stream:
		r.halted.Store(true)
	case StreamPerKey:
		for {
			cur := r.lowest.Load()
			if int64(i) >= cur || r.lowest.CompareAndSwap(cur, int64(i)) {
				break
			}
		}
	}
	return false
}

func (r *runner) initErrs() {
	r.errsOnce.Do(func() { r.errs = make([]error, len(r.items)) })
}

func (r *runner) call(ctx context.Context, w, i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &batch.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.process(ctx, w, i)
}

// lanesByKey groups item indexes by Key, in order of first appearance.
func lanesByKey(items []Item) [][]int {
	idx := make(map[string]int)
	var lanes [][]int
	for i, it := range items {
		l, ok := idx[it.Key]
		if !ok {
			l = len(lanes)
			idx[it.Key] = l
			lanes = append(lanes, nil)
		}
		lanes[l] = append(lanes[l], i)
	}
	return lanes
}

// Report decides which items to report to Lambda as batch item failures,
// given the policy and each item's outcome. It is a pure function of its
// arguments; the result is ascending.
func Report(p Policy, items []Item, outcomes []batch.Outcome) []int {
	var out []int
	switch p {
	case Independent:
		for i, o := range outcomes {
			if o != Succeeded {
				out = append(out, i)
			}
		}
	case Ordered:
		for i, o := range outcomes {
			if o != Succeeded {
				for j := i; j < len(outcomes); j++ {
					out = append(out, j)
				}
				break
			}
		}
	case Stream, StreamPerKey:
		for i, o := range outcomes {
			if o != Succeeded {
				out = append(out, i)
				break
			}
		}
	case OrderedPerGroup, PerPartition:
		failed := map[string]bool{}
		for i, o := range outcomes {
			k := items[i].Key
			if o != Succeeded {
				failed[k] = true
			}
			if failed[k] {
				out = append(out, i)
			}
		}
	}
	return out
}

func logResult(ctx context.Context, cfg Config, items []Item, res *Result, start time.Time) {
	l := cfg.Logger
	if l == nil {
		return
	}
	for i, o := range res.Outcomes {
		if o != Failed {
			continue
		}
		rctx := ctx
		if cfg.RecordContext != nil {
			rctx = cfg.RecordContext(ctx, i)
		}
		err := res.Errors[i]
		attrs := []slog.Attr{
			slog.String("source", string(cfg.Source)),
			slog.String("record", items[i].ID),
			slog.String("key", items[i].Key),
			slog.String("class", batch.Classify(err).String()),
			slog.String("error", err.Error()),
			slog.Int("attempts", res.Attempts(i)),
		}
		var pe *batch.PanicError
		if errors.As(err, &pe) {
			attrs = append(attrs, slog.String("stack", string(pe.Stack)))
		}
		l.LogAttrs(rctx, slog.LevelError, "sluice: record failed", attrs...)
	}
	oldest := res.Oldest
	level := slog.LevelInfo
	if res.Failed > 0 || res.NotAttempted > 0 {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("source", string(cfg.Source)),
		slog.String("policy", cfg.Policy.String()),
		slog.Int("records", len(items)),
		slog.Int("succeeded", res.Succeeded),
		slog.Int("failed", res.Failed),
		slog.Int("not_attempted", res.NotAttempted),
		slog.Int("retries", res.Retried),
		slog.Int("duplicates", res.Duplicated),
		slog.Int("quarantined", res.Quarantined),
		slog.Int("reported", len(res.Report)),
		slog.Bool("function_error", res.Err != nil),
		slog.Duration("duration", res.Duration),
	}
	if !oldest.IsZero() {
		attrs = append(attrs, slog.Int64("oldest_record_age_ms", start.Sub(oldest).Milliseconds()))
	}
	l.LogAttrs(ctx, level, "sluice: batch done", attrs...)
}
