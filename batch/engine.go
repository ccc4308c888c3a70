package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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

// Outcome is what became of one record.
type Outcome uint8

const (
	// NotAttempted records were not run: the deadline was near, or an
	// earlier record they must follow failed.
	NotAttempted Outcome = iota
	// Succeeded records are done.
	Succeeded
	// Failed records were run and failed.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case NotAttempted:
		return "not-attempted"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// Config configures one Run.
type Config struct {
	Policy Policy
	// Concurrency bounds how many records (Independent) or ordering keys
	// (the per-key policies) run at once. Values below 1 mean 1. Ordered and
	// Stream always run one record at a time.
	Concurrency int
	// Margin is the deadline guard: a record is started only while more than
	// Margin is left before ctx's deadline, and handlers see a context whose
	// deadline is Margin earlier than the Lambda deadline.
	Margin time.Duration
	// ReportNoProgress, when true, answers a batch in which no record
	// succeeded with a partial response naming them, instead of ErrNoProgress.
	ReportNoProgress bool
	// Source names the source in logs ("kinesis", "sqs", ...).
	Source string
	// Logger receives one summary line per batch and one line per failed
	// record. Nil means no logging.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Result is what Run decided.
type Result struct {
	Outcomes []Outcome // per item
	// Errors says, per item, why it failed or was not attempted; it is nil
	// when every item succeeded. Use Error(i).
	Errors []error
	// Report lists, ascending, the indexes of the items to report as batch
	// item failures. It is empty when Err is set.
	Report []int
	// Err, when non-nil, is a function error: the whole invocation fails.
	Err error

	Succeeded, Failed, NotAttempted int
	Duration                        time.Duration
}

// Error returns why item i failed or was not attempted, or nil.
func (r *Result) Error(i int) error {
	if r.Errors == nil {
		return nil
	}
	return r.Errors[i]
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
		outcomes: make([]Outcome, n),
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
					r.errs[i] = ErrDeadline
				} else {
					r.errs[i] = ErrStopped
				}
			}
		}
	}
	res.Errors = r.errs
	if n > 0 && res.Succeeded == 0 && !cfg.ReportNoProgress {
		res.Err = noProgressError(items, r.outcomes, r.errs)
	} else {
		res.Report = Report(cfg.Policy, items, r.outcomes)
	}
	res.Duration = now().Sub(start)
	logResult(cfg, items, res, start)
	return res
}

func noProgressError(items []Item, outcomes []Outcome, errs []error) error {
	for i, o := range outcomes {
		if o == Failed {
			return fmt.Errorf("%w: %d records; first failure on record %s: %w", ErrNoProgress, len(items), items[i].ID, errs[i])
		}
	}
	return fmt.Errorf("%w: %d records, none attempted: %w", ErrNoProgress, len(items), errs[0])
}

type runner struct {
	items   []Item
	cfg     Config
	now     func() time.Time
	process Process

	outcomes []Outcome
	errs     []error // allocated on the first failure
	errsOnce sync.Once

	hasDeadline bool
	guard       time.Time   // start no record at or after this instant
	expired     atomic.Bool // the guard tripped: start nothing more
	halted      atomic.Bool // Ordered/Stream: a failure stops the batch
	lowest      atomic.Int64
}

func (r *runner) run(ctx context.Context) {
	n := len(r.items)
	if n == 0 {
		return
	}
	workers := max(r.cfg.Concurrency, 1)
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
			if !r.step(ctx, 0, i) {
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
				r.lane(ctx, w, lanes[l])
			}
		})
	case r.cfg.Policy == Independent && workers > 1:
		var next atomic.Int64
		r.parallel(min(workers, n), func(w int) {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || !r.step(ctx, w, i) && r.expired.Load() {
					return
				}
			}
		})
	default:
		for i := 0; i < n; i++ {
			if !r.step(ctx, 0, i) && (r.expired.Load() || r.halted.Load()) {
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
func (r *runner) lane(ctx context.Context, w int, lane []int) {
	for _, i := range lane {
		if !r.step(ctx, w, i) {
			return
		}
	}
}

// step runs item i if the guard, the policy and earlier failures allow it,
// and reports whether it succeeded.
func (r *runner) step(ctx context.Context, w, i int) bool {
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
	err := r.call(ctx, w, i)
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
			err = &PanicError{Value: v, Stack: debug.Stack()}
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
func Report(p Policy, items []Item, outcomes []Outcome) []int {
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

func logResult(cfg Config, items []Item, res *Result, start time.Time) {
	l := cfg.Logger
	if l == nil {
		return
	}
	ctx := context.Background()
	for i, o := range res.Outcomes {
		if o != Failed {
			continue
		}
		err := res.Errors[i]
		attrs := []slog.Attr{
			slog.String("source", cfg.Source),
			slog.String("record", items[i].ID),
			slog.String("key", items[i].Key),
			slog.String("class", Classify(err).String()),
			slog.String("error", err.Error()),
		}
		var pe *PanicError
		if errors.As(err, &pe) {
			attrs = append(attrs, slog.String("stack", string(pe.Stack)))
		}
		l.LogAttrs(ctx, slog.LevelError, "sluice: record failed", attrs...)
	}
	var oldest time.Time
	for _, it := range items {
		if !it.Arrival.IsZero() && (oldest.IsZero() || it.Arrival.Before(oldest)) {
			oldest = it.Arrival
		}
	}
	level := slog.LevelInfo
	if res.Failed > 0 || res.NotAttempted > 0 {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("source", cfg.Source),
		slog.String("policy", cfg.Policy.String()),
		slog.Int("records", len(items)),
		slog.Int("succeeded", res.Succeeded),
		slog.Int("failed", res.Failed),
		slog.Int("not_attempted", res.NotAttempted),
		slog.Int("reported", len(res.Report)),
		slog.Bool("function_error", res.Err != nil),
		slog.Duration("duration", res.Duration),
	}
	if !oldest.IsZero() {
		attrs = append(attrs, slog.Int64("oldest_record_age_ms", start.Sub(oldest).Milliseconds()))
	}
	l.LogAttrs(ctx, level, "sluice: batch done", attrs...)
}
