// Package windowrun runs the invokes of a tumbling window handler
// (handlers.NewKinesisWindow, handlers.NewDynamoDBWindow): the fold of a
// batch's records into the window's aggregate, in sequence order; folding
// again from the state Lambda sent after a fold failed or to leave out the
// siblings of a reported KPL user record; the search for the record whose
// fold makes the state too large; and the window's final write, once per
// window with an idempotency store. Package handlers keeps the public
// types and options and hands a Handler the user's functions and its
// settings; the state's format is package windowstate's. Imported by
// handlers only.
package windowrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/windowstate"
)

// Handler is what the Kinesis and DynamoDB window handlers share. R is the
// typed record, S the aggregate.
type Handler[R, S any] struct {
	source sevents.Source
	fold   func(context.Context, S, R) (S, error)
	final  func(context.Context, *eventscan.WindowEvent, S) error
	seq    func(R) string
	// inner runs a batch, calling Step for each record in order; records
	// decodes the first n typed records of an event, for refolds.
	inner   func(context.Context, []byte) ([]byte, error)
	records func(payload []byte, n int) ([]R, error)
	cfg     Config
}

// Config is a window handler's settings.
type Config struct {
	Limit      int  // the largest encoded state answered, in bytes
	WholeBatch bool // a failed record fails the invocation
	Logger     *slog.Logger
	// Store, when not nil, makes the final write run once per window
	// (idempotency.Do with IdemOpts), keyed by FinalKey with the function
	// name that Function returns.
	Store    idempotency.Store
	IdemOpts []idempotency.Option
	Function func() string
	// TooLarge is the error of a batch whose state passes Limit.
	TooLarge func(Overflow) error
}

// Overflow is a batch whose aggregate would not fit the state limit:
// folding Record made the encoded state Size bytes, over Limit.
type Overflow struct {
	Shard       string
	WindowStart time.Time
	Record      string
	Size, Limit int
}

// New returns the window handler of source with the user's fold and final
// functions; seq is a record's sequence number. It is not ready before
// Set.
func New[R, S any](source sevents.Source, fold func(context.Context, S, R) (S, error), final func(context.Context, *eventscan.WindowEvent, S) error,
	seq func(R) string) (*Handler[R, S], error) {
	switch {
	case fold == nil:
		return nil, fmt.Errorf("sluice: %s window handler: fold function is nil", source)
	case final == nil:
		return nil, fmt.Errorf("sluice: %s window handler: final function is nil", source)
	}
	return &Handler[R, S]{source: source, fold: fold, final: final, seq: seq}, nil
}

// Set gives h the inner handler's Invoke (built on Step), the decoding of
// records for refolds, and the settings.
func (h *Handler[R, S]) Set(inner func(context.Context, []byte) ([]byte, error), records func(payload []byte, n int) ([]R, error), cfg Config) {
	h.inner, h.records, h.cfg = inner, records, cfg
}

type key struct{}

// current is what a fold's or a final's context carries.
type current interface {
	event() (ev *eventscan.WindowEvent, final bool)
}

// finalOf marks a final write's context.
type finalOf struct{ ev *eventscan.WindowEvent }

func (f finalOf) event() (*eventscan.WindowEvent, bool) { return f.ev, true }

// Current returns the window event of the invoke that ctx belongs to (a
// context given to a fold or a final function), and whether it is a final
// write's.
func Current(ctx context.Context) (ev *eventscan.WindowEvent, final, ok bool) {
	c, ok := ctx.Value(key{}).(current)
	if !ok {
		return nil, false, false
	}
	ev, final = c.event()
	return ev, final, true
}

// run is one invoke's fold: the aggregate so far and how to rebuild it.
type run[R, S any] struct {
	ev      *eventscan.WindowEvent
	payload []byte
	state   S
	folded  int  // records folded so far, in order
	dirty   bool // a fold failed or panicked: state may be half-changed
	recs    []R  // the typed records, decoded on demand for refolds
	// lastSeq is the sequence number of the record folded last.
	lastSeq string
}

func (r *run[R, S]) event() (*eventscan.WindowEvent, bool) { return r.ev, false }

// Step is the per-record function of the inner handler: it folds r into
// the invoke's aggregate.
func (h *Handler[R, S]) Step(ctx context.Context, r R) error {
	run, ok := ctx.Value(key{}).(*run[R, S])
	if !ok {
		return errors.New("sluice: window fold called outside a window invoke")
	}
	if run.dirty {
		// An in-process retry after a failed fold: start again from the
		// records before this one.
		if err := h.rebuild(ctx, run, run.folded); err != nil {
			return err
		}
	}
	run.dirty = true
	s, err := h.fold(ctx, run.state, r)
	if err != nil {
		return err
	}
	run.state, run.dirty = s, false
	run.folded++
	run.lastSeq = h.seq(r)
	return nil
}

