package handlers

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

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/jsonplan"
	"github.com/sluicehq/sluice/internal/windowstate"
)

// DefaultWindowStateLimit is the largest encoded window state a window
// handler returns, in bytes of the state map's JSON. Lambda ends a window
// early when its state passes 1 MB per shard; the default stays under that
// whether a megabyte is 10^6 or 2^20 bytes.
const DefaultWindowStateLimit = 1_000_000

// Window is one tumbling window of one shard, as the final invoke of the
// window sees it.
type Window struct {
	Start, End     time.Time
	ShardID        string
	EventSourceARN string
	// TerminatedEarly is true when Lambda ended the window before End
	// because its state passed 1 MB: the aggregate covers only part of the
	// window, and the rest of the window goes on with a fresh state (and
	// its own final invoke).
	TerminatedEarly bool
}

// WindowStateError is the error of a batch whose aggregate would not fit in
// the window state: folding Record into it made the encoded state Size
// bytes, over Limit. The record is reported as failed, with the state of
// the records before it, so Lambda does not end the window early; when it
// is the batch's first record the invocation fails instead.
type WindowStateError struct {
	Shard       string
	WindowStart time.Time
	Record      string // the sequence number of the record that did not fit
	Size, Limit int
}

func (e *WindowStateError) Error() string {
	return fmt.Sprintf("window state of shard %s (window from %s) would be %d bytes with record %s folded in, over the limit of %d "+
		"(Lambda ends a window whose state passes 1 MB): keep less in the aggregate (counts and sums rather than lists, "+
		"a bounded top-N), or shorten TumblingWindowInSeconds",
		e.Shard, e.WindowStart.UTC().Format(time.RFC3339), e.Size, e.Record, e.Limit)
}

// WithWindowIdempotency makes the final write of a window handler (its
// final function) run at most once per window with idempotency.Do on store:
// Lambda retries a final invoke until it succeeds, and a retry of a final
// whose function succeeded but whose answer was lost (a timeout, a crash)
// is then skipped. The key is the function name (AWS_LAMBDA_FUNCTION_NAME),
// "#window#", the event source ARN, the shard id and the window's start; a
// window that Lambda terminated early adds a hash of its state, since the
// rest of the window ends with a final of its own. opts configure Do (TTL,
// lease, clock, store retries). It applies to NewKinesisWindow and
// NewDynamoDBWindow only.
func WithWindowIdempotency(store idempotency.Store, opts ...idempotency.Option) Option {
	return func(c *config) {
		if store == nil {
			c.errs = append(c.errs, errors.New("WithWindowIdempotency: store is nil"))
		}
		c.window.store, c.window.idemOpts, c.window.set = store, opts, true
	}
}

// WithWindowStateLimit sets the largest encoded window state, in bytes,
// that a window handler returns (default DefaultWindowStateLimit). Past it
// the record that would not fit fails with a *WindowStateError. It applies
// to NewKinesisWindow and NewDynamoDBWindow only.
func WithWindowStateLimit(n int) Option {
	return func(c *config) {
		if n < 64 {
			c.errs = append(c.errs, fmt.Errorf("WithWindowStateLimit(%d): must be at least 64 bytes", n))
		}
		c.window.limit, c.window.set = n, true
	}
}

// windowOptions are the window handler settings in config.
type windowOptions struct {
	handler  bool // the handler is a window handler
	set      bool // a window option was given
	store    idempotency.Store
	idemOpts []idempotency.Option
	limit    int
}

// asWindowHandler marks the config as a window handler's; it comes first so
// that the checks in newConfig know.
func asWindowHandler() Option { return func(c *config) { c.window.handler = true } }

// checkWindow validates the window options against the kind of handler.
func (c *config) checkWindow() {
	w := &c.window
	if !w.handler {
		if w.set {
			c.errs = append(c.errs, errors.New("WithWindowIdempotency and WithWindowStateLimit apply to window handlers only "+
				"(handlers.NewKinesisWindow, handlers.NewDynamoDBWindow)"))
		}
		return
	}
	if w.limit == 0 {
		w.limit = DefaultWindowStateLimit
	}
	if c.idemStore != nil {
		c.errs = append(c.errs, errors.New("WithIdempotency does not apply to window handlers: a record skipped as a duplicate "+
			"would be missing from the aggregate when Lambda retries its batch; use WithWindowIdempotency to write each window once"))
	}
	if c.keyConcurrency > 0 {
		c.errs = append(c.errs, errors.New("WithKeyConcurrency does not apply to window handlers: the fold runs over the records in sequence order"))
	}
}

