package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/fetch"
	"github.com/sluicehq/sluice/internal/redrive"
	"github.com/sluicehq/sluice/invocation"
)

// ErrTrimmed is wrapped by the error for a range that starts before the
// oldest record the stream still holds (the same sentinel as
// fetch.ErrTrimmed).
var ErrTrimmed = fetch.ErrTrimmed

// DefaultBatchSize is the BatchSize of a replay that names none: the
// default of Kinesis, DynamoDB Streams and Kafka mappings.
const DefaultBatchSize = 100

// MaxBatchSize is the largest BatchSize (a Kinesis mapping's).
const MaxBatchSize = 10000

// Position is where a range starts (Range.From) or ends (Range.To). At
// most one field is set; the zero Position is, for From, the oldest record
// the stream holds (TRIM_HORIZON), for To, the last record there when the
// replay started.
type Position struct {
	// TrimHorizon is the oldest record the stream holds (From only).
	TrimHorizon bool
	// Time is a record arrival time (Kinesis ApproximateArrivalTimestamp,
	// DynamoDB ApproximateCreationDateTime, the Kafka record's timestamp):
	// From starts at the first record that arrived at or after it
	// (AT_TIMESTAMP); To ends before the first record that arrived at or
	// after it.
	Time time.Time
	// Number is a Kinesis or DynamoDB sequence number of the range's one
	// shard, or a Kafka offset of its one partition: From starts at that
	// record (AT_SEQUENCE_NUMBER), To ends with it (included).
	Number string
}

// IsZero reports whether p names no position.
func (p Position) IsZero() bool { return !p.TrimHorizon && p.Time.IsZero() && p.Number == "" }

func (p Position) String() string {
	switch {
	case p.TrimHorizon:
		return "TRIM_HORIZON"
	case !p.Time.IsZero():
		return p.Time.UTC().Format(time.RFC3339Nano)
	case p.Number != "":
		return p.Number
	}
	return "now"
}

// ParsePosition reads a position as the sluice command takes it:
// TRIM_HORIZON, a time in RFC 3339 (2026-12-01T10:00:00Z), or a sequence
// number or offset (decimal digits). "" and "now" are the zero Position.
func ParsePosition(s string) (Position, error) {
	switch {
	case s == "" || strings.EqualFold(s, "now"):
		return Position{}, nil
	case strings.EqualFold(s, "TRIM_HORIZON"):
		return Position{TrimHorizon: true}, nil
	case isDigits(s):
		return Position{Number: s}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Position{}, fmt.Errorf("position %q: want TRIM_HORIZON, a time such as 2026-12-01T10:00:00Z, or a sequence number or offset", s)
	}
	return Position{Time: t}, nil
}

// Range is the part of a stream's history to replay.
type Range struct {
	From, To Position
	// Lanes are the shard ids (Kinesis, DynamoDB Streams) or partitions
	// ("<topic>-<n>", or just the number) to replay; none means all. A
	// Position with a Number needs exactly one lane: a sequence number or
	// offset belongs to one shard or partition (a stream or topic of one
	// needs none named).
	Lanes []string
}

// Options configure Run.
type Options struct {
	// Invoker runs the function (required unless DryRun).
	Invoker invocation.Invoker
	// BatchSize is the most records one event carries (default
	// DefaultBatchSize).
	BatchSize int
	// Rate, if positive, is the most records sent per second; BatchRate
	// the most events per second.
	Rate, BatchRate float64
	// Timeout is the function's timeout (default
	// invocation.DefaultFunctionTimeout).
	Timeout time.Duration
	// DryRun reads the range and writes to DryRunOut each event that would
	// be sent; it invokes nothing and writes no checkpoint.
	DryRun    bool
	DryRunOut io.Writer
	// Checkpoint, if set, is the replay's checkpoint file: read at the
	// start (each shard or partition resumes after the record it names),
	// rewritten after each event with the last record of each shard or
	// partition whose batch succeeded.
	Checkpoint string
	// Function and Shadow name the consumer in the checkpoint file: a
	// checkpoint of another function, or of a production replay for a
	// shadow one (or the reverse), is refused.
	Function string
	Shadow   bool
	// MaxBatches, if positive, stops the replay after that many events.
	MaxBatches int
	// Progress, if set, is called after each event.
	Progress func(*Summary)

	sleep func(context.Context, time.Duration) error // tests
	now   func() time.Time
}

