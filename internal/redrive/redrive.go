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
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/deadletter"
	"github.com/sluicehq/sluice/internal/inbox"
	"github.com/sluicehq/sluice/invocation"
)

// Source is where envelopes come from: Queue or File.
type Source = inbox.Source

// SQSAPI is the part of the SQS client Queue uses.
type SQSAPI = inbox.SQSAPI

// Queue reads envelopes from the SQS queue at url. A received message
// stays hidden for visibility while its record is replayed; at the end the
// messages left are made visible again. The queue counts as drained when a
// receive, waiting up to wait, returns nothing new; with wait 0 (short
// polling, which may answer empty while messages wait) when three in a row
// do. Prefer a wait of a second or more, as the sluice command uses.
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
	// Invoker runs the function. Without it, Open opens one (one of the
	// two is required unless DryRun).
	Invoker invocation.Invoker
	// Open opens the invoker of the function named function, once, before
	// the first invocation: function is FunctionName, else the function
	// the first envelope replayed names. Run closes what Open returned.
	Open func(ctx context.Context, function string) (invocation.Invoker, error)
	// FunctionName is the function the records are replayed into. Its
	// name is part of every default idempotency key and attempts key, so
	// a record replayed into another function than the one that
	// quarantined it (Envelope.FunctionName) would take effect again: such
	// an envelope is left (Totals.OtherFunction) unless Force. "" means the
	// function of the first envelope replayed. An envelope that names no
	// function is replayed into whichever runs.
	FunctionName string
	// Force replays envelopes of another function too.
	Force bool
	// Watch, if set, tells which envelopes the function quarantined while
	// the redrive ran (its dead-letter file): a replayed record that is
	// among them failed again, and is counted as Requarantined, not
	// Replayed. An envelope the function quarantines into the source
	// itself is found without it.
	Watch Watch
	// BatchSize is the most records one event carries (default 1: each
	// record alone, so one record's failure never holds back another).
	// Records share an event only when they share a source and source ARN
	// (and a shard, for Kinesis).
	BatchSize int
	// Rate, if positive, is the most records replayed per second.
	Rate float64
	// Timeout is the function's timeout (default
	// invocation.DefaultFunctionTimeout).
	Timeout time.Duration
	// DryRun reads the envelopes and writes to DryRunOut what would be
	// replayed, event by event, without invoking anything or removing any
	// envelope.
	DryRun    bool
	DryRunOut io.Writer
	// Progress, if set, is called after each event with the totals so far.
	Progress func(Totals)
	// Attempts, if set, is the function's attempts store (the table of
	// SLUICE_ATTEMPTS_TABLE): before a record is replayed its count there
	// is forgotten (dlq.AttemptsKeyOf the envelope, and for Kinesis the key
	// earlier versions used too), so a record quarantined for its attempts
	// or for crashing the function runs again instead of being quarantined
	// again at once. (Streams, Kafka and SQS FIFO queues count there; a
	// standard SQS record's key is not in the store, and forgetting it
	// costs one request.)
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
	// that the replay did not write (older duplicates); they stay.
	Repeated int
	// OtherFunction is the envelopes of another function than the one
	// the redrive runs (Options.FunctionName); they stay.
	OtherFunction int
	// Requarantined is the records whose replay ended in quarantine: the
	// function failed them again and wrote a new envelope (into the
	// source, or the file Options.Watch follows). They are not Replayed,
	// and a redrive with any is not a success; the old envelope is gone,
	// the new one holds the record.
	Requarantined int
	// Invocations is the events sent (in a dry run, that would be sent).
	Invocations int
	// Records is the records those events carried.
	Records int
}

// Left is the number of envelopes that stay.
func (t Totals) Left() int { return t.Failed + t.Invalid + t.Truncated + t.Repeated + t.OtherFunction }

