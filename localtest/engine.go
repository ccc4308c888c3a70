package localtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/emuqueue"
	"github.com/sluicehq/sluice/localtest/internal/killplan"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// maxPayload is Lambda's synchronous invocation payload limit.
const maxPayload = 6 << 20

// defaultFunctionName is the function's name when neither the mapping nor
// the invoker names it: the name the Runtime API and Invoke API invokers
// default to.
const defaultFunctionName = "function"

// testAccount is the account id of the ARNs the runner makes up.
const testAccount = "123456789012"

// functionARNFor resolves the one function of a run, as on-failure records
// name it: the mapping's FunctionName (a name or an ARN, as
// CreateEventSourceMapping takes it), or the ARN the invoker tells the
// function (told, the RuntimeAPIInvoker's FunctionARN), or
// defaultFunctionName. Both given must name the same function.
func functionARNFor(mappingName, toldARN, region string) (string, error) {
	if mappingName != "" && toldARN != "" && functionNameOf(mappingName) != functionNameOf(toldARN) {
		return "", fmt.Errorf("localtest: the mapping's FunctionName %s and the function the invoker runs (%s, its AWS_LAMBDA_FUNCTION_NAME) differ: "+
			"name one function (set AWS_LAMBDA_FUNCTION_NAME to %s, or change FunctionName)", mappingName, toldARN, functionNameOf(mappingName))
	}
	switch {
	case strings.HasPrefix(mappingName, "arn:"):
		return mappingName, nil
	case toldARN != "":
		return toldARN, nil
	}
	return "arn:aws:lambda:" + or(region, sevents.DefaultRegion) + ":" + testAccount + ":function:" + or(mappingName, defaultFunctionName), nil
}

// functionNameOf is the name in a function ARN
// (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]), or name itself.
func functionNameOf(name string) string {
	if _, rest, ok := strings.Cut(name, ":function:"); ok {
		name, _, _ = strings.Cut(rest, ":")
	}
	return name
}

// Run emulates the mapping until every record is resolved (processed, sent to
// the on-failure destination, moved to the dead-letter queue) or the run
// stops, and returns the report. It returns an error for a mapping AWS would
// reject, a source it cannot read, or an invoker that cannot invoke at all;
// function errors and timeouts are part of the report. When the HTML
// report (Options.HTML) cannot be written, Run returns the report and the
// error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Mapping == nil {
		return nil, errors.New("localtest: Options.Mapping is required")
	}
	if opts.Invoker == nil {
		return nil, errors.New("localtest: Options.Invoker is required")
	}
	if err := checkKillFaults(opts.Faults, opts.Invoker); err != nil {
		return nil, err
	}
	s, err := opts.Mapping.settings()
	if err != nil {
		return nil, err
	}
	if err := checkExpectations(opts); err != nil {
		return nil, err
	}
	r := &runner{
		opts:   opts,
		s:      s,
		rnd:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5eed)),
		fates:  map[string]string{},
		known:  map[string]int{},
		report: &Report{Mapping: *opts.Mapping, Checkpoints: map[string]string{}},
	}
	if opts.WallClock || opts.Stream != nil || opts.Queue != nil || opts.Kafka != nil {
		r.clock = wallClock{}
	} else {
		r.clock = &virtualClock{}
	}
	if r.opts.FunctionTimeout <= 0 {
		r.opts.FunctionTimeout = invocation.DefaultFunctionTimeout
	}
	if r.opts.RetryDelay <= 0 {
		r.opts.RetryDelay = time.Second
	}
	told := ""
	if n, ok := opts.Invoker.(interface{ FunctionARN() string }); ok {
		told = n.FunctionARN()
	}
	if r.functionARN, err = functionARNFor(opts.Mapping.FunctionName, told, opts.Mapping.Region); err != nil {
		return nil, err
	}
	if err := r.setDestination(); err != nil {
		return nil, err
	}
	if r.closeDest != nil {
		defer r.closeDest()
	}
	if err := r.setSource(); err != nil {
		return nil, err
	}
	if r.opts.MaxInvocations <= 0 {
		r.opts.MaxInvocations = 100000 + 10*len(r.refs)
	}
	html, err := r.startHTML()
	if err != nil {
		return nil, err
	}
	defer html.abandon()
	r.readCompletedBefore(ctx)
	switch {
	case r.stream != nil:
		err = r.runLanes(ctx, r.streamLanes)
	case r.kafka != nil:
		err = r.runLanes(ctx, r.kafkaLanes)
	default:
		err = r.runQueue(ctx)
	}
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if err := r.finish(ctx); err != nil {
		return nil, err
	}
	return r.report, html.write(r)
}

