package invoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

// Limits and defaults of the Runtime API invoker, as Lambda applies them.
const (
	// DefaultInitTimeout bounds a cold start: the time from starting the
	// process to its first GET .../invocation/next (Lambda's 10 s init
	// limit). RuntimeAPIInitTimeout changes it.
	DefaultInitTimeout = 10 * time.Second
	// maxResponseSize is Lambda's limit on a synchronous response; a larger
	// one is the function error Function.ResponseSizeTooLarge.
	maxResponseSize = 6 << 20
	// runtimeLogSize is how much of the function's output Logs keeps.
	runtimeLogSize = 1 << 20
	// LogLines is how many of its last output lines a failed invocation
	// carries in Response.Logs; longer lines are cut at maxLogLine bytes.
	LogLines   = 20
	maxLogLine = 2000
)

const (
	stopWait    = 5 * time.Second
	testAccount = "123456789012"

	hdrRequestID   = "Lambda-Runtime-Aws-Request-Id"
	hdrDeadline    = "Lambda-Runtime-Deadline-Ms"
	hdrFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	hdrTraceID     = "Lambda-Runtime-Trace-Id"
	hdrErrorType   = "Lambda-Runtime-Function-Error-Type"
	hdrErrorBody   = "Lambda-Runtime-Function-Error-Body" // a trailer
)

// ErrInvokerClosed is returned by Invoke after Close.
var ErrInvokerClosed = errors.New("localtest: invoker is closed")

// RuntimeAPIInvoker runs a compiled Lambda function ("bootstrap") as Lambda
// runs a provided.al2023 function: as a child process that pulls its
// invocations from a Lambda Runtime API server hosted in this process on
// 127.0.0.1 (GET /2018-06-01/runtime/invocation/next, POST .../{id}/response,
// .../{id}/error and /runtime/init/error).
//
// The server is net/http's, one per process: a maintained server rather
// than the hand-written HTTP/1.1 loop this package had, which saved a
// goroutine hand-off and net/http's background read per request (a few
// tens of microseconds of an invocation's few hundred; see
// BenchmarkRuntimeAPIInvoke) at the cost of a parser and a server of its
// own to maintain.
//
// Execution environments: as Lambda runs a function under concurrency,
// the invoker runs several execution environments at once, each its own
// process with its own init, its own Runtime API server and its own
// memory, killed and restarted on its own. An environment runs one
// invocation at a time. Invocation.Environment names the one to use (1,
// 2, ...; the local runner numbers them so a run repeats), waiting while
// it is busy; 0 takes the first idle one, or starts a new one when all are
// busy. Response.Environment and Response.PID say where an invocation ran.
//
// Lifecycle of each environment, as in Lambda:
//   - The process starts on the environment's first Invoke (init) and is
//     reused while it lives. Init must reach /next within the init timeout
//     (DefaultInitTimeout; RuntimeAPIInitTimeout). An invocation that
//     fails before it (exit, /init/error, init timeout) answers with
//     Response.InitFailed set.
//   - When an invocation passes its deadline (Invocation.Timeout, default
//     invocation.DefaultFunctionTimeout, counted from the hand-over to the
//     function, init excluded) the whole process group is killed and the answer is a
//     timeout (ErrorType Sandbox.Timedout). The environment's next Invoke
//     starts a fresh process.
//   - If the process exits before answering (an unrecovered panic,
//     os.Exit, an init failure) the answer is the function error
//     Runtime.ExitError, or the type the runtime posted to /init/error, and
//     the environment's next Invoke starts a fresh process.
//   - If ctx ends during an invocation the process is killed too (an
//     invocation cannot be withdrawn) and Invoke returns ctx's error.
//   - An injected crash (Invocation.Kill, set by localtest.Run for
//     Faults.CrashRate) kills the process group with SIGKILL inside the
//     invocation: instead of handing it the invocation (KillAtHandOver),
//     Kill.After after the hand-over (KillMidBatch), or when it posts its
//     answer, which is held and never delivered (KillBeforeAnswer; a
//     mid-batch moment that comes after the answer lands here too). The
//     answer is Runtime.ExitError ("signal: killed"), with Response.Killed
//     saying where the kill landed; the environment's next Invoke starts a
//     fresh process, and the other environments run on.
//   - An injected timeout (Kill.Timeout) freezes the process group with
//     SIGSTOP at Kill.After (or when it answers, holding the answer), as a
//     function stuck in a call, and kills it with SIGKILL when the
//     invocation's deadline passes: Sandbox.Timedout, then a fresh process.
//     (Where SIGSTOP does not exist the process runs on until the
//     deadline.)
//
// Each process gets the environment given to RuntimeAPI plus Lambda's
// reserved variables. On Linux it is also killed if this process dies.
// The processes' stdout and stderr are kept in one ring buffer (see Logs);
// a failed invocation carries its last LogLines lines in Response.Logs;
// and RuntimeAPILogs streams every line as it comes.
type RuntimeAPIInvoker struct {
	bootstrap   string
	taskRoot    string
	env         []string // without AWS_LAMBDA_RUNTIME_API
	arn         string
	initTimeout time.Duration

	logs   *ringBuffer
	stream io.Writer // RuntimeAPILogs (a lockedWriter), or nil

	mu      sync.Mutex // guards envs, freed, waiting, closed, and each environment's busy and sb
	envs    []*environment
	freed   chan struct{} // closed, and replaced, when an environment becomes idle while an Invoke waits
	waiting int           // Invokes waiting on freed
	closed  bool
}

