package redrive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/internal/inbox"
	"github.com/sluicehq/sluice/localtest"
)

// Source is where envelopes come from: Queue or File.
type Source = inbox.Source

// SQSAPI is the part of the SQS client Queue uses.
type SQSAPI = inbox.SQSAPI

// Queue reads envelopes from the SQS queue at url. A received message
// stays hidden for visibility while its record is replayed; at the end the
// messages left are made visible again. The queue counts as drained when a
// receive, waiting up to wait, returns nothing new.
func Queue(api SQSAPI, url string, visibility, wait time.Duration) Source {
	return inbox.Queue(api, url, visibility, wait)
}

// File reads envelopes from a file of JSON lines; at the end the file is
// rewritten without the envelopes whose records succeeded.
func File(path string) (Source, error) { return inbox.File(path) }

// MaxBatchSize is the largest BatchSize, as for a stream's mapping.
const MaxBatchSize = 10000

// Options configure Run.
type Options struct {
	// Invoker runs the function (required unless DryRun).
	Invoker localtest.Invoker
	// BatchSize is the most records one event carries (default 1: each
	// record alone, so one record's failure never holds back another).
	// Records share an event only when they share a source and source ARN
	// (and a shard, for Kinesis).
	BatchSize int
	// Rate, if positive, is the most records replayed per second.
	Rate float64
	// Timeout is the function's timeout (default
	// localtest.DefaultFunctionTimeout).
	Timeout time.Duration
	// DryRun reads the envelopes and writes to DryRunOut what would be
	// replayed, event by event, without invoking anything or removing any
	// envelope.
	DryRun    bool
	DryRunOut io.Writer
	// Progress, if set, is called after each event with the totals so far.
	Progress func(Totals)
	// Attempts, if set, is the function's attempts store (the table of
	// SLUICE_ATTEMPTS_TABLE): before a stream or Kafka record is replayed
	// its count there is forgotten (dlq.AttemptsKey of the envelope's
	// function, source ARN and record id), so a record quarantined for
	// crashing the function runs again instead of being quarantined again
	// at once. SQS records need none: a replay is a new delivery.
	Attempts dlq.Forgetter

	sleep func(context.Context, time.Duration) error // tests
	now   func() time.Time
}

// Totals count what a redrive did, in envelopes.
type Totals struct {
	// Read is the envelopes (messages, lines) read.
	Read int
	// Replayed is the envelopes whose records succeeded; they were removed.
	Replayed int
	// Failed is the envelopes whose records the function failed (or did
	// not reach) and which stay.
	Failed int
	// Invalid is the messages that are not envelopes, or whose record does
	// not match them; they stay.
	Invalid int
	// Truncated is the envelopes refused because their record was cut;
	// they stay.
	Truncated int
	// Repeated is the envelopes of a record already replayed in this run
	// (the function may have quarantined it again); they stay.
	Repeated int
	// Invocations is the events sent (in a dry run, that would be sent).
	Invocations int
	// Records is the records those events carried.
	Records int
}

// Left is the number of envelopes that stay.
func (t Totals) Left() int { return t.Failed + t.Invalid + t.Truncated + t.Repeated }

// Leftover says why one envelope stays.
type Leftover struct {
	// Message is the queue message id or "line N".
	Message string
	// Record is the record's id, "" for a message that is not an envelope.
	Record string
	Reason string
}

// Summary is the outcome of Run.
type Summary struct {
	Totals
	// Leftovers lists the envelopes that stay, in the order met.
	Leftovers []Leftover
	// Stopped says why the run stopped before the source was drained, or "".
	Stopped string
}

// item is one envelope read, and the messages that carry it.
type item struct {
	env  *dlq.Envelope
	msgs []inbox.Message // the first, then duplicates read with it
}

// identity names a record across envelopes.
func identity(e *dlq.Envelope) string {
	return e.Source + "\x00" + e.SourceARN + "\x00" + e.RecordKey()
}

