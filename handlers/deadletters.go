package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/deadletter"
	"github.com/sluicehq/sluice/internal/engine"
)

// WithDeadLetters quarantines records that cannot be processed: a record
// that fails permanently (batch.Permanent, a decode error), or whose
// attempts reached dlq.WithMaxAttempts, is sent to dest with everything
// needed to repair and replay it (a dlq.Envelope holding the record exactly
// as it was in the event) and then counts as handled, so the stream or
// queue moves past it. The layer wraps the whole chain, so it sees a
// record's final error, after in-process retries and idempotency.
//
// Attempts are counted across invocations: SQS handlers read each message's
// ApproximateReceiveCount; stream and Kafka handlers need dlq.WithAttempts
// with dlq.WithMaxAttempts. With an attempts store, a stream or Kafka record
// that crashes or times out the whole function is quarantined (reason
// "crash") without running once Lambda's BisectBatchOnFunctionError has
// isolated it and it reached the limit (see package dlq).
//
// On an SQS standard queue the records a batch quarantines are sent in one
// dest.Send after every record ran. On an ordered source (an SQS FIFO
// queue, a Kinesis or DynamoDB Streams shard, a Kafka partition) nothing
// after a record in its lane may run before its quarantine is durable, so
// each quarantined record is sent on its own before the lane goes on. A
// record whose envelope dest did not accept (a failed send, a
// half-successful one, a panic, the deadline) is reported as failed with a
// *QuarantineError, so Lambda delivers it again: no record is lost, and on
// an ordered source its lane stops there, as after any failure. Records
// quarantined are counted in RecordOutcome.Quarantined,
// BatchReport.Quarantined and the batch log line.
//
// An SQS FIFO message's ApproximateReceiveCount also counts the deliveries
// in which it waited behind a failing message of its group and never ran,
// so FIFO batches count the failures of each message in the dlq.WithAttempts
// store instead (a store in memory when none is given, which forgets its
// counts when the execution environment goes: it can count too few, never
// too many). A healthy message costs no request.
func WithDeadLetters(dest dlq.Destination, opts ...dlq.Option) Option {
	return func(c *config) {
		if dest == nil {
			c.errs = append(c.errs, errors.New("WithDeadLetters: destination is nil"))
		}
		cfg, err := deadletter.NewConfig(opts...)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithDeadLetters: %w", err))
		}
		c.dlDest, c.dlCfg, c.dlSet = dest, cfg, true
	}
}

// QuarantineError is the error of a record that was to be quarantined but
// whose envelope the destination did not accept. The record is reported as
// failed, so Lambda delivers it again.
type QuarantineError struct {
	// Envelope is what was to be sent: its Reason, Error and Attempts say
	// why the record was quarantined.
	Envelope *dlq.Envelope
	// Err is why the destination did not accept it.
	Err error
}

func (e *QuarantineError) Error() string {
	return fmt.Sprintf("record %s was to be quarantined (%s: %s) but the dead-letter destination did not accept it: %v; "+
		"it is reported as failed, so Lambda delivers it again (on an ordered source nothing after it in its lane ran)",
		e.Envelope.RecordID, e.Envelope.Reason, e.Envelope.Error, e.Err)
}

func (e *QuarantineError) Unwrap() error { return e.Err }

// sendReserve is the time kept after a destination's Send, before the
// Lambda deadline, to revoke what it did not accept and answer.
const sendReserve = 100 * time.Millisecond

// dlLayer is the dead-letter layer: a before, a guard and an after.
type dlLayer[R any] struct {
	dest dlq.Destination
	cfg  dlq.Config
	sqs  bool // standard queues count attempts with ApproximateReceiveCount
	// fifo counts the failures of SQS FIFO messages: cfg.Attempts, else a
	// store in memory.
	fifo     dlq.AttemptsStore
	function string
	now      func() time.Time
	logger   *slog.Logger
}

// dlBatch is one invocation's dead-letter state.
type dlBatch[R any] struct {
	b         *hookBatch[R]
	requestID string
	// ordered: the batch's lanes keep order (every source but SQS
	// standard), so a quarantine is sent before its lane goes on.
	ordered bool
	begun   bool         // Begin counted the lone record's delivery
	head    dlq.Attempts // what Begin returned
	blamed  bool         // the lone record is quarantined without running
}

type dlBatchKey struct{}

// sent is the park of a record whose envelope the destination already
// accepted (an ordered lane's quarantine): the batch's after hook leaves it
// alone.
type sent struct{ env *dlq.Envelope }

func (d *dlLayer[R]) layer() layer[R] {
	return layer[R]{before: d.before, guard: d.guard, after: d.after}
}