// environment is one execution environment: a slot that holds at most one
// process at a time and runs one invocation at a time.
type environment struct {
	id    int
	out   *lineLog    // its function's output, line by line
	timer *time.Timer // used by the invocation holding the environment
	pid   int         // the process the current invocation ran in (0: none started)
	busy  bool        // under RuntimeAPIInvoker.mu
	sb    *sandbox    // under RuntimeAPIInvoker.mu
}

var _ invocation.Killer = (*RuntimeAPIInvoker)(nil)

// CanKill reports that the invoker can kill the function's process inside
// an invocation (Invocation.Kill): always, since the process is its child.
func (r *RuntimeAPIInvoker) CanKill() bool { return true }

// RuntimeAPI returns a *RuntimeAPIInvoker for the bootstrap binary (built
// with CGO_ENABLED=0 go build -tags lambda.norpc). env is the function's
// environment ("KEY=value"; a runner passes os.Environ() plus its own
// settings); RuntimeAPI adds AWS_LAMBDA_RUNTIME_API, _HANDLER=bootstrap,
// LAMBDA_TASK_ROOT (the binary's directory, also the working directory),
// AWS_LAMBDA_FUNCTION_VERSION=$LATEST, AWS_LAMBDA_INITIALIZATION_TYPE, and
// defaults AWS_LAMBDA_FUNCTION_NAME (function),
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE (128) and AWS_REGION / AWS_DEFAULT_REGION
// (us-east-1) when env does not set them.
//
// No process starts until the first Invoke.
func RuntimeAPI(bootstrap string, env []string, opts ...RuntimeAPIOption) (invocation.Invoker, error) {
	abs, err := filepath.Abs(bootstrap)
	if err != nil {
		return nil, fmt.Errorf("localtest: bootstrap %s: %w", bootstrap, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("localtest: bootstrap %s: %w (build it with CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap)", bootstrap, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("localtest: bootstrap %s is not an executable file", bootstrap)
	}

	lookup := func(k string) string {
		v := ""
		for _, kv := range env {
			if key, val, ok := strings.Cut(kv, "="); ok && key == k {
				v = val // the last one wins, as in exec.Cmd
			}
		}
		return v
	}
	orDefault := func(k, def string) string {
		if v := lookup(k); v != "" {
			return v
		}
		return def
	}
	name := orDefault("AWS_LAMBDA_FUNCTION_NAME", "function")
	region := orDefault("AWS_REGION", orDefault("AWS_DEFAULT_REGION", "us-east-1"))
	root := filepath.Dir(abs)

	full := make([]string, 0, len(env)+12)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "AWS_LAMBDA_RUNTIME_API", "_LAMBDA_SERVER_PORT":
			continue // ours; the second would switch aws-lambda-go to its RPC mode
		}
		full = append(full, kv)
	}
	full = append(full,
		"AWS_LAMBDA_FUNCTION_NAME="+name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+orDefault("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_REGION="+region,
		"AWS_DEFAULT_REGION="+orDefault("AWS_DEFAULT_REGION", region),
		"_HANDLER=bootstrap",
		"LAMBDA_TASK_ROOT="+root,
	)
	r := &RuntimeAPIInvoker{
		bootstrap:   abs,
		taskRoot:    root,
		env:         full,
		arn:         "arn:aws:lambda:" + region + ":" + testAccount + ":function:" + name,
		initTimeout: DefaultInitTimeout,
		logs:        newRingBuffer(runtimeLogSize),
		freed:       make(chan struct{}),
	}
	var errs []error
	for _, o := range opts {
		if err := o(r); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("localtest: RuntimeAPI: %w", err)
	}
	return r, nil
}

// FunctionARN is the function's ARN as the invoker tells it to the function
// (from AWS_LAMBDA_FUNCTION_NAME and AWS_REGION); Run names the same
// function in on-failure records.
func (r *RuntimeAPIInvoker) FunctionARN() string { return r.arn }

// A RuntimeAPIOption configures RuntimeAPI.
type RuntimeAPIOption func(*RuntimeAPIInvoker) error

// RuntimeAPIInitTimeout sets how long a cold start may take before the
// invocation fails as an init timeout (default DefaultInitTimeout, Lambda's
// 10 s).
func RuntimeAPIInitTimeout(d time.Duration) RuntimeAPIOption {
	return func(r *RuntimeAPIInvoker) error {
		if d <= 0 {
			return fmt.Errorf("RuntimeAPIInitTimeout(%v): must be positive", d)
		}
		r.initTimeout = d
		return nil
	}
}

// RuntimeAPILogs streams the function's stdout and stderr to w as they
// come, one line at a time, each prefixed by the invocation it belongs to:
// "[#12 <request id>] " (the number is Invocation.N), or "[init] " for
// lines written while the process starts; a line of execution environment
// 2 or later says so ("[#12 <request id> env 2] ", "[init env 2] ").
// Writes to w are serialised.
func RuntimeAPILogs(w io.Writer) RuntimeAPIOption {
	return func(r *RuntimeAPIInvoker) error {
		if w == nil {
			return errors.New("RuntimeAPILogs(nil)")
		}
		r.stream = &lockedWriter{w: w}
		return nil
	}
}

// Logs returns the function's recent stdout and stderr (the last 1 MB,
// across restarts and environments), with a line from the invoker at each
// start, exit, timeout and kill.
func (r *RuntimeAPIInvoker) Logs() string { return r.logs.String() }

// PID returns the process id of the function running in the first
// execution environment, or 0 if none runs there.
func (r *RuntimeAPIInvoker) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.envs) == 0 || r.envs[0].sb == nil {
		return 0
	}
	sb := r.envs[0].sb
	select {
	case <-sb.exited:
		return 0
	default:
		return sb.pid()
	}
}