// errStop ends a run early; the report says why.
var errStop = errors.New("stop")

type runner struct {
	opts  Options
	s     settings
	clock clock
	rnd   *rand.Rand

	stream StreamSource
	queue  Queue
	mq     *emuqueue.Queue // the emulated queue, when it is one
	kafka  KafkaSource
	refs   []inputRef // input records of an emulated source, in input order

	dest      onfailure.Destination
	closeDest func() // releases a destination the runner opened
	report    *Report
	fates     map[string]string
	seen      []inputRef     // records in the order first delivered (real sources)
	known     map[string]int // record id -> index in seen
	n         int            // invocations so far
	reqID     string         // the last invocation's request id
	fetched   bool           // a lane read records from its source this round

	functionARN string // the function, as on-failure records name it
	ageOuts     int    // RecordAgeExceeded records sent, for their request ids

	// What the function did, for Report.Failure: invocations that reached
	// the invoker, those its code answered, init failures (all, and in a
	// row), and whether any init succeeded.
	called, answered, initFailed, initFailedInRow int
	initOK                                        bool
	// completedBefore are the keys the function's idempotency store held
	// completed before the first invocation (Options.Idempotency), or why
	// they could not be read.
	completedBefore    map[string]bool
	completedBeforeErr error
	// lanesBefore are the lanes it held (IdempotencyLanes), read at the
	// same time, and when.
	lanesBefore    map[string]*idempotency.LaneRecord
	lanesBeforeErr error
	lanesBeforeAt  time.Time
	// shardOrder lists, per shard or partition, record ids in order.
	shardOrder map[string][]string
	// recent are the durations and payload sizes of the last invocations
	// the function answered (a ring of recentKept), from which mid-batch
	// kill moments are drawn.
	recent  []killplan.Pace
	recentN int
	// timedOut holds the request ids of the invocations that ran into
	// their deadline uninjected: the invoker killed their process (as
	// Lambda does) wherever it was in the batch.
	timedOut map[string]bool
}

// recentKept is how many answered invocations' durations a mid-batch kill
// moment is drawn over.
const recentKept = 8

// errKillFaults is the error for crash or timeout faults with an invoker
// that cannot kill the function's process.
var errKillFaults = errors.New("localtest: crash and timeout faults need a process to kill: run the function as a bootstrap " +
	"(sluice run --handler ./bootstrap, or localtest/invoke.RuntimeAPI). This invoker cannot kill the function inside an invocation " +
	"(in process, a goroutine cannot be stopped mid-effect and the handler's memory would survive; behind an Invoke API endpoint the " +
	"process is not the runner's), and a crash that leaves the function running is not a crash")

// checkKillFaults refuses crash and timeout faults for an invoker that is
// not a Killer that can kill.
func checkKillFaults(f Faults, inv invocation.Invoker) error {
	if f.CrashRate <= 0 && f.TimeoutRate <= 0 {
		return nil
	}
	if k, ok := inv.(invocation.Killer); ok && k.CanKill() {
		return nil
	}
	return fmt.Errorf("%w (Faults.CrashRate %g, TimeoutRate %g)", errKillFaults, f.CrashRate, f.TimeoutRate)
}

// KilledInvocation is an invocation whose process the runner killed, as an
// injected crash or timeout.
type KilledInvocation struct {
	N         int                  `json:"n"`
	RequestID string               `json:"requestId"`
	Point     invocation.KillPoint `json:"point"`
	Timeout   bool                 `json:"timeout,omitempty"`
	// AfterMs is when the kill (a timeout's freeze) landed, after the
	// hand-over.
	AfterMs int64 `json:"afterMs"`
	// Effects is how many effects the invocation left behind, when the
	// effects name their invocation (Effect.Request); -1 when unknown.
	Effects int `json:"effects"`
	// What says it in words.
	What string `json:"what"`
	// Env and PID are the execution environment whose process was killed
	// and that process's id (0 when the invoker does not tell): only that
	// environment starts a new process; the others run on.
	Env   int           `json:"env,omitempty"`
	PID   int           `json:"pid,omitempty"`
	after time.Duration // AfterMs, unrounded
}