// KinesisWindowHandler is the Lambda handler for a Kinesis event source
// mapping with TumblingWindowInSeconds. It implements lambda.Handler.
type KinesisWindowHandler[T, S any] struct {
	w *windowHandler[KinesisRecord[T], S]
}

// NewKinesisWindow returns a handler for a Kinesis mapping with tumbling
// windows (TumblingWindowInSeconds). Each window of each shard has an
// aggregate of type S, which starts as S's zero value: fold adds one record
// to it, in sequence order, and final receives it on the window's final
// invoke, to write it somewhere. Between invokes the aggregate travels in
// Lambda's window state, encoded by Sluice (JSON, compressed when that is
// shorter, with a format version); S must round-trip through encoding/json.
//
// fold must be deterministic and have no effect outside its result:
// besides Lambda retrying batches, Sluice folds records again after a fold
// failed (its S may be half-changed) and to find the record that overflows
// the state limit. A failed record is reported as in NewKinesis, and the
// state returned with it is the fold of the records before it only, so it
// is folded once when Lambda retries from it. final runs once per window
// with WithWindowIdempotency; otherwise a retried final invoke runs it
// again. A final error fails the invoke, which Lambda retries until it
// succeeds (the shard waits).
//
// Options as for NewKinesis, except WithIdempotency and WithKeyConcurrency;
// WithWindowIdempotency and WithWindowStateLimit add to them.
func NewKinesisWindow[T, S any](fold func(ctx context.Context, s S, r KinesisRecord[T]) (S, error),
	final func(ctx context.Context, w Window, s S) error, opts ...Option) (*KinesisWindowHandler[T, S], error) {
	w, err := newWindowHandler(sevents.SourceKinesis, fold, final, func(r KinesisRecord[T]) string { return r.Raw.Kinesis.SequenceNumber })
	if err != nil {
		return nil, err
	}
	inner, err := NewKinesis(w.step, append([]Option{asWindowHandler()}, opts...)...)
	if err != nil {
		return nil, err
	}
	inner.x.handler = "handlers.NewKinesisWindow"
	w.inner, w.cfg = inner, inner.cfg
	w.records = func(payload []byte, n int) ([]KinesisRecord[T], error) {
		ev, err := decodeKinesisEvent(payload)
		if err != nil {
			return nil, err
		}
		ev.deaggregate() // as the inner handler sees the records
		if n > len(ev.records) {
			return nil, fmt.Errorf("the event holds %d records, not %d", len(ev.records), n)
		}
		out := make([]KinesisRecord[T], n)
		for i := range out {
			out[i] = kinesisRecordOf[T](&ev, i)
			if ev.dataErrs != nil && ev.dataErrs[i] != nil {
				return nil, ev.dataErrs[i]
			}
			if err := decodeValue(inner.cfg.codec, ev.records[i].Kinesis.Data, &out[i].Value); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return &KinesisWindowHandler[T, S]{w}, nil
}

// MustKinesisWindow is NewKinesisWindow that panics on an error, for use in
// main.
func MustKinesisWindow[T, S any](fold func(ctx context.Context, s S, r KinesisRecord[T]) (S, error),
	final func(ctx context.Context, w Window, s S) error, opts ...Option) *KinesisWindowHandler[T, S] {
	return must(NewKinesisWindow(fold, final, opts...))
}

// Invoke handles one Kinesis tumbling window event and returns the window
// state with the partial batch response.
func (h *KinesisWindowHandler[T, S]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return h.w.invoke(ctx, payload)
}

// DynamoDBWindowHandler is the Lambda handler for a DynamoDB Streams event
// source mapping with TumblingWindowInSeconds. It implements lambda.Handler.
type DynamoDBWindowHandler[T, S any] struct {
	w *windowHandler[DynamoDBRecord[T], S]
}

// NewDynamoDBWindow is NewKinesisWindow for DynamoDB Streams.
func NewDynamoDBWindow[T, S any](fold func(ctx context.Context, s S, r DynamoDBRecord[T]) (S, error),
	final func(ctx context.Context, w Window, s S) error, opts ...Option) (*DynamoDBWindowHandler[T, S], error) {
	w, err := newWindowHandler(sevents.SourceDynamoDB, fold, final, func(r DynamoDBRecord[T]) string { return r.Raw.Change.SequenceNumber })
	if err != nil {
		return nil, err
	}
	inner, err := NewDynamoDB(w.step, append([]Option{asWindowHandler()}, opts...)...)
	if err != nil {
		return nil, err
	}
	inner.x.handler = "handlers.NewDynamoDBWindow"
	w.inner, w.cfg = inner, inner.cfg
	w.records = func(payload []byte, n int) ([]DynamoDBRecord[T], error) {
		// Only the first n records are refolded, and they were folded the
		// first time, so they decode. A malformed record after them (which
		// the inner handler reported by its SequenceNumber, or did not
		// reach) must not fail the refold: encoding/json often stops such a
		// record before its SequenceNumber, which eventscan.RecordArray would
		// take for a record with nothing to report it by.
		recs, errs, err := eventscan.RecordArray("dynamodb", payload, func(*events.DynamoDBEventRecord) string { return "-" })
		if err != nil {
			return nil, err
		}
		if n > len(recs) {
			return nil, fmt.Errorf("the event holds %d records, not %d", len(recs), n)
		}
		out := make([]DynamoDBRecord[T], n)
		for i := range out {
			if errs != nil && errs[i] != nil {
				return nil, errs[i]
			}
			if out[i], err = decodeDynamoDBRecord[T](&recs[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return &DynamoDBWindowHandler[T, S]{w}, nil
}

// MustDynamoDBWindow is NewDynamoDBWindow that panics on an error, for use
// in main.
func MustDynamoDBWindow[T, S any](fold func(ctx context.Context, s S, r DynamoDBRecord[T]) (S, error),
	final func(ctx context.Context, w Window, s S) error, opts ...Option) *DynamoDBWindowHandler[T, S] {
	return must(NewDynamoDBWindow(fold, final, opts...))
}

// Invoke handles one DynamoDB Streams tumbling window event and returns
// the window state with the partial batch response.
func (h *DynamoDBWindowHandler[T, S]) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return h.w.invoke(ctx, payload)
}

// CurrentWindow returns the window of the invoke that ctx belongs to (a
// context given to a window handler's fold or final function), with
// TerminatedEarly always false during folds.
func CurrentWindow(ctx context.Context) (Window, bool) {
	w, ok := ctx.Value(windowKey{}).(windowOf)
	if !ok {
		return Window{}, false
	}
	return w.window(), true
}

// windowHandler is what the Kinesis and DynamoDB window handlers share. R is
// the typed record.
type windowHandler[R, S any] struct {
	source sevents.Source
	fold   func(context.Context, S, R) (S, error)
	final  func(context.Context, Window, S) error
	seq    func(R) string
	// records decodes the first n typed records of an event, for refolds.
	records func(payload []byte, n int) ([]R, error)
	inner   interface {
		Invoke(context.Context, []byte) ([]byte, error)
	}
	cfg    *config
	fields jsonplan.Decoder[eventscan.WindowEvent]
}

func newWindowHandler[R, S any](source sevents.Source, fold func(context.Context, S, R) (S, error), final func(context.Context, Window, S) error,
	seq func(R) string) (*windowHandler[R, S], error) {
	switch {
	case fold == nil:
		return nil, fmt.Errorf("sluice: %s window handler: fold function is nil", source)
	case final == nil:
		return nil, fmt.Errorf("sluice: %s window handler: final function is nil", source)
	}
	return &windowHandler[R, S]{source: source, fold: fold, final: final, seq: seq,
		fields: jsonplan.New[eventscan.WindowEvent]()}, nil
}

// windowOfEvent is the window of an event's tumbling window fields.
func windowOfEvent(f *eventscan.WindowEvent) Window {
	return Window{Start: f.Window.Start, End: f.Window.End, ShardID: f.ShardID, EventSourceARN: f.EventSourceARN,
		TerminatedEarly: f.IsWindowTerminatedEarly}
}

type windowKey struct{}

type windowOf interface{ window() Window }

// windowRun is one invoke's fold: the aggregate so far and how to rebuild
// it.
type windowRun[R, S any] struct {
	ev      *eventscan.WindowEvent
	payload []byte
	state   S
	folded  int  // records folded so far, in order
	dirty   bool // a fold failed or panicked: state may be half-changed
	recs    []R  // the typed records, decoded on demand for refolds
	// lastSeq is the sequence number of the record folded last.
	lastSeq string
}

func (r *windowRun[R, S]) window() Window {
	w := windowOfEvent(r.ev)
	w.TerminatedEarly = false
	return w
}

type finalRun struct{ w Window }

func (f finalRun) window() Window { return f.w }

// step is the per-record function of the inner handler: it folds r into
// the invoke's aggregate.
func (h *windowHandler[R, S]) step(ctx context.Context, r R) error {
	run, ok := ctx.Value(windowKey{}).(*windowRun[R, S])
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
func (h *windowHandler[R, S]) rebuild(ctx context.Context, run *windowRun[R, S], n int) error {
	s, err := h.refold(ctx, run, n)
	if err != nil {
		return err
	}
	run.state, run.folded, run.dirty = s, n, false
	return nil
}

func (h *windowHandler[R, S]) refold(ctx context.Context, run *windowRun[R, S], n int) (S, error) {
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

func (h *windowHandler[R, S]) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var ev eventscan.WindowEvent
	if err := h.fields.Unmarshal(payload, &ev, false); err != nil {
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
	run := &windowRun[R, S]{ev: &ev, payload: payload}
	s, err := windowstate.Decode[S](ev.State)
	if err != nil {
		return nil, err
	}
	run.state = s
	body, err := h.inner.Invoke(context.WithValue(ctx, windowKey{}, run), payload)
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
	if len(state) > h.cfg.window.limit {
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
func (h *windowHandler[R, S]) overflow(ctx context.Context, run *windowRun[R, S], size int) ([]byte, error) {
	limit := h.cfg.window.limit
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
	e := &WindowStateError{Shard: run.ev.ShardID, WindowStart: run.ev.Window.Start, Size: size, Limit: limit}
	if hi > 0 {
		if len(run.recs) < hi {
			recs, err := h.records(run.payload, hi)
			if err != nil {
				return nil, err
			}
			run.recs = recs
		}
		e.Record = h.seq(run.recs[lo])
		// Report the whole Kinesis record when the user record that did
		// not fit has siblings before it: the state is theirs' before.
		j, err := h.firstSibling(ctx, run, lo, e.Record)
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
	h.cfg.logger.LogAttrs(ctx, slog.LevelError, "sluice: window state too large",
		slog.String("source", string(h.source)), slog.String("shard", e.Shard), slog.String("record", e.Record),
		slog.Int("size", e.Size), slog.Int("limit", e.Limit), slog.String("error", e.Error()))
	if lo == 0 || h.cfg.wholeBatch {
		return nil, e
	}
	return batchresponse.WithState(batchresponse.AppendStringFailures(nil, []int{0}, func(int) string { return e.Record }), fits), nil
}

// firstSibling returns the index of the first of the records before record
// i (of the first i) whose sequence number is seq, contiguous up to i: the
// user records of one KPL aggregate share their Kinesis record's sequence
// number, and a report of it redelivers them all. It is i when record i-1
// has another sequence number (always, for records that are not
// aggregated).
func (h *windowHandler[R, S]) firstSibling(_ context.Context, run *windowRun[R, S], i int, seq string) (int, error) {
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
func (h *windowHandler[R, S]) finalInvoke(ctx context.Context, ev *eventscan.WindowEvent) ([]byte, error) {
	s, err := windowstate.Decode[S](ev.State)
	if err != nil {
		return nil, err
	}
	if err := h.callFinal(ctx, ev, s); err != nil {
		return nil, err
	}
	return []byte(`{"state":{},"batchItemFailures":[]}`), nil
}

func (h *windowHandler[R, S]) callFinal(ctx context.Context, ev *eventscan.WindowEvent, s S) error {
	w := windowOfEvent(ev)
	ctx = context.WithValue(ctx, windowKey{}, finalRun{w})
	run := func(ctx context.Context) (_ []byte, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = &batch.PanicError{Value: v, Stack: debug.Stack()}
			}
		}()
		return nil, h.final(ctx, w, s)
	}
	var err error
	if store := h.cfg.window.store; store != nil {
		_, err = idempotency.Do(ctx, store, h.finalKey(ev), run, h.cfg.window.idemOpts...)
	} else {
		_, err = run(ctx)
	}
	if err != nil {
		return fmt.Errorf("sluice: %s window %s to %s of shard %s: final: %w (Lambda retries the final invoke until it succeeds)",
			h.source, w.Start.UTC().Format(time.RFC3339), w.End.UTC().Format(time.RFC3339), w.ShardID, err)
	}
	return nil
}

// finalKey is the idempotency key of a window's final write.
func (h *windowHandler[R, S]) finalKey(ev *eventscan.WindowEvent) string {
	key := ""
	if name, _ := h.cfg.lookupEnv(EnvFunctionName); name != "" {
		key = name + "#"
	}
	key += "window#" + ev.EventSourceARN + "#" + ev.ShardID + "#" + ev.Window.Start.UTC().Format(time.RFC3339Nano)
	if ev.IsWindowTerminatedEarly {
		b, _ := json.Marshal(ev.State) // map keys sorted: a stable hash
		sum := sha256.Sum256(b)
		key += "#early-" + hex.EncodeToString(sum[:8])
	}
	return key
}