// Close kills every environment's process group, waits for them to exit
// and stops their Runtime API servers. An Invoke in progress returns
// ErrInvokerClosed. Close is idempotent.
func (r *RuntimeAPIInvoker) Close() error {
	r.mu.Lock()
	r.closed = true
	var sbs []*sandbox
	for _, e := range r.envs {
		if e.sb != nil {
			sbs = append(sbs, e.sb)
			e.sb = nil
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, sb := range sbs {
		if err := sb.stop("closed"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// acquire takes execution environment n (1, 2, ...), or with n 0 the
// first idle one or a new one, waiting while the one it needs is busy.
func (r *RuntimeAPIInvoker) acquire(ctx context.Context, n int) (*environment, error) {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, ErrInvokerClosed
		}
		var e *environment
		if n > 0 {
			for len(r.envs) < n {
				r.addEnvironment()
			}
			if !r.envs[n-1].busy {
				e = r.envs[n-1]
			}
		} else {
			for _, x := range r.envs {
				if !x.busy {
					e = x
					break
				}
			}
			if e == nil {
				e = r.addEnvironment()
			}
		}
		if e != nil {
			e.busy = true
			r.mu.Unlock()
			return e, nil
		}
		freed := r.freed
		r.waiting++
		r.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
		}
		r.mu.Lock()
		r.waiting--
		r.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// addEnvironment adds an environment (no process yet); under r.mu.
func (r *RuntimeAPIInvoker) addEnvironment() *environment {
	t := time.NewTimer(time.Hour)
	t.Stop()
	e := &environment{id: len(r.envs) + 1, timer: t, out: &lineLog{ring: r.logs, stream: r.stream}}
	if e.id > 1 {
		e.out.initLabel = "init env " + strconv.Itoa(e.id)
	}
	r.envs = append(r.envs, e)
	return e
}

// release makes e idle again.
func (r *RuntimeAPIInvoker) release(e *environment) {
	r.mu.Lock()
	e.busy = false
	if r.waiting > 0 {
		close(r.freed)
		r.freed = make(chan struct{})
	}
	r.mu.Unlock()
}

// Invoke runs one invocation; see RuntimeAPIInvoker for the lifecycle.
func (r *RuntimeAPIInvoker) Invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
	if inv.Environment < 0 {
		return invocation.Response{}, fmt.Errorf("localtest: Invocation.Environment %d: want 0 (any) or an environment's number from 1", inv.Environment)
	}
	e, err := r.acquire(ctx, inv.Environment)
	if err != nil {
		return invocation.Response{}, err
	}
	defer r.release(e)
	if inv.RequestID == "" {
		inv.RequestID = newRequestID()
	}
	label := inv.RequestID
	if inv.N > 0 {
		label = "#" + strconv.Itoa(inv.N) + " " + inv.RequestID
	}
	if e.id > 1 {
		label += " env " + strconv.Itoa(e.id)
	}
	e.out.begin(label)
	e.pid = 0
	resp, err := r.invoke(ctx, e, inv)
	if err == nil {
		resp.Environment, resp.PID = e.id, e.pid
		if resp.Failed() {
			resp.Logs = e.out.last()
		}
	}
	return resp, err
}

func (r *RuntimeAPIInvoker) invoke(ctx context.Context, e *environment, inv invocation.Invocation) (invocation.Response, error) {
	timeout := inv.Timeout
	if timeout <= 0 {
		timeout = invocation.DefaultFunctionTimeout
	}
	id := inv.RequestID
	if id == "" {
		id = newRequestID()
	}

	// Wait for the function to ask for work: at once when warm, after init
	// when cold. A warm process that died since its last invocation (it
	// posted an error and exited, say) is replaced, as Lambda replaces it.
	var (
		sb       *sandbox
		cold     bool
		deadline time.Time
	)
	for attempt := 0; ; attempt++ {
		var err error
		sb, cold, err = r.sandbox(e)
		if err != nil {
			return invocation.Response{}, err
		}
		e.pid = sb.pid()
		if cold {
			e.timer.Reset(r.initTimeout)
		} else {
			e.timer.Reset(timeout) // a warm process asks at once: it must within the timeout
		}
		select {
		case <-sb.idle: // a GET /next waits
		case <-sb.exited:
			e.timer.Stop()
			if !cold && attempt == 0 {
				continue
			}
			return r.exitResponse(e, sb, id, time.Time{})
		case <-sb.initFailed:
			e.timer.Stop()
			r.kill(e, sb, "posted /runtime/init/error")
			return r.exitResponse(e, sb, id, time.Time{})
		case <-e.timer.C:
			if cold {
				r.kill(e, sb, fmt.Sprintf("init did not finish within %v", r.initTimeout))
				resp := invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, InitFailed: true,
					Payload: errorDocument(fmt.Sprintf("RequestId: %s Error: the function did not finish its init within %v (init timeout): "+
						"it never asked for an invocation", id, r.initTimeout), "Sandbox.Timedout")}
				return r.closedOr(resp)
			}
			r.kill(e, sb, "timed out before asking for the invocation")
			return r.closedOr(timedOut(id, timeout, timeout))
		case <-ctx.Done():
			e.timer.Stop()
			r.kill(e, sb, "invocation abandoned: "+ctx.Err().Error())
			return invocation.Response{}, ctx.Err()
		}
		break
	}
	// The deadline counts from the hand-over (init excluded).
	start := time.Now()
	deadline = start.Add(timeout)
	e.timer.Reset(timeout)

	sb.out.drain() // what init wrote is init's
	e.out.handOver()
	plan := inv.Kill
	if plan != nil && !plan.Timeout && plan.Point == invocation.KillAtHandOver {
		e.timer.Stop()
		return r.killed(ctx, e, sb, id, start, timeout, invocation.Kill{Point: invocation.KillAtHandOver})
	}
	c := &sb.call
	sb.mu.Lock()
	c.id, c.payload, c.deadline, c.active, c.hold = id, inv.Payload, deadline, true, plan != nil
	sb.mu.Unlock()
	sb.give <- c // the GET /next answers with it

	var killC <-chan time.Time // the moment of an injected mid-batch kill
	if plan != nil && (plan.Timeout || plan.Point == invocation.KillMidBatch) {
		kt := time.NewTimer(plan.After)
		defer kt.Stop()
		killC = kt.C
	}
	var res result
	select {
	case res = <-sb.done:
		if plan != nil { // the answer is held: it never reaches Lambda
			return r.killed(ctx, e, sb, id, start, timeout, invocation.Kill{Point: invocation.KillBeforeAnswer, Timeout: plan.Timeout})
		}
		e.timer.Stop()
		sb.out.drain() // what it wrote before answering is this invocation's
	case <-killC:
		k := invocation.Kill{Point: invocation.KillMidBatch, Timeout: plan.Timeout}
		if _, ok := sb.takeResult(); ok {
			k.Point = invocation.KillBeforeAnswer
		}
		return r.killed(ctx, e, sb, id, start, timeout, k)
	case <-sb.exited:
		e.timer.Stop()
		if res, ok := sb.takeResult(); ok {
			return r.closedOr(res.response(time.Since(start)))
		}
		return r.exitResponse(e, sb, id, start)
	case <-e.timer.C:
		if res, ok := sb.takeResult(); ok { // answered at the wire
			sb.out.drain()
			return res.response(time.Since(start)), nil
		}
		r.kill(e, sb, fmt.Sprintf("request %s timed out after %v", id, timeout))
		return r.closedOr(timedOut(id, timeout, time.Since(start)))
	case <-ctx.Done():
		e.timer.Stop()
		r.kill(e, sb, fmt.Sprintf("request %s abandoned: %v", id, ctx.Err()))
		return invocation.Response{}, ctx.Err()
	}
	sb.mu.Lock()
	c.active, c.payload = false, nil
	sb.mu.Unlock()
	return res.response(time.Since(start)), nil
}

// killed carries out an injected crash or timeout on sb, the invocation
// id having started (been handed over, or about to be) at start: a crash
// kills the process group now; a timeout freezes it now and kills it when
// the deadline timer fires. The answer says where the kill landed.
func (r *RuntimeAPIInvoker) killed(ctx context.Context, e *environment, sb *sandbox, id string, start time.Time, timeout time.Duration, k invocation.Kill) (invocation.Response, error) {
	k.After = time.Since(start)
	where := map[invocation.KillPoint]string{
		invocation.KillAtHandOver:   "at the hand-over, before the first record",
		invocation.KillMidBatch:     fmt.Sprintf("mid-batch, %v after the hand-over", k.After.Round(time.Microsecond)),
		invocation.KillBeforeAnswer: "after the function's last effect, holding its answer",
	}[k.Point]
	if !k.Timeout {
		e.timer.Stop()
		r.kill(e, sb, fmt.Sprintf("injected crash: request %s killed %s", id, where))
		resp, err := r.exitResponse(e, sb, id, start)
		resp.Killed = &k
		return resp, err
	}
	pid := sb.pid()
	frozen := stopProcessGroup(sb.cmd.Process)
	if frozen {
		sb.note(fmt.Sprintf("localtest: injected timeout: froze pid %d %s; killing it at the deadline (%v)", pid, where, timeout))
	} else {
		sb.note(fmt.Sprintf("localtest: injected timeout: pid %d cannot be frozen here; killing it at the deadline (%v)", pid, timeout))
	}
	select {
	case <-e.timer.C:
	case <-sb.exited:
		e.timer.Stop()
		return r.exitResponse(e, sb, id, start)
	case <-ctx.Done():
		e.timer.Stop()
		r.kill(e, sb, fmt.Sprintf("request %s abandoned: %v", id, ctx.Err()))
		return invocation.Response{}, ctx.Err()
	}
	r.kill(e, sb, fmt.Sprintf("injected timeout: request %s reached its deadline (%v)", id, timeout))
	resp := timedOut(id, timeout, time.Since(start))
	resp.Killed = &k
	return r.closedOr(resp)
}

// sandbox returns e's live sandbox, starting one if there is none.
func (r *RuntimeAPIInvoker) sandbox(e *environment) (*sandbox, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false, ErrInvokerClosed
	}
	if sb := e.sb; sb != nil {
		select {
		case <-sb.exited:
			e.sb = nil
			sb.shutdown()
		default:
			return sb, false, nil
		}
	}
	sb, err := r.start(e)
	if err != nil {
		return nil, false, err
	}
	e.sb = sb
	return sb, true, nil
}

// forget drops sb from e, if it is still e's.
func (r *RuntimeAPIInvoker) forget(e *environment, sb *sandbox) {
	r.mu.Lock()
	if e.sb == sb {
		e.sb = nil
	}
	r.mu.Unlock()
}

// kill stops sb (its process group and server) and forgets it.
func (r *RuntimeAPIInvoker) kill(e *environment, sb *sandbox, why string) {
	r.forget(e, sb)
	if err := sb.stop(why); err != nil {
		r.logs.Printf("localtest: %v\n", err)
	}
}

// closedOr returns ErrInvokerClosed instead of resp if Close has run.
func (r *RuntimeAPIInvoker) closedOr(resp invocation.Response) (invocation.Response, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return invocation.Response{}, ErrInvokerClosed
	}
	return resp, nil
}