// Failure names the record that stopped a shard or partition.
type Failure struct {
	Lane   string
	Record string
	Reason string
}

// Summary is the outcome of Run.
type Summary struct {
	// Source is events.SourceKinesis, SourceDynamoDB or SourceKafka;
	// Stream the stream's ARN or the topic.
	Source events.Source
	Stream string
	// Lanes are the shards or partitions replayed, in order.
	Lanes []string
	// Events is the events sent (in a dry run, that would be sent);
	// Records the records they carried, Acknowledged those the function's
	// answers count as processed.
	Events, Records, Acknowledged int
	// Resumed maps each lane that resumed from the checkpoint to the
	// record it resumed after.
	Resumed map[string]string
	// Positions maps each lane to the last record acknowledged (what the
	// checkpoint holds).
	Positions map[string]string
	// Failures lists the records that stopped their lanes.
	Failures []Failure
	// Stopped says why the run stopped before the range ended, or "".
	Stopped string
}

// rec is one record read from a lane.
type rec struct {
	id      string // the event's item identifier (sequence number, "<topic>-<n>@<offset>")
	pos     string // what the checkpoint keeps: sequence number or offset
	arrival time.Time
	env     *dlq.Envelope // the record described for redrive.Event
}

// lane is one shard or partition of the range.
type lane struct {
	id        string
	pending   []rec
	exhausted bool // fill has nothing more in the range
	stopped   bool // a record failed
	// fill reads up to n more records of the range; exhausted once the
	// range holds no more.
	fill func(ctx context.Context, n int) (recs []rec, exhausted bool, err error)
}

// A Stream is a stream whose history Run replays: Kinesis, DynamoDB or
// Kafka.
type Stream interface {
	// open checks the range against what the stream holds and returns its
	// lanes, each resuming after cp[lane] when set.
	open(ctx context.Context, r Range, cp map[string]string, now time.Time) (source events.Source, stream string, lanes []*lane, err error)
	// payload builds the event of records (of one lane for streams).
	payload(recs []rec) ([]byte, error)
	close()
}

// Run replays the range r of s. The error is one that stopped the run
// before or while reading (a range past retention wraps ErrTrimmed, a
// checkpoint of another consumer, an unreachable stream, a function that
// cannot be invoked); records the function failed are in the Summary's
// Failures with a nil error.
func Run(ctx context.Context, s Stream, r Range, opts Options) (*Summary, error) {
	defer s.close()
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("replay: batch size %d is over %d", opts.BatchSize, MaxBatchSize)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = invocation.DefaultFunctionTimeout
	}
	if !opts.DryRun && opts.Invoker == nil {
		return nil, errors.New("replay: no Invoker")
	}
	if opts.DryRunOut == nil {
		opts.DryRunOut = io.Discard
	}
	if opts.sleep == nil {
		opts.sleep = sleep
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if !r.To.IsZero() && r.To.TrimHorizon {
		return nil, errors.New("replay: a range cannot end at TRIM_HORIZON")
	}
	var cp *checkpoint
	positions := map[string]string{}
	if opts.Checkpoint != "" {
		var err error
		if cp, err = readCheckpoint(opts.Checkpoint); err != nil {
			return nil, err
		}
		if cp != nil {
			positions = cp.Positions
		}
	}
	source, stream, lanes, err := s.open(ctx, r, positions, opts.now())
	if err != nil {
		return nil, err
	}
	if cp != nil {
		if err := cp.matches(source, stream, opts.Function, opts.Shadow); err != nil {
			return nil, fmt.Errorf("replay: checkpoint %s: %w", opts.Checkpoint, err)
		}
	} else {
		cp = &checkpoint{Version: checkpointVersion, Source: source, Stream: stream, Function: opts.Function, Shadow: opts.Shadow, Positions: map[string]string{}}
	}
	run := &run{opts: opts, s: s, cp: cp, sum: &Summary{Source: source, Stream: stream, Resumed: map[string]string{}, Positions: map[string]string{}}}
	run.next = opts.now()
	for _, l := range lanes {
		run.sum.Lanes = append(run.sum.Lanes, l.id)
		if p := cp.Positions[l.id]; p != "" {
			run.sum.Resumed[l.id] = p
			run.sum.Positions[l.id] = p
		}
	}
	err = run.lanes(ctx, lanes, source == events.SourceKafka)
	if ctx.Err() != nil {
		run.sum.Stopped = "interrupted: " + context.Cause(ctx).Error()
		err = nil
	}
	return run.sum, err
}