func newDLLayer[R any](c *config, kind sourceKind) *dlLayer[R] {
	l := &dlLayer[R]{dest: c.dlDest, cfg: c.dlCfg, sqs: kind == kindSQS, now: c.now, logger: c.logger}
	l.function, _ = c.lookupEnv(EnvFunctionName)
	if l.sqs {
		l.fifo = c.dlCfg.Attempts
		if l.fifo == nil {
			l.fifo = dlq.NewMemory(0)
		}
	}
	return l
}

// key is the attempts-store key of record i (dlq.AttemptsKeyOf).
func (d *dlLayer[R]) key(b *hookBatch[R], i int) string {
	var e dlq.Envelope
	b.describe(i, &e)
	e.FunctionName, e.RecordID = d.function, b.items[i].ID
	return dlq.AttemptsKeyOf(&e)
}

func (d *dlLayer[R]) before(ctx context.Context, b *hookBatch[R]) context.Context {
	st := &dlBatch[R]{b: b, ordered: b.policy != engine.Independent}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		st.requestID = lc.AwsRequestID
	}
	if s := d.cfg.Attempts; s != nil && !d.sqs && len(b.items) == 1 {
		a, err := s.Begin(ctx, d.key(b, 0), d.now())
		if err != nil {
			d.logger.LogAttrs(ctx, slog.LevelWarn, "sluice: counting the attempt of a lone record failed; a crash in this invocation will not be counted",
				slog.String("source", string(b.source)), slog.String("record", b.items[0].ID), slog.String("error", err.Error()))
		} else {
			st.begun, st.head = true, a
			st.blamed = deadletter.Blame(a, true, d.cfg.MaxAttempts)
		}
	}
	return context.WithValue(ctx, dlBatchKey{}, st)
}

// guard runs record i with next, parking it when it is blamed for crashes
// or fails for good.
func (d *dlLayer[R]) guard(ctx context.Context, w, i int, b *hookBatch[R], next step[R]) (err error) {
	st, _ := ctx.Value(dlBatchKey{}).(*dlBatch[R])
	if st == nil {
		return next(ctx, w, i, b)
	}
	if i == 0 && st.blamed {
		a := st.head
		text := fmt.Sprintf("the function crashed or timed out, with no answer, on %d deliveries of this record alone in its batch", a.Isolated-1)
		if a.LastError != "" {
			text += "; last error answered: " + a.LastError
		}
		first := a.FirstFailure
		if first.IsZero() {
			first = d.now()
		}
		if env := d.envelope(ctx, st, i, dlq.ReasonCrash, dlq.ClassCrash, text, a.Count, first); env != nil {
			return d.quarantine(ctx, st, env)
		}
		return errors.New("sluice: record is blamed for crashing the function but could not be quarantined: its bytes are not in the event")
	}
	defer func() {
		if v := recover(); v != nil {
			err = &batch.PanicError{Value: v, Stack: debug.Stack()}
		}
		if err != nil {
			err = d.failed(ctx, st, i, err)
		}
	}()
	return next(ctx, w, i, b)
}

// failed decides what becomes of record i, which failed with err: it is
// parked (and nil returned) or err is returned and the record reported.
func (d *dlLayer[R]) failed(ctx context.Context, st *dlBatch[R], i int, err error) error {
	if errors.Is(err, idempotency.ErrInProgress) || errors.Is(err, idempotency.ErrLaneStopped) {
		if i == 0 && st.begun { // answered: Begin's count must not read as a crash (Isolated)
			_, _ = d.cfg.Attempts.Fail(ctx, d.key(st.b, i), true, dlq.Failure{Time: d.now(), Error: deadletter.CapText(err.Error()), Class: batch.Classify(err).String()})
		}
		return err // running elsewhere: not this record's failure
	}
	class := batch.Classify(err)
	now := d.now()
	text := err.Error()
	attempts, first := 1, now
	switch {
	case d.sqs && st.ordered:
		// FIFO: ApproximateReceiveCount also counts deliveries in which the
		// message waited behind a failing one and never ran; count the
		// failures instead, never more than the receives.
		var e dlq.Envelope
		st.b.describe(i, &e)
		a, serr := d.fifo.Fail(ctx, d.key(st.b, i), false, dlq.Failure{Time: now, Error: deadletter.CapText(text), Class: class.String()})
		if serr != nil {
			d.logger.LogAttrs(ctx, slog.LevelWarn, "sluice: counting a failed attempt failed; the record is quarantined only if it failed permanently",
				slog.String("source", string(st.b.source)), slog.String("record", st.b.items[i].ID), slog.String("error", serr.Error()))
			if class != batch.ClassPermanent {
				return err
			}
		} else {
			attempts, first = deadletter.FIFOAttempts(a.Count, e.Attempts), a.FirstFailure
		}
	case d.sqs:
		var e dlq.Envelope
		st.b.describe(i, &e)
		attempts = max(1, e.Attempts)
	case d.cfg.Attempts != nil:
		counted := i == 0 && st.begun
		a, serr := d.cfg.Attempts.Fail(ctx, d.key(st.b, i), counted, dlq.Failure{Time: now, Error: deadletter.CapText(text), Class: class.String()})
		if serr != nil {
			d.logger.LogAttrs(ctx, slog.LevelWarn, "sluice: counting a failed attempt failed; the record is quarantined only if it failed permanently",
				slog.String("source", string(st.b.source)), slog.String("record", st.b.items[i].ID), slog.String("error", serr.Error()))
			if counted {
				attempts = st.head.Count
			}
			if class != batch.ClassPermanent {
				return err
			}
		} else {
			attempts, first = a.Count, a.FirstFailure
		}
	}
	reason := deadletter.Quarantine(class, attempts, d.cfg.MaxAttempts)
	if reason == "" {
		return err
	}
	env := d.envelope(ctx, st, i, reason, class.String(), text, attempts, first)
	if env == nil {
		return err // its bytes could not be found: report it rather than lose it
	}
	return d.quarantine(ctx, st, env)
}