// OK reports whether the redrive did all it should: nothing left and no
// record quarantined again.
func (t Totals) OK() bool { return t.Left() == 0 && t.Requarantined == 0 }

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
	// Requarantines lists the records quarantined again (Message is where
	// the new envelope is).
	Requarantines []Leftover
	// FunctionName is the function the records were replayed into ("" if
	// none was, or no envelope named one).
	FunctionName string
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
	return string(e.Source) + "\x00" + e.SourceARN + "\x00" + e.RecordKey()
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
		opts.Timeout = invocation.DefaultFunctionTimeout
	}
	if !opts.DryRun && opts.Invoker == nil && opts.Open == nil {
		return nil, errors.New("redrive: no Invoker and no Open")
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
	r := &run{src: src, opts: opts, sum: &Summary{}, replayed: map[string]*replayed{}, function: opts.FunctionName, invoker: opts.Invoker}
	r.next = opts.now()
	defer func() {
		if r.invoker != nil && opts.Invoker == nil {
			err = errors.Join(err, r.invoker.Close())
		}
		r.sum.FunctionName = r.function
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
	replayed map[string]*replayed // by identity, the records replayed in this run
	next     time.Time            // when the rate allows the next event
	function string               // the function replayed into, once known
	invoker  invocation.Invoker
}

// replayed is what a run knows of a record it replayed.
type replayed struct {
	start time.Time // when its event was sent
	done  int       // its envelopes removed as replayed
	again bool      // counted as requarantined
}

// requarantineSkew is how much earlier than its replay's start an envelope
// found in the source may say it failed and still count as written by the
// replay: the function's clock may be behind this one.
const requarantineSkew = 30 * time.Second

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
		if p := r.replayed[id]; p != nil {
			if !p.again && !e.LastFailure.Before(p.start.Add(-requarantineSkew)) {
				// The function quarantined the replayed record into the
				// source: the new envelope stays, as the record's.
				r.requarantined(p, r.src.Name()+" ("+m.ID+")", e.RecordID)
				continue
			}
			r.leave(m, e.RecordID, "the record was replayed already in this run: left for the next run", &r.sum.Repeated)
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
		if reason := r.otherFunction(e); reason != "" {
			r.leave(m, e.RecordID, reason, &r.sum.OtherFunction)
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

// otherFunction says why envelope e may not be replayed into the function
// this redrive runs, or returns "" when it may; the first envelope that
// names a function names it when Options.FunctionName does not.
func (r *run) otherFunction(e *dlq.Envelope) string {
	switch {
	case e.FunctionName == "":
		return ""
	case r.function == "":
		r.function = e.FunctionName
		return ""
	case e.FunctionName == r.function || r.opts.Force:
		return ""
	}
	return fmt.Sprintf("quarantined by function %s, and this redrive replays into %s: its idempotency and attempts keys name %s, "+
		"so in %s it could take effect again; redrive it with --function-name %s (or --force to replay it into %s anyway)",
		e.FunctionName, r.function, e.FunctionName, r.function, e.FunctionName, r.function)
}

// requarantined counts record p (id) as quarantined again, its new
// envelope at where.
func (r *run) requarantined(p *replayed, where, id string) {
	p.again = true
	r.sum.Replayed -= p.done
	p.done = 0
	r.sum.Requarantined++
	r.sum.Requarantines = append(r.sum.Requarantines, Leftover{Message: where, Record: id,
		Reason: "its replay failed again and the function quarantined it again"})
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
	ev, err := invocation.ParseEvent(payload)
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
	if r.invoker == nil {
		inv, err := r.opts.Open(ctx, r.function)
		if err != nil {
			for _, it := range b {
				for _, m := range it.msgs {
					r.leave(m, it.env.RecordID, "not replayed: "+err.Error(), &r.sum.Failed)
				}
			}
			return fmt.Errorf("redrive: starting the function: %w", err)
		}
		r.invoker = inv
	}
	if r.opts.Attempts != nil {
		for _, it := range b {
			e := *it.env
			if r.function != "" {
				e.FunctionName = r.function // the keys of the function that runs
			}
			for _, key := range []string{dlq.AttemptsKeyOf(&e), deadletter.KinesisLegacyAttemptsKey(&e)} {
				if key == "" {
					continue
				}
				if err := r.opts.Attempts.Forget(ctx, key); err != nil {
					return fmt.Errorf("redrive: resetting the attempts of record %s before its replay: %w", e.RecordID, err)
				}
			}
		}
	}
	start := r.opts.now()
	for _, it := range b {
		r.replayed[identity(it.env)] = &replayed{start: start}
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
		if v.Outcome == invocation.OutcomePartial && !slices.Contains(v.Reported, it.env.RecordID) {
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
		for _, it := range doneItems {
			r.replayed[identity(it.env)].done += len(it.msgs)
		}
	}
	return r.watch(ctx)
}

// watch counts the replayed records the function quarantined again into
// the file Options.Watch follows.
func (r *run) watch(ctx context.Context) error {
	if r.opts.Watch == nil {
		return nil
	}
	envs, err := r.opts.Watch.Since(ctx)
	if err != nil {
		return fmt.Errorf("redrive: reading what the function quarantined: %w", err)
	}
	for _, e := range envs {
		if p := r.replayed[identity(e)]; p != nil && !p.again {
			r.requarantined(p, r.opts.Watch.Name(), e.RecordID)
		}
	}
	return nil
}

// invoke calls the function, retrying a throttled call with back-off.
func (r *run) invoke(ctx context.Context, payload []byte) (invocation.Response, error) {
	wait := 200 * time.Millisecond
	for try := 1; ; try++ {
		resp, err := r.invoker.Invoke(ctx, invocation.Invocation{Payload: payload, Timeout: r.opts.Timeout, N: r.sum.Invocations})
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
func acknowledged(source events.Source, ids []string, v invocation.Verdict) map[string]bool {
	out := map[string]bool{}
	switch {
	case v.Failed():
		return out
	case v.Outcome != invocation.OutcomePartial:
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
	case events.SourceSQS, events.SourceSQSFIFO:
		for _, id := range ids {
			out[id] = !reported[id]
		}
	case events.SourceKafka:
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
	if e.Source == events.SourceKinesis {
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