type run struct {
	opts Options
	s    Stream
	cp   *checkpoint
	sum  *Summary
	next time.Time // when the rate allows the next event
}

// errMaxBatches stops the run after Options.MaxBatches events.
var errMaxBatches = errors.New("max batches")

// lanes replays the lanes: a stream's one shard after another (parents
// before children, as Shards lists them), each to its end or its first
// failure; Kafka's partitions together, an event holding several.
func (r *run) lanes(ctx context.Context, lanes []*lane, kafka bool) error {
	step := func(group []*lane) (bool, error) {
		err := r.event(ctx, group)
		if errors.Is(err, errDone) {
			return false, nil
		}
		if errors.Is(err, errMaxBatches) {
			r.sum.Stopped = fmt.Sprintf("after %d events (MaxBatches): run again with the same checkpoint to go on", r.sum.Events)
			return false, nil
		}
		return err == nil, err
	}
	if kafka {
		for ctx.Err() == nil {
			more, err := step(lanes)
			if !more || err != nil {
				return err
			}
		}
		return nil
	}
	for _, l := range lanes {
		for ctx.Err() == nil {
			more, err := step([]*lane{l})
			if err != nil || r.sum.Stopped != "" {
				return err
			}
			if !more {
				break
			}
		}
	}
	return nil
}

// event sends the next event of the lanes: errDone when they have nothing
// more (each exhausted or stopped), errMaxBatches when MaxBatches events
// were sent and records are left.
func (r *run) event(ctx context.Context, group []*lane) error {
	if r.opts.MaxBatches > 0 && r.sum.Events >= r.opts.MaxBatches {
		if anyLeft(ctx, group, r.opts.BatchSize) {
			return errMaxBatches
		}
		return errDone
	}
	var parts [][]rec
	var partLanes []*lane
	bytes := 0
	room := r.opts.BatchSize
	// Kafka partitions take turns at the head of the event, so a busy one
	// does not starve the others (the event lists them in order anyway).
	for i := range group {
		l := group[(i+r.sum.Events)%len(group)]
		if l.stopped || room == 0 {
			continue
		}
		if err := topUp(ctx, l, r.opts.BatchSize); err != nil {
			return err
		}
		var take []rec
		for _, rc := range l.pending {
			n := len(rc.env.Record) + 1
			if len(take) == room || (bytes > 0 || len(take) > 0) && bytes+n > redrive.MaxPayload-1024 {
				break
			}
			take = append(take, rc)
			bytes += n
		}
		if len(take) == 0 {
			continue
		}
		room -= len(take)
		parts = append(parts, take)
		partLanes = append(partLanes, l)
	}
	if len(parts) == 0 {
		return errDone
	}
	var all []rec
	ids := make([][]string, len(parts))
	for i, p := range parts {
		all = append(all, p...)
		for _, rc := range p {
			ids[i] = append(ids[i], rc.id)
		}
	}
	payload, err := r.s.payload(all)
	if err != nil {
		return err
	}
	r.sum.Events++
	r.sum.Records += len(all)
	if r.opts.DryRun {
		describe(r.opts.DryRunOut, r.sum, partLanes, ids, payload)
		for i, l := range partLanes {
			l.pending = l.pending[len(parts[i]):]
			r.sum.Positions[l.id] = parts[i][len(parts[i])-1].pos
		}
		return nil
	}
	ev, err := invocation.ParseEvent(payload)
	if err != nil {
		return fmt.Errorf("replay: parsing the event built: %w", err)
	}
	if err := r.pace(ctx, len(all)); err != nil {
		return err
	}
	resp, err := r.invoke(ctx, payload)
	if err != nil {
		return fmt.Errorf("replay: invoking the function: %w", err)
	}
	v := ev.Verdict(resp)
	acked := acknowledged(ids, v)
	for i, l := range partLanes {
		n := acked[i]
		r.sum.Acknowledged += n
		if n > 0 {
			pos := parts[i][n-1].pos
			r.cp.Positions[l.id] = pos
			r.sum.Positions[l.id] = pos
		}
		l.pending = l.pending[n:]
		if n < len(parts[i]) {
			l.stopped = true
			r.sum.Failures = append(r.sum.Failures, Failure{Lane: l.id, Record: parts[i][n].id, Reason: failReason(v, parts[i][n].id)})
		}
	}
	if r.opts.Checkpoint != "" {
		if err := r.cp.write(r.opts.Checkpoint, r.opts.now()); err != nil {
			return err
		}
	}
	if r.opts.Progress != nil {
		r.opts.Progress(r.sum)
	}
	return nil
}