// Run replays the envelopes of src until it is drained or ctx is done, then
// closes src (a queue makes what is left visible again, a file is rewritten
// without what succeeded). The error is one that stopped the run: the
// source cannot be read, the function cannot be invoked at all; the
// records of the envelopes left are in the Summary either way.
func Run(ctx context.Context, src Source, opts Options) (sum *Summary, err error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1
	}
	if opts.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("redrive: batch size %d is over %d", opts.BatchSize, MaxBatchSize)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = localtest.DefaultFunctionTimeout
	}
	if !opts.DryRun && opts.Invoker == nil {
		return nil, errors.New("redrive: no Invoker")
	}
	if opts.DryRun && opts.DryRunOut == nil {
		opts.DryRunOut = io.Discard
	}
	if opts.sleep == nil {
		opts.sleep = sleep
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	r := &run{src: src, opts: opts, sum: &Summary{}, replayed: map[string]bool{}}
	r.next = opts.now()
	defer func() {
		// The source is closed even when ctx is done: what is left must
		// be given back, what succeeded removed.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := src.Close(cctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	window := max(opts.BatchSize, 10)
	for {
		if ctx.Err() != nil {
			r.sum.Stopped = "interrupted: " + context.Cause(ctx).Error()
			return r.sum, nil
		}
		msgs, err := src.Next(ctx, window)
		r.sum.Read += len(msgs)
		if err != nil {
			for _, m := range msgs {
				r.leave(m, "", "not read: "+err.Error(), &r.sum.Failed)
			}
			if ctx.Err() != nil {
				r.sum.Stopped = "interrupted: " + context.Cause(ctx).Error()
				return r.sum, nil
			}
			return r.sum, err
		}
		if len(msgs) == 0 {
			return r.sum, nil
		}
		if err := r.window(ctx, msgs); err != nil {
			if ctx.Err() != nil {
				r.sum.Stopped = "interrupted: " + context.Cause(ctx).Error()
				return r.sum, nil
			}
			return r.sum, err
		}
	}
}

type run struct {
	src      Source
	opts     Options
	sum      *Summary
	replayed map[string]bool // identities replayed in this run
	next     time.Time       // when the rate allows the next event
}

func (r *run) leave(m inbox.Message, record, reason string, counter *int) {
	*counter++
	r.sum.Leftovers = append(r.sum.Leftovers, Leftover{Message: m.ID, Record: record, Reason: reason})
}

// window replays one window of messages: parse, check, group, invoke.
func (r *run) window(ctx context.Context, msgs []inbox.Message) error {
	var items []*item
	byID := map[string]*item{}
	for _, m := range msgs {
		e, err := dlq.Unmarshal(m.Body)
		if err != nil {
			r.leave(m, "", err.Error(), &r.sum.Invalid)
			continue
		}
		id := identity(e)
		if r.replayed[id] {
			r.leave(m, e.RecordID, "the record was replayed already in this run (the function may have quarantined it again): left for the next run", &r.sum.Repeated)
			continue
		}
		if it, ok := byID[id]; ok {
			it.msgs = append(it.msgs, m)
			continue
		}
		if _, err := Event([]*dlq.Envelope{e}); err != nil {
			counter := &r.sum.Invalid
			if errors.Is(err, ErrTruncated) {
				counter = &r.sum.Truncated
			}
			r.leave(m, e.RecordID, err.Error(), counter)
			continue
		}
		it := &item{env: e, msgs: []inbox.Message{m}}
		byID[id] = it
		items = append(items, it)
	}
	for _, b := range plan(items, r.opts.BatchSize) {
		if err := r.replay(ctx, b); err != nil {
			return err
		}
		if r.opts.Progress != nil {
			r.opts.Progress(r.sum.Totals)
		}
	}
	return nil
}

// plan groups items into events: by source, ARN and Kinesis shard, in the
// order the groups were met, each group in its source's order, at most size
// records and MaxPayload bytes per event.
func plan(items []*item, size int) [][]*item {
	var keys []groupKey
	groups := map[groupKey][]*item{}
	for _, it := range items {
		k := keyOf(it.env)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], it)
	}
	var out [][]*item
	for _, k := range keys {
		g := groups[k]
		envs := make([]*dlq.Envelope, len(g))
		for i, it := range g {
			envs[i] = it.env
		}
		sortForEvent(envs)
		pos := make(map[*dlq.Envelope]int, len(g))
		for i, e := range envs {
			pos[e] = i
		}
		slices.SortFunc(g, func(a, b *item) int { return pos[a.env] - pos[b.env] })
		var cur []*item
		bytes := 0
		for _, it := range g {
			n := len(it.env.Record) + 1
			if len(cur) > 0 && (len(cur) == size || bytes+n > MaxPayload-1024) {
				out = append(out, cur)
				cur, bytes = nil, 0
			}
			cur = append(cur, it)
			bytes += n
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

// replay sends one event and settles its envelopes.
func (r *run) replay(ctx context.Context, b []*item) error {
	envs := make([]*dlq.Envelope, len(b))
	for i, it := range b {
		envs[i] = it.env
	}
	payload, err := Event(envs)
	if err != nil { // each envelope passed alone; together they should too
		for _, it := range b {
			for _, m := range it.msgs {
				r.leave(m, it.env.RecordID, err.Error(), &r.sum.Invalid)
			}
		}
		return nil
	}
	ev, err := localtest.ParseEvent(payload)
	if err != nil {
		return fmt.Errorf("redrive: parsing the rebuilt event: %w", err)
	}
	r.sum.Invocations++
	r.sum.Records += len(b)
	if r.opts.DryRun {
		describe(r.opts.DryRunOut, r.sum.Invocations, envs, payload)
		return nil
	}
	if err := r.pace(ctx, len(b)); err != nil {
		return err
	}
	if r.opts.Attempts != nil {
		for _, it := range b {
			e := it.env
			if e.Source == dlq.SourceSQS {
				continue
			}
			if err := r.opts.Attempts.Forget(ctx, dlq.AttemptsKey(e.FunctionName, e.SourceARN, e.RecordKey())); err != nil {
				return fmt.Errorf("redrive: resetting the attempts of record %s before its replay: %w", e.RecordID, err)
			}
		}
	}
	for _, it := range b {
		r.replayed[identity(it.env)] = true
	}
	resp, err := r.invoke(ctx, payload)
	if err != nil {
		for _, it := range b {
			for _, m := range it.msgs {
				r.leave(m, it.env.RecordID, "not replayed: "+err.Error(), &r.sum.Failed)
			}
		}
		return fmt.Errorf("redrive: invoking the function: %w", err)
	}
	v := ev.Verdict(resp)
	ok := acknowledged(ev.Source, ev.Items(), v)
	var done []inbox.Message
	var doneItems []*item
	for _, it := range b {
		// ev.Items() is in the event's order, which for Kafka is by
		// partition; find each item's place by its id.
		if ok[it.env.RecordID] {
			done = append(done, it.msgs...)
			doneItems = append(doneItems, it)
			continue
		}
		reason := "the function failed it: " + v.String()
		if v.Outcome == localtest.OutcomePartial && !slices.Contains(v.Reported, it.env.RecordID) {
			reason = "not acknowledged: a record before it in the event failed (" + v.String() + ")"
		}
		for _, m := range it.msgs {
			r.leave(m, it.env.RecordID, reason, &r.sum.Failed)
		}
	}
	if len(done) > 0 {
		if err := r.src.Done(ctx, done); err != nil {
			for _, it := range doneItems {
				for _, m := range it.msgs {
					r.leave(m, it.env.RecordID, "replayed, but its envelope could not be removed: "+err.Error(), &r.sum.Failed)
				}
			}
			return err
		}
		r.sum.Replayed += len(done)
	}
	return nil
}

// invoke calls the function, retrying a throttled call with back-off.
func (r *run) invoke(ctx context.Context, payload []byte) (localtest.Response, error) {
	wait := 200 * time.Millisecond
	for try := 1; ; try++ {
		resp, err := r.opts.Invoker.Invoke(ctx, localtest.Invocation{Payload: payload, Timeout: r.opts.Timeout, N: r.sum.Invocations})
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

// pace waits until the rate allows n more records.
func (r *run) pace(ctx context.Context, n int) error {
	if r.opts.Rate <= 0 {
		return nil
	}
	now := r.opts.now()
	if d := r.next.Sub(now); d > 0 {
		if err := r.opts.sleep(ctx, d); err != nil {
			return err
		}
	} else {
		r.next = now
	}
	r.next = r.next.Add(time.Duration(float64(n) / r.opts.Rate * float64(time.Second)))
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

// acknowledged returns the item identifiers of an event (in the event's
// order) whose records Lambda's event source mapping would count as
// processed after the verdict v: all on success, none on a function error
// or an invalid response; after a partial batch response, for SQS every
// record not reported, for Kinesis and DynamoDB Streams the records before
// the first reported one (Lambda restarts the shard there), for Kafka the
// records of each partition before its first reported offset.
func acknowledged(source string, ids []string, v localtest.Verdict) map[string]bool {
	out := map[string]bool{}
	switch {
	case v.Failed():
		return out
	case v.Outcome != localtest.OutcomePartial:
		for _, id := range ids {
			out[id] = true
		}
		return out
	}
	reported := map[string]bool{}
	for _, id := range v.Reported {
		reported[id] = true
	}
	switch source {
	case localtest.SourceSQS, localtest.SourceSQSFIFO:
		for _, id := range ids {
			out[id] = !reported[id]
		}
	case localtest.SourceKafka:
		stopped := map[string]bool{}
		for _, id := range ids {
			part, _, _ := strings.Cut(id, "@")
			if reported[id] {
				stopped[part] = true
			}
			out[id] = !stopped[part]
		}
	default:
		for _, id := range ids {
			if reported[id] {
				break
			}
			out[id] = true
		}
	}
	return out
}

// describe writes what a dry run would send: one line about the event,
// then the event.
func describe(w io.Writer, n int, envs []*dlq.Envelope, payload []byte) {
	e := envs[0]
	where := e.SourceARN
	if e.Source == dlq.SourceKinesis {
		where += " " + keyOf(e).shard
	}
	ids := make([]string, len(envs))
	for i, e := range envs {
		ids[i] = e.RecordID
	}
	noun := "records"
	if len(envs) == 1 {
		noun = "record"
	}
	fmt.Fprintf(w, "event %d: %s, %d %s from %s: %s\n%s\n", n, e.Source, len(envs), noun, strings.TrimSpace(where), strings.Join(ids, ", "), payload)
}