func (r *runner) setSource() error {
	m, s := r.opts.Mapping, r.s
	given := 0
	for _, ok := range []bool{r.opts.Stream != nil, r.opts.Queue != nil, r.opts.Kafka != nil} {
		if ok {
			given++
		}
	}
	if given > 1 {
		return errors.New("localtest: set at most one of Options.Stream, Queue and Kafka")
	}
	switch {
	case r.opts.Stream != nil:
		if !m.stream() {
			return fmt.Errorf("localtest: a stream source was given for EventSource %s", s.source)
		}
		r.stream = r.opts.Stream
		return nil
	case r.opts.Queue != nil:
		if !m.sqs() {
			return fmt.Errorf("localtest: a queue was given for EventSource %s", s.source)
		}
		r.queue = r.opts.Queue
		return nil
	case r.opts.Kafka != nil:
		if s.source != sevents.SourceKafka {
			return fmt.Errorf("localtest: a Kafka source was given for EventSource %s", s.source)
		}
		r.kafka = r.opts.Kafka
		return nil
	}
	for i, rec := range r.opts.Records {
		if err := checkShape(s.source, rec); err != nil {
			return fmt.Errorf("localtest: %s: %w", where(i, rec), err)
		}
	}
	start := r.clock.Now() // the first record arrives as the run starts
	var err error
	switch s.source {
	case sevents.SourceKinesis:
		var ms *memStream
		ms, r.refs, err = newMemKinesis(m, s, r.opts.Records, start)
		r.stream = ms
	case sevents.SourceDynamoDB:
		var ms *memStream
		ms, r.refs, err = newMemDynamoDB(m, s, r.opts.Records, start)
		r.stream = ms
	case sevents.SourceSQS, sevents.SourceSQSFIFO:
		r.mq, r.refs, err = newMemQueue(m, s, r.opts.Records, start, r.clock)
		r.queue = r.mq
	case sevents.SourceKafka:
		var mk *memKafka
		mk, r.refs, err = newMemKafka(m, s, r.opts.Records, start)
		r.kafka = mk
	}
	return err
}

func (r *runner) setDestination() error {
	if r.opts.Destination != nil {
		r.dest = r.opts.Destination
		return nil
	}
	var err error
	r.dest, r.closeDest, err = r.openDestination(r.s.onFailure)
	return err
}

// fileDestination appends on-failure records to a file, one JSON per line.
type fileDestination struct {
	mu   sync.Mutex
	path string
}

func (f *fileDestination) Send(_ context.Context, rec sevents.OnFailureRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	file, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("on-failure destination: %w", err)
	}
	if _, err := file.Write(append(b, '\n')); err != nil {
		file.Close()
		return fmt.Errorf("on-failure destination: %w", err)
	}
	return file.Close()
}

// invoke makes one invocation with the injected faults, and counts it.
// env is the execution environment to run it in (see
// invocation.Invocation.Environment; 0: any).
func (r *runner) invoke(ctx context.Context, payload []byte, env int) (invocation.Response, string, error) {
	c, err := r.beginInvoke(payload)
	if err != nil {
		return invocation.Response{}, "", err
	}
	c.inv.Environment = env
	r.doInvoke(ctx, c)
	return r.endInvoke(c)
}

// pendingInvoke is one invocation between beginInvoke and endInvoke.
type pendingInvoke struct {
	n        int
	reqID    string
	inv      invocation.Invocation
	injected bool // an injected function error: the function is not called
	resp     invocation.Response
	err      error
}