// quarantine parks the record being run under ctx with env. In an ordered
// lane it first sends env, so nothing after the record runs before its
// quarantine is durable: when the send fails, the record fails with a
// *QuarantineError and its lane stops as after any failure. Elsewhere the
// batch's after hook sends every park at once.
func (d *dlLayer[R]) quarantine(ctx context.Context, st *dlBatch[R], env *dlq.Envelope) error {
	if !st.ordered {
		engine.Park(ctx, env)
		return nil
	}
	if err := deadletter.Rejected(d.send(ctx, []*dlq.Envelope{env}), 1)[0]; err != nil {
		return &QuarantineError{Envelope: env, Err: err}
	}
	d.logQuarantined(ctx, st.b.source, env)
	engine.Park(ctx, sent{env})
	return nil
}

func (d *dlLayer[R]) logQuarantined(ctx context.Context, source sevents.Source, e *dlq.Envelope) {
	d.logger.LogAttrs(ctx, slog.LevelWarn, "sluice: record quarantined",
		slog.String("source", string(source)), slog.String("record", e.RecordID), slog.String("reason", e.Reason),
		slog.String("class", e.Class), slog.Int("attempts", e.Attempts), slog.String("error", e.Error))
}

// envelope builds record i's envelope, or returns nil when the record's
// bytes cannot be found in the event.
func (d *dlLayer[R]) envelope(_ context.Context, st *dlBatch[R], i int, reason, class, text string, attempts int, first time.Time) *dlq.Envelope {
	raw := st.b.raw(i)
	if raw == nil {
		return nil
	}
	now := d.now()
	if first.IsZero() || first.After(now) {
		first = now
	}
	e := &dlq.Envelope{}
	st.b.describe(i, e)
	e.Version = dlq.Version
	e.RecordID = st.b.items[i].ID
	e.Attempts = attempts
	e.FirstFailure, e.LastFailure = first.UTC(), now.UTC()
	e.Error, e.Class, e.Reason = deadletter.CapText(text), class, reason
	e.FunctionName, e.RequestID = d.function, st.requestID
	e.Record = bytes.Clone(raw)
	return e
}

// after sends the batch's parked records in one Send and revokes each one
// the destination did not accept. Records an ordered lane sent already
// (parked as sent) are left alone.
func (d *dlLayer[R]) after(ctx context.Context, b *hookBatch[R], res *engine.Result) {
	if res.Quarantined == 0 {
		return
	}
	var envs []*dlq.Envelope
	var idx []int
	for i := range res.Outcomes {
		if e, ok := res.Park(i).(*dlq.Envelope); ok {
			envs, idx = append(envs, e), append(idx, i)
		}
	}
	if len(envs) == 0 {
		return
	}
	errs := deadletter.Rejected(d.send(ctx, envs), len(envs))
	for k, e := range envs {
		i := idx[k]
		if err := errs[k]; err != nil {
			res.Unpark(i, &QuarantineError{Envelope: e, Err: err})
			continue
		}
		d.logQuarantined(ctx, b.source, e)
	}
}

// send calls the destination before the Lambda deadline, turning a panic
// into an error.
func (d *dlLayer[R]) send(ctx context.Context, envs []*dlq.Envelope) (err error) {
	if dl, ok := ctx.Deadline(); ok {
		if dl.Sub(d.now()) <= sendReserve {
			return errors.New("sluice: too close to the Lambda deadline to send quarantined records")
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-sendReserve))
		defer cancel()
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("dead-letter destination panicked: %v", v)
		}
	}()
	return d.dest.Send(ctx, envs)
}
