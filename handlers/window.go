package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/windowrun"
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
	w *windowrun.Handler[KinesisRecord[T], S]
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
	inner, err := NewKinesis(w.Step, append([]Option{asWindowHandler()}, opts...)...)
	if err != nil {
		return nil, err
	}
	inner.x.handler = "handlers.NewKinesisWindow"
	w.Set(inner.Invoke, func(payload []byte, n int) ([]KinesisRecord[T], error) {
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
	}, inner.cfg.windowRun())
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
	return h.w.Invoke(ctx, payload)
}

// DynamoDBWindowHandler is the Lambda handler for a DynamoDB Streams event
// source mapping with TumblingWindowInSeconds. It implements lambda.Handler.
type DynamoDBWindowHandler[T, S any] struct {
	w *windowrun.Handler[DynamoDBRecord[T], S]
}

// NewDynamoDBWindow is NewKinesisWindow for DynamoDB Streams.
func NewDynamoDBWindow[T, S any](fold func(ctx context.Context, s S, r DynamoDBRecord[T]) (S, error),
	final func(ctx context.Context, w Window, s S) error, opts ...Option) (*DynamoDBWindowHandler[T, S], error) {
	w, err := newWindowHandler(sevents.SourceDynamoDB, fold, final, func(r DynamoDBRecord[T]) string { return r.Raw.Change.SequenceNumber })
	if err != nil {
		return nil, err
	}
	inner, err := NewDynamoDB(w.Step, append([]Option{asWindowHandler()}, opts...)...)
	if err != nil {
		return nil, err
	}
	inner.x.handler = "handlers.NewDynamoDBWindow"
	w.Set(inner.Invoke, func(payload []byte, n int) ([]DynamoDBRecord[T], error) {
		// Only the first n records are refolded, and they were folded the
		// first time, so they decode. A malformed record after them (which
		// the inner handler reported by its SequenceNumber, or did not
		// reach) fails alone, not the refold.
		ev, errs, err := eventscan.DecodeDynamoDB(payload, true)
		if err != nil {
			return nil, err
		}
		recs := ev.Records
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
	}, inner.cfg.windowRun())
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
	return h.w.Invoke(ctx, payload)
}

// CurrentWindow returns the window of the invoke that ctx belongs to (a
// context given to a window handler's fold or final function), with
// TerminatedEarly always false during folds.
func CurrentWindow(ctx context.Context) (Window, bool) {
	ev, final, ok := windowrun.Current(ctx)
	if !ok {
		return Window{}, false
	}
	w := windowOfEvent(ev)
	w.TerminatedEarly = w.TerminatedEarly && final
	return w, true
}

// newWindowHandler makes the window handler of source (windowrun.Handler);
// its caller builds the inner handler on its Step and sets it.
func newWindowHandler[R, S any](source sevents.Source, fold func(context.Context, S, R) (S, error), final func(context.Context, Window, S) error,
	seq func(R) string) (*windowrun.Handler[R, S], error) {
	var fin func(context.Context, *eventscan.WindowEvent, S) error
	if final != nil {
		fin = func(ctx context.Context, ev *eventscan.WindowEvent, s S) error {
			return final(ctx, windowOfEvent(ev), s)
		}
	}
	return windowrun.New(source, fold, fin, seq)
}

// windowRun is the window settings of c, a window handler's inner handler's
// configuration.
func (c *config) windowRun() windowrun.Config {
	return windowrun.Config{Limit: c.window.limit, WholeBatch: c.wholeBatch, Logger: c.logger,
		Store: c.window.store, IdemOpts: c.window.idemOpts,
		Function: c.keyPrefix,
		TooLarge: func(o windowrun.Overflow) error {
			return &WindowStateError{Shard: o.Shard, WindowStart: o.WindowStart, Record: o.Record, Size: o.Size, Limit: o.Limit}
		}}
}

// windowOfEvent is the window of an event's tumbling window fields.
func windowOfEvent(f *eventscan.WindowEvent) Window {
	return Window{Start: f.Window.Start, End: f.Window.End, ShardID: f.ShardID, EventSourceARN: f.EventSourceARN,
		TerminatedEarly: f.IsWindowTerminatedEarly}
}