// rebuild sets run.state to the fold of the event's first n records.
func (h *Handler[R, S]) rebuild(ctx context.Context, run *run[R, S], n int) error {
	s, err := h.refold(ctx, run, n)
	if err != nil {
		return err
	}
	run.state, run.folded, run.dirty = s, n, false
	return nil
}

func (h *Handler[R, S]) refold(ctx context.Context, run *run[R, S], n int) (S, error) {
	var s S
	if len(run.recs) < n {
		recs, err := h.records(run.payload, n)
		if err != nil {
			return s, fmt.Errorf("sluice: %s window: decoding the batch again to refold it: %w", h.source, err)
		}
		run.recs = recs
	}
	s, err := windowstate.Decode[S](run.ev.State)
	if err != nil {
		return s, err
	}
	for i := 0; i < n; i++ {
		if s, err = h.fold(ctx, s, run.recs[i]); err != nil {
			return s, fmt.Errorf("sluice: %s window: record %s folded the first time but failed when folded again "+
				"(a fold must be deterministic): %w", h.source, h.seq(run.recs[i]), err)
		}
	}
	return s, nil
}

// Invoke handles one tumbling window event and returns the window state
// with the partial batch response.
func (h *Handler[R, S]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := eventscan.DecodeWindow(payload)
	if err != nil {
		return nil, fmt.Errorf("sluice: %s window handler: the event is not a %s event: %w", h.source, h.source, err)
	}
	if ev.Window == nil {
		return nil, fmt.Errorf("sluice: %s window handler: the event has no tumbling window (no \"window\" field): "+
			"give the event source mapping a TumblingWindowInSeconds, or build the function with handlers.New%s",
			h.source, map[sevents.Source]string{sevents.SourceKinesis: "Kinesis", sevents.SourceDynamoDB: "DynamoDB"}[h.source])
	}
	if ev.IsFinalInvokeForWindow && len(ev.Records) == 0 {
		return h.finalInvoke(ctx, &ev)
	}
	run := &run[R, S]{ev: &ev, payload: payload}
	s, err := windowstate.Decode[S](ev.State)
	if err != nil {
		return nil, err
	}
	run.state = s
	body, err := h.inner(context.WithValue(ctx, key{}, run), payload)
	if err != nil {
		return nil, err
	}
	reported, err := batchresponse.FirstReported(body)
	if err != nil {
		return nil, fmt.Errorf("sluice: window handler: %w", err)
	}
	if run.dirty { // the last fold failed: its record is the one reported
		if err := h.rebuild(ctx, run, run.folded); err != nil {
			return nil, err
		}
	}
	if reported != "" && run.folded > 0 && reported == run.lastSeq {
		// The reported record is the first not folded. When records folded
		// before it share its sequence number (user records of one KPL
		// aggregate), Lambda redelivers them with it: the state must not
		// hold them yet.
		if j, err := h.firstSibling(ctx, run, run.folded, reported); err != nil {
			return nil, err
		} else if j < run.folded {
			if err := h.rebuild(ctx, run, j); err != nil {
				return nil, err
			}
		}
	}
	state, err := windowstate.Encode(run.state)
	if err != nil {
		return nil, fmt.Errorf("sluice: %s window of shard %s: %w", h.source, ev.ShardID, err)
	}
	if len(state) > h.cfg.Limit {
		return h.overflow(ctx, run, len(state))
	}
	if ev.IsFinalInvokeForWindow { // a final invoke with records: close the window on their fold
		if reported != "" {
			return nil, fmt.Errorf("sluice: %s window of shard %s: the final invoke's record %s failed; the window closes once it succeeds",
				h.source, ev.ShardID, reported)
		}
		if err := h.callFinal(ctx, &ev, run.state); err != nil {
			return nil, err
		}
		return []byte(`{"state":{},"batchItemFailures":[]}`), nil
	}
	return batchresponse.WithState(body, state), nil
}