// exitResponse answers an invocation whose process has exited (or posted
// /init/error and was killed).
func (r *RuntimeAPIInvoker) exitResponse(e *environment, sb *sandbox, id string, start time.Time) (invocation.Response, error) {
	r.forget(e, sb)
	sb.shutdown()
	resp := invocation.Response{FunctionError: "Unhandled", InitFailed: start.IsZero()}
	if !start.IsZero() {
		resp.Duration = time.Since(start)
	}
	if doc, typ, ok := sb.initError(); ok {
		resp.ErrorType, resp.Payload = typ, doc
		return r.closedOr(resp)
	}
	resp.ErrorType = "Runtime.ExitError"
	msg := "Runtime exited without providing a reason"
	if st := sb.cmd.ProcessState; st != nil && !st.Success() {
		msg = "Runtime exited with error: " + st.String()
	}
	resp.Payload = errorDocument("RequestId: "+id+" Error: "+msg, resp.ErrorType)
	return r.closedOr(resp)
}

func timedOut(id string, timeout, d time.Duration) invocation.Response {
	return invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Duration: d,
		Payload: errorDocument(fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", id, timeout.Seconds()), "Sandbox.Timedout")}
}

// start launches e's process behind a fresh Runtime API server.
func (r *RuntimeAPIInvoker) start(e *environment) (*sandbox, error) {
	sb, err := newSandbox(r.arn, e.out)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.bootstrap)
	cmd.Dir = r.taskRoot
	cmd.Env = append(r.env[:len(r.env):len(r.env)], "AWS_LAMBDA_RUNTIME_API="+sb.ln.Addr().String())
	out, err := attachOutput(cmd, e.out)
	if err != nil {
		sb.shutdown()
		return nil, fmt.Errorf("localtest: a pipe for the function's output: %w", err)
	}
	sb.out = out
	e.out.initStart()
	cmd.WaitDelay = time.Second // a grandchild holding the output pipe must not block Wait
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		out.started(cmd)
		out.finish()
		sb.shutdown()
		return nil, fmt.Errorf("localtest: starting %s: %w", r.bootstrap, err)
	}
	out.started(cmd)
	sb.cmd = cmd
	where := ""
	if e.id > 1 {
		where = fmt.Sprintf(" in execution environment %d", e.id)
	}
	sb.note(fmt.Sprintf("localtest: started %s (pid %d, a new process: init)%s, Runtime API on %s", r.bootstrap, cmd.Process.Pid, where, sb.ln.Addr()))
	go func() {
		err := cmd.Wait()
		out.finish() // all it wrote is in before anyone learns it exited
		sb.note(fmt.Sprintf("localtest: pid %d exited: %v", cmd.Process.Pid, exitStatus(err, cmd.ProcessState)))
		close(sb.exited)
	}()
	return sb, nil
}

func exitStatus(err error, st *os.ProcessState) string {
	if st != nil {
		return st.String()
	}
	return err.Error()
}