// beginInvoke counts an invocation and draws its injected error, crash or
// timeout, in the order invocations are made, so that runs repeat.
func (r *runner) beginInvoke(payload []byte) (*pendingInvoke, error) {
	if r.report.Failure != nil {
		return nil, errStop
	}
	if r.n >= r.opts.MaxInvocations {
		r.report.Stopped = fmt.Sprintf("MaxInvocations (%d) reached", r.opts.MaxInvocations)
		return nil, errStop
	}
	r.n++
	r.report.Totals.Invocations++
	c := &pendingInvoke{n: r.n, reqID: fmt.Sprintf("%08x-0000-4000-8000-%012x", r.opts.Seed&0xffffffff, r.n)}
	c.inv = invocation.Invocation{RequestID: c.reqID, Payload: payload, Timeout: r.opts.FunctionTimeout, N: r.n}
	f := r.opts.Faults
	if f.ErrorRate > 0 && r.rnd.Float64() < f.ErrorRate {
		c.injected = true
		c.resp = invocation.Response{FunctionError: "Unhandled", ErrorType: "Injected.Error",
			Payload: errorDocument("injected function error", "Injected.Error")}
		return c, nil
	}
	expected := func() time.Duration { return killplan.Expected(r.recent, len(payload), r.opts.FunctionTimeout) }
	switch {
	case f.CrashRate > 0 && r.rnd.Float64() < f.CrashRate:
		c.inv.Kill = killplan.Plan(false, r.rnd.Float64(), r.rnd.Float64(), expected())
	case f.TimeoutRate > 0 && r.rnd.Float64() < f.TimeoutRate:
		c.inv.Kill = killplan.Plan(true, r.rnd.Float64(), r.rnd.Float64(), expected())
	}
	return c, nil
}

// doInvoke calls the function. It touches no runner state but the invoker
// and the clock, so several may run at once (SQS MaximumConcurrency,
// stream lanes).
func (r *runner) doInvoke(ctx context.Context, c *pendingInvoke) {
	if c.injected {
		return
	}
	c.resp, c.err = r.opts.Invoker.Invoke(ctx, c.inv)
	// Lambda retries a throttled invocation (HTTP 429) with back-off; it is
	// neither a function error nor a consumed retry.
	for wait := 100 * time.Millisecond; throttled(c.err) && wait <= 30*time.Second; wait *= 2 {
		if serr := r.clock.Sleep(ctx, wait); serr != nil {
			c.err = serr
			return
		}
		c.resp, c.err = r.opts.Invoker.Invoke(ctx, c.inv)
	}
}

// endInvoke takes note of the answer, in the order invocations were made.
// An injected crash or timeout is in the answer already: the invoker
// killed the process inside the invocation (Response.Killed).
func (r *runner) endInvoke(c *pendingInvoke) (invocation.Response, string, error) {
	r.reqID = c.reqID
	if c.injected {
		return c.resp, c.reqID, nil
	}
	if c.err != nil {
		return c.resp, c.reqID, fmt.Errorf("localtest: invocation %d: %w", c.n, c.err)
	}
	r.observe(c.resp, c.reqID, c.n)
	resp := c.resp
	switch k := resp.Killed; {
	case k != nil:
		if !k.Timeout {
			r.report.Totals.Crashes++
		}
		r.report.Kills = append(r.report.Kills, KilledInvocation{N: c.n, RequestID: c.reqID, Point: k.Point, Timeout: k.Timeout,
			AfterMs: k.After.Milliseconds(), after: k.After, Effects: -1, What: killplan.Words(k, c.inv.Timeout, -1),
			Env: resp.Environment, PID: resp.PID})
	case resp.TimedOut && !resp.InitFailed:
		if r.timedOut == nil {
			r.timedOut = map[string]bool{}
		}
		r.timedOut[c.reqID] = true
	case !resp.TimedOut && !resp.InitFailed && resp.ErrorType != "Runtime.ExitError":
		p := killplan.Pace{D: resp.Duration, Bytes: len(c.inv.Payload)}
		if len(r.recent) < recentKept {
			r.recent = append(r.recent, p)
		} else {
			r.recent[r.recentN%recentKept] = p
		}
		r.recentN++
	}
	return resp, c.reqID, nil
}

// Early stop: a function that failed this many inits in a row, and never
// started, is not going to start.
const maxInitFailures = 3