// overflow answers a batch whose aggregate does not fit the state limit:
// it finds the first record whose fold makes the state too large, reports
// it with the state of the records before it, or fails the invocation when
// it is the first record. The batch's log line, metrics and WithOnBatch
// report, written before the state was encoded, count the records as
// folded (they were); this error line says what the answer became.
func (h *Handler[R, S]) overflow(ctx context.Context, run *run[R, S], size int) ([]byte, error) {
	limit := h.cfg.Limit
	lo, hi := 0, run.folded // the fold of lo records fits (the state Lambda sent did), of hi does not
	var fits []byte
	if hi > 0 {
		s, err := h.refold(ctx, run, 0)
		if err != nil {
			return nil, err
		}
		if fits, err = windowstate.Encode(s); err != nil {
			return nil, err
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		s, err := h.refold(ctx, run, mid)
		if err != nil {
			return nil, err
		}
		enc, err := windowstate.Encode(s)
		if err != nil {
			return nil, err
		}
		if len(enc) <= limit {
			lo, fits = mid, enc
		} else {
			hi, size = mid, len(enc)
		}
	}
	o := Overflow{Shard: run.ev.ShardID, WindowStart: run.ev.Window.Start, Size: size, Limit: limit}
	if hi > 0 {
		if len(run.recs) < hi {
			recs, err := h.records(run.payload, hi)
			if err != nil {
				return nil, err
			}
			run.recs = recs
		}
		o.Record = h.seq(run.recs[lo])
		// Report the whole Kinesis record when the user record that did
		// not fit has siblings before it: the state is theirs' before.
		j, err := h.firstSibling(ctx, run, lo, o.Record)
		if err != nil {
			return nil, err
		}
		if j < lo {
			s, err := h.refold(ctx, run, j)
			if err != nil {
				return nil, err
			}
			if fits, err = windowstate.Encode(s); err != nil {
				return nil, err
			}
			lo = j
		}
	}
	e := h.cfg.TooLarge(o)
	h.cfg.Logger.LogAttrs(ctx, slog.LevelError, "sluice: window state too large",
		slog.String("source", string(h.source)), slog.String("shard", o.Shard), slog.String("record", o.Record),
		slog.Int("size", o.Size), slog.Int("limit", o.Limit), slog.String("error", e.Error()))
	if lo == 0 || h.cfg.WholeBatch {
		return nil, e
	}
	return batchresponse.WithState(batchresponse.AppendStringFailures(nil, []int{0}, func(int) string { return o.Record }), fits), nil
}

// firstSibling returns the index of the first of the records before record
// i (of the first i) whose sequence number is seq, contiguous up to i: the
// user records of one KPL aggregate share their Kinesis record's sequence
// number, and a report of it redelivers them all. It is i when record i-1
// has another sequence number (always, for records that are not
// aggregated).
func (h *Handler[R, S]) firstSibling(_ context.Context, run *run[R, S], i int, seq string) (int, error) {
	if len(run.recs) < i {
		recs, err := h.records(run.payload, i)
		if err != nil {
			return 0, fmt.Errorf("sluice: %s window: decoding the batch again: %w", h.source, err)
		}
		run.recs = recs
	}
	j := i
	for j > 0 && h.seq(run.recs[j-1]) == seq {
		j--
	}
	return j, nil
}

// finalInvoke runs the final function on the window's aggregate.
func (h *Handler[R, S]) finalInvoke(ctx context.Context, ev *eventscan.WindowEvent) ([]byte, error) {
	s, err := windowstate.Decode[S](ev.State)
	if err != nil {
		return nil, err
	}
	if err := h.callFinal(ctx, ev, s); err != nil {
		return nil, err
	}
	return []byte(`{"state":{},"batchItemFailures":[]}`), nil
}

func (h *Handler[R, S]) callFinal(ctx context.Context, ev *eventscan.WindowEvent, s S) error {
	ctx = context.WithValue(ctx, key{}, finalOf{ev})
	run := func(ctx context.Context) (_ []byte, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &batch.PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		return nil, h.final(ctx, ev, s)
	}
	var err error
	if store := h.cfg.Store; store != nil {
		_, err = idempotency.Do(ctx, store, FinalKey(h.cfg.Function(), ev), run, h.cfg.IdemOpts...)
	} else {
		_, err = run(ctx)
	}
	if err != nil {
		return fmt.Errorf("sluice: %s window %s to %s of shard %s: final: %w (Lambda retries the final invoke until it succeeds)",
			h.source, ev.Window.Start.UTC().Format(time.RFC3339), ev.Window.End.UTC().Format(time.RFC3339), ev.ShardID, err)
	}
	return nil
}

// FinalKey is the idempotency key of a window's final write: the function
// name (when there is one), "window", the event source ARN, the shard and
// the window's start; a window that Lambda terminated early adds a hash of
// its state, since the rest of the window ends with a final of its own.
func FinalKey(function string, ev *eventscan.WindowEvent) string {
	key := ""
	if function != "" {
		key = function + "#"
	}
	key += "window#" + ev.EventSourceARN + "#" + ev.ShardID + "#" + ev.Window.Start.UTC().Format(time.RFC3339Nano)
	if ev.IsWindowTerminatedEarly {
		b, _ := json.Marshal(ev.State) // map keys sorted: a stable hash
		sum := sha256.Sum256(b)
		key += "#early-" + hex.EncodeToString(sum[:8])
	}
	return key
}