// errDone says the lanes have nothing more to send.
var errDone = errors.New("done")

func anyLeft(ctx context.Context, group []*lane, n int) bool {
	for _, l := range group {
		if l.stopped {
			continue
		}
		if err := topUp(ctx, l, 1); err != nil || len(l.pending) > 0 {
			return true
		}
	}
	return false
}

// topUp reads until l holds n records pending or its range is exhausted
// (a read may bring fewer).
func topUp(ctx context.Context, l *lane, n int) error {
	if l.exhausted || len(l.pending) >= n {
		return nil
	}
	recs, exhausted, err := l.fill(ctx, n-len(l.pending))
	if err != nil {
		return err
	}
	l.pending = append(l.pending, recs...)
	l.exhausted = exhausted
	return nil
}

// acknowledged returns, for each lane of an event (its record ids in the
// event's order), how many records at its head Lambda's event source
// mapping would count as processed after the verdict v: all on success,
// none on a function error or an invalid answer; after a partial batch
// response, those before the lane's first reported record (a stream
// restarts its shard at the lowest reported sequence number, a Kafka
// partition at its lowest reported offset).
func acknowledged(lanes [][]string, v invocation.Verdict) []int {
	out := make([]int, len(lanes))
	if v.Failed() {
		return out
	}
	reported := map[string]bool{}
	for _, id := range v.Reported {
		reported[id] = true
	}
	for i, ids := range lanes {
		out[i] = len(ids)
		if v.Outcome != invocation.OutcomePartial {
			continue
		}
		for j, id := range ids {
			if reported[id] {
				out[i] = j
				break
			}
		}
	}
	return out
}

func failReason(v invocation.Verdict, id string) string {
	if v.Outcome == invocation.OutcomePartial {
		return "the function reported it failed (partial batch response); nothing after it in its lane was replayed"
	}
	return "the function failed the batch it heads (" + v.String() + "); nothing after it in its lane was replayed"
}

// invoke calls the function, retrying a throttled call with back-off.
func (r *run) invoke(ctx context.Context, payload []byte) (invocation.Response, error) {
	wait := 200 * time.Millisecond
	for try := 1; ; try++ {
		resp, err := r.opts.Invoker.Invoke(ctx, invocation.Invocation{Payload: payload, Timeout: r.opts.Timeout, N: r.sum.Events})
		var th interface{ Throttled() bool }
		if err == nil || try == 6 || !errors.As(err, &th) || !th.Throttled() {
			return resp, err
		}
		if err := r.opts.sleep(ctx, wait); err != nil {
			return resp, err
		}
		wait *= 2
	}
}

// pace waits until the rates allow one more event of n records.
func (r *run) pace(ctx context.Context, n int) error {
	var d time.Duration
	if r.opts.Rate > 0 {
		d = time.Duration(float64(n) / r.opts.Rate * float64(time.Second))
	}
	if r.opts.BatchRate > 0 {
		d = max(d, time.Duration(float64(time.Second)/r.opts.BatchRate))
	}
	if d == 0 {
		return nil
	}
	now := r.opts.now()
	if wait := r.next.Sub(now); wait > 0 {
		if err := r.opts.sleep(ctx, wait); err != nil {
			return err
		}
	} else {
		r.next = now
	}
	r.next = r.next.Add(d)
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// describe writes what a dry run would send: a line about the event, then
// the event.
func describe(w io.Writer, sum *Summary, lanes []*lane, ids [][]string, payload []byte) {
	var parts []string
	n := 0
	for i, l := range lanes {
		parts = append(parts, l.id+": "+strings.Join(ids[i], ", "))
		n += len(ids[i])
	}
	noun := "records"
	if n == 1 {
		noun = "record"
	}
	fmt.Fprintf(w, "event %d: %s, %d %s from %s %s\n%s\n", sum.Events, sum.Source, n, noun, sum.Stream, strings.Join(parts, "; "), payload)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compareNumbers orders decimal sequence numbers or offsets by value.
func compareNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