// observe takes note of what the function itself answered (before injected
// faults): the last failure and its last words, and whether the run can
// test the function at all (see Report.Failure). A run whose function
// cannot start stops early instead of spending every record's retries.
func (r *runner) observe(resp invocation.Response, reqID string, n int) {
	r.called++
	if resp.InitFailed {
		r.initFailed++
		r.initFailedInRow++
		r.report.Totals.InitFailures++
	} else {
		r.initFailedInRow = 0
		r.initOK = true
	}
	if !resp.TimedOut && !resp.InitFailed && resp.ErrorType != "Runtime.ExitError" {
		r.answered++
	}
	if !resp.Failed() {
		return
	}
	typ, msg := errorFields(resp)
	r.report.LastFailedInvocation = &FailedInvocation{N: n, RequestID: reqID, Result: resultOf(resp),
		ErrorType: typ, ErrorMessage: msg, Logs: resp.Logs}
	switch {
	case strings.HasSuffix(typ, "SourceMismatchError"):
		r.report.Failure = &RunFailure{Kind: FailureSourceMismatch,
			Reason: fmt.Sprintf("the function cannot handle %s events (%s: %s): check the handler against the mapping's EventSource", r.s.source, typ, msg)}
	case resp.InitFailed && !r.initOK && resp.TimedOut:
		r.report.Failure = &RunFailure{Kind: FailureInit,
			Reason: fmt.Sprintf("the function did not finish its init within the init timeout (%s)", msg)}
	case resp.InitFailed && !r.initOK && r.initFailedInRow >= maxInitFailures:
		r.report.Failure = &RunFailure{Kind: FailureInit,
			Reason: fmt.Sprintf("the function failed its init %d times in a row and never started (%s)", r.initFailedInRow, or(typ, "Runtime.ExitError"))}
	}
	if r.report.Failure != nil {
		r.report.Stopped = "the function cannot be tested: " + r.report.Failure.Kind
	}
}

// errorFields reads errorType and errorMessage from a failed response's
// error document.
func errorFields(resp invocation.Response) (typ, msg string) {
	var doc struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal(resp.Payload, &doc) == nil {
		typ, msg = doc.Type, doc.Message
	} else if b := bytes.TrimSpace(resp.Payload); len(b) > 0 {
		msg = string(b)
	}
	if typ == "" {
		typ = resp.ErrorType
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	return typ, msg
}

func throttled(err error) bool {
	var t interface{ Throttled() bool }
	return errors.As(err, &t) && t.Throttled()
}

func (r *runner) trace(e TraceEntry, resp invocation.Response) {
	if e.N == 0 {
		e.N, e.RequestID = r.n, r.reqID
	}
	if e.Reported == nil {
		e.Reported = []string{}
	}
	if e.Env == 0 {
		e.Env, e.PID = resp.Environment, resp.PID
	}
	if resp.Failed() {
		e.ErrorType, e.ErrorMessage = errorFields(resp)
	}
	if resp.Killed != nil && e.Killed == "" {
		e.Killed = killplan.Words(resp.Killed, r.opts.FunctionTimeout, -1)
	}
	switch e.Result {
	case ResultSuccess:
		if !e.Duplicate {
			r.report.Totals.Successes++
		}
	case ResultPartial:
		r.report.Totals.PartialFailures++
	case ResultFunctionError:
		r.report.Totals.FunctionErrors++
	case ResultTimeout:
		r.report.Totals.Timeouts++
	}
	if r.opts.Trace != nil {
		r.opts.Trace(e)
	}
	if r.opts.Progress != nil {
		r.opts.Progress(r.report.Totals)
	}
}

func resultOf(resp invocation.Response) string {
	switch {
	case resp.TimedOut:
		return ResultTimeout
	case resp.FunctionError != "":
		return ResultFunctionError
	}
	return ResultSuccess
}

func (r *runner) resolve(id, fate string) {
	if r.refs == nil { // a real source's records are known as they come
		r.see(inputRef{id: id})
	}
	r.fates[id] = fate
}

// see notes a record delivered from a real source, the first time.
func (r *runner) see(ref inputRef) {
	if _, ok := r.known[ref.id]; !ok {
		r.known[ref.id] = len(r.seen)
		r.seen = append(r.seen, ref)
	}
}

func (r *runner) sendOnFailure(ctx context.Context, rec sevents.OnFailureRecord, batch onfailure.FailedBatch) error {
	r.report.OnFailureRecords = append(r.report.OnFailureRecords, rec)
	if r.dest == nil {
		return nil
	}
	if pd, ok := r.dest.(onfailure.PayloadDestination); ok {
		batch.MappingUUID = r.mappingUUID()
		return pd.SendBatch(ctx, rec, batch)
	}
	return r.dest.Send(ctx, rec)
}

// finish settles fates of what was never resolved, counts, checkpoints and
// runs the invariant checks.
func (r *runner) finish(ctx context.Context) error {
	if r.queue != nil {
		left, dl, err := r.queue.Counts(ctx)
		if err != nil {
			return fmt.Errorf("localtest: queue counts: %w", err)
		}
		r.report.QueueLeft, r.report.DeadLettered = left, dl
		if r.mq != nil {
			for _, id := range r.mq.DeadLettered() {
				r.resolve(id, FateDeadLettered)
			}
		} else if left == 0 {
			// A real queue that is empty: what was received and never
			// deleted went to its dead-letter queue (the only other way
			// out, retention, takes days).
			var pending []string
			for _, ref := range r.seen {
				if r.fates[ref.id] == FateLeft {
					pending = append(pending, ref.id)
				}
			}
			if len(pending) <= dl {
				for _, id := range pending {
					r.resolve(id, FateDeadLettered)
				}
			}
		}
	}
	for _, ref := range r.refs {
		if _, ok := r.fates[ref.id]; !ok {
			r.resolve(ref.id, FateLeft)
		}
	}
	if r.report.Failure == nil && r.called > 0 {
		switch {
		case r.initFailed == r.called:
			r.report.Failure = &RunFailure{Kind: FailureInit,
				Reason: fmt.Sprintf("every invocation (%d) failed at init: the function never started", r.called)}
		case r.answered == 0:
			r.report.Failure = &RunFailure{Kind: FailureNoAnswer,
				Reason: fmt.Sprintf("the function never answered: each of its %d invocations timed out or crashed before it answered", r.called)}
		}
	}
	r.checkRun(ctx)
	// Records that were never tried are not lost, but they were not tested
	// either: a run that failed or stopped early holds nothing.
	why := ""
	switch {
	case r.report.Failure != nil:
		why = "the run could not test the function (" + r.report.Failure.Kind + ")"
	case r.report.Stopped != "":
		why = "the run stopped before every record was resolved: " + r.report.Stopped
	}
	if why != "" {
		for i, inv := range r.report.Invariants {
			r.report.Invariants[i] = inv.notEvaluated(why)
		}
	}
	return nil
}

// countKillEffects counts, for each killed invocation, the effects it left
// behind, when the effects name their invocation (Effect.Request), and
// says so in its words.
func countKillEffects(kills []KilledInvocation, effects []Effect, timeout time.Duration) {
	if len(kills) == 0 {
		return
	}
	by := map[string]int{}
	named := false
	for _, e := range effects {
		if e.Request != "" {
			named = true
			by[e.Request]++
		}
	}
	if !named {
		return
	}
	for i := range kills {
		k := &kills[i]
		k.Effects = by[k.RequestID]
		k.What = killplan.Words(&invocation.Kill{Point: k.Point, Timeout: k.Timeout, After: k.after}, timeout, k.Effects)
	}
}

// records lists every record the run knows of, in input order.
func (r *runner) records() []inputRef {
	if r.refs != nil {
		return r.refs
	}
	return r.seen
}

// ReadEffects reads an effects file: one JSON object per line, as the
// conformance function writes to SLUICE_EFFECTS_FILE:
// {"record": <record id>, "id": <payload id>, "key": <ordering key>,
// "request": <the invocation's request id>}.
// With key set (Options.EffectsKey), Effect.ID is read from the line's field
// of that name instead (a string, or any other JSON value's text). A
// missing file is no effects.
func ReadEffects(path, key string) ([]Effect, error) {
	idField := "id"
	if key != "" {
		idField = key
	}
	var out []Effect
	err := readJSONLines(path, func(line []byte) error {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err != nil {
			return fmt.Errorf("%w (want one JSON object per line)", err)
		}
		out = append(out, Effect{Record: jsonText(fields["record"]), ID: jsonText(fields[idField]), Key: jsonText(fields["key"]),
			Request: jsonText(fields["request"])})
		return nil
	})
	return out, err
}
