package invoke

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
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
	runtimeAPIPrefix = "/2018-06-01/runtime/"
	stopWait         = 5 * time.Second
	testAccount      = "123456789012"

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
// Lifecycle, as in a Lambda execution environment:
//   - The process starts on the first Invoke (init) and is reused while it
//     lives. Init must reach /next within the init timeout
//     (DefaultInitTimeout; RuntimeAPIInitTimeout). An invocation that
//     fails before it (exit, /init/error, init timeout) answers with
//     Response.InitFailed set.
//   - Invocations run one at a time; Invoke waits for the previous one.
//   - When an invocation passes its deadline (Invocation.Timeout, default
//     invocation.DefaultFunctionTimeout, counted from the hand-over to the function,
//     init excluded) the whole process group is killed and the answer is a
//     timeout (ErrorType Sandbox.Timedout). The next Invoke starts a fresh
//     process.
//   - If the process exits before answering (an unrecovered panic,
//     os.Exit, an init failure) the answer is the function error
//     Runtime.ExitError, or the type the runtime posted to /init/error, and
//     the next Invoke starts a fresh process.
//   - If ctx ends during an invocation the process is killed too (an
//     invocation cannot be withdrawn) and Invoke returns ctx's error.
//   - An injected crash (Invocation.Kill, set by localtest.Run for
//     Faults.CrashRate) kills the process group with SIGKILL inside the
//     invocation: instead of handing it the invocation (KillAtHandOver),
//     Kill.After after the hand-over (KillMidBatch), or when it posts its
//     answer, which is held and never delivered (KillBeforeAnswer; a
//     mid-batch moment that comes after the answer lands here too). The
//     answer is Runtime.ExitError ("signal: killed"), with Response.Killed
//     saying where the kill landed; the next Invoke starts a fresh process.
//   - An injected timeout (Kill.Timeout) freezes the process group with
//     SIGSTOP at Kill.After (or when it answers, holding the answer), as a
//     function stuck in a call, and kills it with SIGKILL when the
//     invocation's deadline passes: Sandbox.Timedout, then a fresh process.
//     (Where SIGSTOP does not exist the process runs on until the
//     deadline.)
//
// The process gets the environment given to RuntimeAPI plus Lambda's
// reserved variables. On Linux it is also killed if this process dies.
// Its stdout and stderr are kept in a ring buffer (see Logs); a failed
// invocation carries its last LogLines lines in Response.Logs; and
// RuntimeAPILogs streams every line as it comes.
type RuntimeAPIInvoker struct {
	bootstrap   string
	taskRoot    string
	env         []string // without AWS_LAMBDA_RUNTIME_API
	arn         string
	initTimeout time.Duration

	sem   chan struct{} // held by the Invoke in progress
	timer *time.Timer   // used under sem
	logs  *ringBuffer
	out   *lineLog // the function's output, line by line

	mu     sync.Mutex // guards sb and closed
	sb     *sandbox
	closed bool
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
	t := time.NewTimer(time.Hour)
	t.Stop()
	logs := newRingBuffer(runtimeLogSize)
	r := &RuntimeAPIInvoker{
		bootstrap:   abs,
		taskRoot:    root,
		env:         full,
		arn:         "arn:aws:lambda:" + region + ":" + testAccount + ":function:" + name,
		initTimeout: DefaultInitTimeout,
		sem:         make(chan struct{}, 1),
		timer:       t,
		logs:        logs,
		out:         &lineLog{ring: logs},
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
// lines written while the process starts. Writes to w are serialised.
func RuntimeAPILogs(w io.Writer) RuntimeAPIOption {
	return func(r *RuntimeAPIInvoker) error {
		if w == nil {
			return errors.New("RuntimeAPILogs(nil)")
		}
		r.out.stream = w
		return nil
	}
}

// Logs returns the function's recent stdout and stderr (the last 1 MB,
// across restarts), with a line from the invoker at each start, exit,
// timeout and kill.
func (r *RuntimeAPIInvoker) Logs() string { return r.logs.String() }

// PID returns the process id of the running function, or 0 if none runs.
func (r *RuntimeAPIInvoker) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sb == nil {
		return 0
	}
	select {
	case <-r.sb.exited:
		return 0
	default:
		return r.sb.cmd.Process.Pid
	}
}

// Close kills the function's process group, waits for it to exit and
// stops the Runtime API server. An Invoke in progress returns
// ErrInvokerClosed. Close is idempotent.
func (r *RuntimeAPIInvoker) Close() error {
	r.mu.Lock()
	r.closed = true
	sb := r.sb
	r.sb = nil
	r.mu.Unlock()
	if sb != nil {
		return sb.stop("closed")
	}
	return nil
}

// Invoke runs one invocation; see RuntimeAPIInvoker for the lifecycle.
func (r *RuntimeAPIInvoker) Invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return invocation.Response{}, ctx.Err()
	}
	defer func() { <-r.sem }()
	if inv.RequestID == "" {
		inv.RequestID = newRequestID()
	}
	label := inv.RequestID
	if inv.N > 0 {
		label = "#" + strconv.Itoa(inv.N) + " " + inv.RequestID
	}
	r.out.begin(label)
	resp, err := r.invoke(ctx, inv)
	if err == nil && resp.Failed() {
		resp.Logs = r.out.last()
	}
	return resp, err
}

func (r *RuntimeAPIInvoker) invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
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
		nc       *nextConn // the connection whose GET /next waits
	)
	for attempt := 0; ; attempt++ {
		var err error
		sb, cold, err = r.sandbox()
		if err != nil {
			return invocation.Response{}, err
		}
		if cold {
			r.timer.Reset(r.initTimeout)
		} else {
			deadline = time.Now().Add(timeout)
			r.timer.Reset(timeout)
		}
		select {
		case nc = <-sb.idle:
		case <-sb.exited:
			r.timer.Stop()
			if !cold && attempt == 0 {
				continue
			}
			return r.exitResponse(sb, id, time.Time{})
		case <-sb.initFailed:
			r.timer.Stop()
			r.kill(sb, "posted /runtime/init/error")
			return r.exitResponse(sb, id, time.Time{})
		case <-r.timer.C:
			if cold {
				r.kill(sb, fmt.Sprintf("init did not finish within %v", r.initTimeout))
				resp := invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, InitFailed: true,
					Payload: errorDocument(fmt.Sprintf("RequestId: %s Error: the function did not finish its init within %v (init timeout): "+
						"it never asked for an invocation", id, r.initTimeout), "Sandbox.Timedout")}
				return r.closedOr(resp)
			}
			r.kill(sb, "timed out before asking for the invocation")
			return r.closedOr(timedOut(id, timeout, timeout))
		case <-ctx.Done():
			r.timer.Stop()
			r.kill(sb, "invocation abandoned: "+ctx.Err().Error())
			return invocation.Response{}, ctx.Err()
		}
		break
	}
	start := time.Now()
	if cold {
		deadline = start.Add(timeout)
		r.timer.Reset(timeout)
	}

	sb.out.drain() // what init wrote is init's
	r.out.handOver()
	plan := inv.Kill
	if plan != nil && !plan.Timeout && plan.Point == invocation.KillAtHandOver {
		r.timer.Stop()
		return r.killed(ctx, sb, id, start, timeout, invocation.Kill{Point: invocation.KillAtHandOver})
	}
	c := &sb.call
	sb.mu.Lock()
	c.id, c.payload, c.deadline, c.active, c.hold = id, inv.Payload, deadline, true, plan != nil
	sb.mu.Unlock()
	// Answer the GET /next from this goroutine, and only then let its
	// connection read on: no goroutine hand-off on the way to the function.
	// A function that stops reading cannot hold Invoke past its deadline.
	nc.c.SetWriteDeadline(deadline)
	writeNext(nc.w, c, sb.arn)
	nc.w.Flush() // if this fails the process is gone or late: sb.exited or the timer tells
	nc.c.SetWriteDeadline(time.Time{})
	sb.written <- struct{}{}

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
			return r.killed(ctx, sb, id, start, timeout, invocation.Kill{Point: invocation.KillBeforeAnswer, Timeout: plan.Timeout})
		}
		r.timer.Stop()
		sb.out.drain() // what it wrote before answering is this invocation's
	case <-killC:
		k := invocation.Kill{Point: invocation.KillMidBatch, Timeout: plan.Timeout}
		if _, ok := sb.takeResult(); ok {
			k.Point = invocation.KillBeforeAnswer
		}
		return r.killed(ctx, sb, id, start, timeout, k)
	case <-sb.exited:
		r.timer.Stop()
		if res, ok := sb.takeResult(); ok {
			return r.closedOr(res.response(time.Since(start)))
		}
		return r.exitResponse(sb, id, start)
	case <-r.timer.C:
		if res, ok := sb.takeResult(); ok { // answered at the wire
			sb.out.drain()
			return res.response(time.Since(start)), nil
		}
		r.kill(sb, fmt.Sprintf("request %s timed out after %v", id, timeout))
		return r.closedOr(timedOut(id, timeout, time.Since(start)))
	case <-ctx.Done():
		r.timer.Stop()
		r.kill(sb, fmt.Sprintf("request %s abandoned: %v", id, ctx.Err()))
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
func (r *RuntimeAPIInvoker) killed(ctx context.Context, sb *sandbox, id string, start time.Time, timeout time.Duration, k invocation.Kill) (invocation.Response, error) {
	k.After = time.Since(start)
	where := map[invocation.KillPoint]string{
		invocation.KillAtHandOver:   "at the hand-over, before the first record",
		invocation.KillMidBatch:     fmt.Sprintf("mid-batch, %v after the hand-over", k.After.Round(time.Microsecond)),
		invocation.KillBeforeAnswer: "after the function's last effect, holding its answer",
	}[k.Point]
	if !k.Timeout {
		r.timer.Stop()
		r.kill(sb, fmt.Sprintf("injected crash: request %s killed %s", id, where))
		resp, err := r.exitResponse(sb, id, start)
		resp.Killed = &k
		return resp, err
	}
	pid := sb.cmd.Process.Pid
	frozen := stopProcessGroup(sb.cmd.Process)
	if frozen {
		sb.note(fmt.Sprintf("localtest: injected timeout: froze pid %d %s; killing it at the deadline (%v)", pid, where, timeout))
	} else {
		sb.note(fmt.Sprintf("localtest: injected timeout: pid %d cannot be frozen here; killing it at the deadline (%v)", pid, timeout))
	}
	select {
	case <-r.timer.C:
	case <-sb.exited:
		r.timer.Stop()
		return r.exitResponse(sb, id, start)
	case <-ctx.Done():
		r.timer.Stop()
		r.kill(sb, fmt.Sprintf("request %s abandoned: %v", id, ctx.Err()))
		return invocation.Response{}, ctx.Err()
	}
	r.kill(sb, fmt.Sprintf("injected timeout: request %s reached its deadline (%v)", id, timeout))
	resp := timedOut(id, timeout, time.Since(start))
	resp.Killed = &k
	return r.closedOr(resp)
}

// sandbox returns the live sandbox, starting one if there is none.
func (r *RuntimeAPIInvoker) sandbox() (*sandbox, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false, ErrInvokerClosed
	}
	if sb := r.sb; sb != nil {
		select {
		case <-sb.exited:
			r.sb = nil
			sb.shutdown()
		default:
			return sb, false, nil
		}
	}
	sb, err := r.start()
	if err != nil {
		return nil, false, err
	}
	r.sb = sb
	return sb, true, nil
}

// kill stops sb (its process group and server) and forgets it.
func (r *RuntimeAPIInvoker) kill(sb *sandbox, why string) {
	r.mu.Lock()
	if r.sb == sb {
		r.sb = nil
	}
	r.mu.Unlock()
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
func (r *RuntimeAPIInvoker) exitResponse(sb *sandbox, id string, start time.Time) (invocation.Response, error) {
	r.mu.Lock()
	if r.sb == sb {
		r.sb = nil
	}
	r.mu.Unlock()
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

// start launches the process behind a fresh Runtime API server. Each
// process gets its own server, so nothing a killed process left behind (a
// pending /next) can take an invocation meant for its successor.
func (r *RuntimeAPIInvoker) start() (*sandbox, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("localtest: Runtime API server: listening on 127.0.0.1: %w", err)
	}
	sb := &sandbox{
		arn:        r.arn,
		lines:      r.out,
		ln:         ln,
		idle:       make(chan *nextConn),
		written:    make(chan struct{}, 1),
		done:       make(chan result, 1),
		exited:     make(chan struct{}),
		initFailed: make(chan struct{}),
		closing:    make(chan struct{}),
		conns:      map[net.Conn]struct{}{},
	}
	go sb.serve()

	cmd := exec.Command(r.bootstrap)
	cmd.Dir = r.taskRoot
	cmd.Env = append(r.env[:len(r.env):len(r.env)], "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	out, err := attachOutput(cmd, r.out)
	if err != nil {
		sb.shutdown()
		return nil, fmt.Errorf("localtest: a pipe for the function's output: %w", err)
	}
	sb.out = out
	r.out.initStart()
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
	sb.note(fmt.Sprintf("localtest: started %s (pid %d, a new process: init), Runtime API on %s", r.bootstrap, cmd.Process.Pid, ln.Addr()))
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

// sandbox is one function process with its Runtime API server.
type sandbox struct {
	arn   string
	lines *lineLog // the invoker's log, for its notes about the process
	cmd   *exec.Cmd
	out   *funcOutput
	ln    net.Listener

	idle       chan *nextConn // a GET /next offers its connection here
	written    chan struct{}  // and waits here for Invoke to answer it
	done       chan result    // the invocation's answer
	exited     chan struct{}  // closed once the process is reaped
	initFailed chan struct{}  // closed on POST /runtime/init/error
	closing    chan struct{}  // closed by shutdown

	mu       sync.Mutex // guards call, initDoc, initType, initSet, conns
	conns    map[net.Conn]struct{}
	call     call // the one invocation in flight (reused)
	initDoc  []byte
	initType string
	initSet  bool

	stopOnce     sync.Once
	stopErr      error
	shutdownOnce sync.Once
}

type call struct {
	id       string
	payload  []byte
	deadline time.Time
	active   bool // handed out and not yet answered
	hold     bool // an injected kill is coming: the answer gets no reply
}

type result struct {
	payload   []byte
	errorType string
	failed    bool
}

func (res result) response(d time.Duration) invocation.Response {
	r := invocation.Response{Payload: res.payload, Duration: d}
	if res.failed {
		r.FunctionError, r.ErrorType = "Unhandled", res.errorType
	}
	return r
}

// takeResult returns an answer already delivered, if any.
func (sb *sandbox) takeResult() (result, bool) {
	select {
	case res := <-sb.done:
		return res, true
	default:
		return result{}, false
	}
}

// note writes a line of the invoker's own about the process: to Logs, and
// to the RuntimeAPILogs stream under the current label.
func (sb *sandbox) note(s string) { sb.lines.note(s) }

func (sb *sandbox) initError() ([]byte, string, bool) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.initDoc, sb.initType, sb.initSet
}

// stop kills the process group, waits for the process to be reaped and
// shuts the server down.
func (sb *sandbox) stop(why string) error {
	sb.stopOnce.Do(func() {
		select {
		case <-sb.exited:
		default:
			sb.note(fmt.Sprintf("localtest: killing pid %d: %s", sb.cmd.Process.Pid, why))
			killProcessGroup(sb.cmd.Process)
			select {
			case <-sb.exited:
			case <-time.After(stopWait):
				sb.stopErr = fmt.Errorf("function process %d did not exit within %v of SIGKILL", sb.cmd.Process.Pid, stopWait)
			}
		}
		sb.shutdown()
	})
	return sb.stopErr
}

func (sb *sandbox) shutdown() {
	sb.shutdownOnce.Do(func() {
		close(sb.closing)
		sb.ln.Close()
		sb.mu.Lock()
		for c := range sb.conns {
			c.Close()
		}
		sb.conns = nil
		sb.mu.Unlock()
	})
}

// serve accepts the function's connections. The Runtime API is served by
// a minimal HTTP/1.1 loop (http.ReadRequest, hand-written responses) rather
// than http.Server: with one request at a time per connection it needs no
// background reads and fewer goroutine hand-offs (about 15% less latency
// per invocation on a 2-core machine).
func (sb *sandbox) serve() {
	for {
		c, err := sb.ln.Accept()
		if err != nil {
			return
		}
		sb.mu.Lock()
		ok := sb.conns != nil
		if ok {
			sb.conns[c] = struct{}{}
		}
		sb.mu.Unlock()
		if !ok {
			c.Close()
			return
		}
		go sb.serveConn(c)
	}
}

func (sb *sandbox) serveConn(c net.Conn) {
	defer func() {
		c.Close()
		sb.mu.Lock()
		delete(sb.conns, c)
		sb.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	nc := &nextConn{c: c, w: bw}
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				apiError(bw, http.StatusBadRequest, "InvalidRequest", err.Error())
				bw.Flush()
			}
			return
		}
		sb.handle(nc, req)
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		if err := bw.Flush(); err != nil || req.Close {
			return
		}
	}
}

// handle serves one Runtime API request.
func (sb *sandbox) handle(nc *nextConn, req *http.Request) {
	w := nc.w
	path, ok := strings.CutPrefix(req.URL.Path, runtimeAPIPrefix)
	if !ok {
		apiError(w, http.StatusNotFound, "UnknownPath", "no such Runtime API path: "+req.URL.Path)
		return
	}
	switch {
	case path == "invocation/next":
		if req.Method != http.MethodGet {
			apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use GET")
			return
		}
		sb.serveNext(nc)
	case path == "init/error":
		if req.Method != http.MethodPost {
			apiError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "use POST")
			return
		}
		sb.serveInitError(w, req)
	case strings.HasPrefix(path, "invocation/"):
		rest := path[len("invocation/"):]
		i := strings.LastIndexByte(rest, '/')
		if i <= 0 || req.Method != http.MethodPost {
			apiError(w, http.StatusNotFound, "UnknownPath", "no such Runtime API path: "+req.Method+" "+req.URL.Path)
			return
		}
		id, verb := rest[:i], rest[i+1:]
		switch verb {
		case "response":
			sb.serveResult(w, req, id, false)
		case "error":
			sb.serveResult(w, req, id, true)
		default:
			apiError(w, http.StatusNotFound, "UnknownPath", "no such Runtime API path: "+req.URL.Path)
		}
	default:
		apiError(w, http.StatusNotFound, "UnknownPath", "no such Runtime API path: "+req.URL.Path)
	}
}

// nextConn is a connection waiting for the answer to its GET /next.
type nextConn struct {
	c net.Conn
	w *bufio.Writer
}

func (sb *sandbox) serveNext(nc *nextConn) {
	select {
	case sb.idle <- nc:
	case <-sb.closing:
		return
	}
	select {
	case <-sb.written:
	case <-sb.closing:
	}
}

// writeNext writes the answer to GET /next: the invocation.
func writeNext(w *bufio.Writer, c *call, arn string) {
	var buf [128]byte
	w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + hdrRequestID + ": ")
	w.WriteString(c.id)
	w.WriteString("\r\n" + hdrDeadline + ": ")
	w.Write(strconv.AppendInt(buf[:0], c.deadline.UnixMilli(), 10))
	w.WriteString("\r\n" + hdrFunctionARN + ": ")
	w.WriteString(arn)
	w.WriteString("\r\n" + hdrTraceID + ": ")
	w.Write(appendTraceID(buf[:0], c.deadline))
	w.WriteString("\r\nContent-Length: ")
	w.Write(strconv.AppendInt(buf[:0], int64(len(c.payload)), 10))
	w.WriteString("\r\n\r\n")
	w.Write(c.payload)
}

func (sb *sandbox) serveResult(w *bufio.Writer, req *http.Request, id string, isError bool) {
	body, tooLarge, err := readBody(req)
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidRequest", "reading the body: "+err.Error())
		return
	}
	res := result{payload: body, failed: isError}
	if isError {
		res.errorType = req.Header.Get(hdrErrorType)
		if res.errorType == "" {
			res.errorType = docErrorType(body)
		}
	} else if t := req.Trailer.Get(hdrErrorType); t != "" {
		// aws-lambda-go reports a response body that failed mid-stream in
		// trailers.
		res.failed, res.errorType = true, t
		if doc, err := base64.StdEncoding.DecodeString(req.Trailer.Get(hdrErrorBody)); err == nil && len(doc) > 0 {
			res.payload = doc
		} else {
			res.payload = errorDocument("the response stream failed", t)
		}
	}
	if tooLarge {
		res = result{failed: true, errorType: "Function.ResponseSizeTooLarge",
			payload: errorDocument(fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", maxResponseSize), "Function.ResponseSizeTooLarge")}
	}

	sb.mu.Lock()
	ok := sb.call.active && sb.call.id == id
	hold := sb.call.hold
	if ok {
		sb.call.active = false
	}
	sb.mu.Unlock()
	if !ok {
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation "+id+" is waiting for an answer")
		return
	}
	sb.done <- res // buffered, one answer per invocation
	if hold {
		// The process is about to be killed (or frozen) with its answer
		// undelivered: it gets no 202, and does nothing after answering.
		<-sb.closing
		return
	}
	if tooLarge {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "response larger than the limit")
		return
	}
	w.WriteString(accepted)
}

func (sb *sandbox) serveInitError(w *bufio.Writer, req *http.Request) {
	body, _, _ := readBody(req)
	typ := req.Header.Get(hdrErrorType)
	if typ == "" {
		typ = docErrorType(body)
	}
	if typ == "" {
		typ = "Runtime.Unknown"
	}
	if len(body) == 0 {
		body = errorDocument("the runtime reported an init error", typ)
	}
	sb.mu.Lock()
	first := !sb.initSet
	sb.initDoc, sb.initType, sb.initSet = body, typ, true
	sb.mu.Unlock()
	if first {
		close(sb.initFailed)
	}
	w.WriteString(accepted)
}

// readBody reads a request body of at most maxResponseSize bytes into a
// slice of its own.
func readBody(req *http.Request) (body []byte, tooLarge bool, err error) {
	if n := req.ContentLength; n >= 0 {
		if n > maxResponseSize {
			_, err = io.Copy(io.Discard, req.Body)
			return nil, true, err
		}
		body = make([]byte, n)
		if _, err = io.ReadFull(req.Body, body); err != nil {
			return nil, false, err
		}
		_, err = io.Copy(io.Discard, req.Body) // reach EOF, so that trailers are read
		return body, false, err
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(req.Body, maxResponseSize+1))
	if err != nil {
		return nil, false, err
	}
	if n > maxResponseSize {
		_, err = io.Copy(io.Discard, req.Body)
		return nil, true, err
	}
	return buf.Bytes(), false, nil
}

// docErrorType returns the errorType of an error document, or "".
func docErrorType(doc []byte) string {
	var e struct {
		Type string `json:"errorType"`
	}
	if json.Unmarshal(doc, &e) != nil {
		return ""
	}
	return e.Type
}

// accepted is the whole 202 answer to a posted response or error.
const accepted = "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n" + acceptedBody

const acceptedBody = `{"status":"OK"}`

func apiError(w *bufio.Writer, status int, typ, msg string) {
	doc := errorDocument(msg, typ)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", status, http.StatusText(status), len(doc))
	w.Write(doc)
}

// newRequestID returns a random UUID (version 4) string.
func newRequestID() string {
	var b [16]byte
	a, c := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		b[i], b[8+i] = byte(a>>(8*i)), byte(c>>(8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	var s [36]byte
	j := 0
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			s[j] = '-'
			j++
		}
		s[j], s[j+1] = hex[x>>4], hex[x&0xf]
		j += 2
	}
	return string(s[:])
}

// appendTraceID appends an X-Ray trace header ("Root=1-<epoch hex>-<96
// random bits>;Parent=<64 random bits>;Sampled=0").
func appendTraceID(b []byte, t time.Time) []byte {
	const hex = "0123456789abcdef"
	b = append(b, "Root=1-"...)
	b = strconv.AppendUint(b, uint64(t.Unix()), 16)
	b = append(b, '-')
	x, y := rand.Uint64(), rand.Uint64()
	for i := range 24 {
		v := x
		if i >= 16 {
			v = y >> 32
		}
		b = append(b, hex[(v>>(4*(i%16)))&0xf])
	}
	b = append(b, ";Parent="...)
	for i := range 16 {
		b = append(b, hex[(y>>(4*i))&0xf])
	}
	return append(b, ";Sampled=0"...)
}

// ringBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type ringBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte // grows to max, then is written round
	off  int    // next write position once full
	full bool
}

func newRingBuffer(max int) *ringBuffer { return &ringBuffer{max: max} }

func (b *ringBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.full {
		if len(b.buf)+len(p) <= b.max {
			b.buf = append(b.buf, p...)
			return n, nil
		}
		nb := make([]byte, b.max)
		b.off = copy(nb, b.buf)
		b.buf, b.full = nb, true
	}
	if len(p) >= b.max {
		copy(b.buf, p[len(p)-b.max:])
		b.off = 0
		return n, nil
	}
	k := copy(b.buf[b.off:], p)
	if k < len(p) {
		b.off = copy(b.buf, p[k:])
	} else {
		b.off += k
	}
	if b.off == b.max {
		b.off = 0
	}
	return n, nil
}

// Printf writes a formatted line.
func (b *ringBuffer) Printf(format string, args ...any) {
	fmt.Fprintf(b, format, args...)
}

func (b *ringBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.full {
		return string(b.buf)
	}
	return string(b.buf[b.off:]) + string(b.buf[:b.off])
}

// lineLog takes the function's output: it keeps it in the ring buffer,
// splits it into lines, keeps the current invocation's last LogLines lines
// and streams lines, prefixed by their invocation, when asked to.
type lineLog struct {
	ring   *ringBuffer
	stream io.Writer // or nil

	mu      sync.Mutex
	label   string // the invocation the output belongs to
	inv     string // the current invocation's label, for after init
	partial []byte
	lines   []string // the current invocation's last lines, oldest first
}

// begin starts a new invocation's lines.
func (l *lineLog) begin(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushPartial()
	l.label, l.inv, l.lines = label, label, l.lines[:0]
}

// initStart marks output from now on as the process's init.
func (l *lineLog) initStart() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushPartial()
	l.label = "init"
}

// handOver marks output from now on as the invocation's.
func (l *lineLog) handOver() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushPartial()
	l.label = l.inv
}

// note writes one line of the invoker's to the ring and the stream,
// without touching the function's lines.
func (l *lineLog) note(s string) {
	l.ring.Write([]byte(s + "\n"))
	if l.stream == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.stream, "[%s] %s\n", l.label, s)
}

// last returns the current invocation's last lines.
func (l *lineLog) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.lines), len(l.lines)+1)
	copy(out, l.lines)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
		if len(out) > LogLines {
			out = out[1:]
		}
	}
	return out
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.ring.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if room := maxLogLine - len(l.partial); room > 0 {
				l.partial = append(l.partial, rest[:min(room, len(rest))]...)
			}
			break
		}
		if room := maxLogLine - len(l.partial); room > 0 {
			l.partial = append(l.partial, rest[:min(room, i)]...)
		}
		l.line(string(bytes.TrimSuffix(l.partial, []byte("\r"))))
		l.partial = l.partial[:0]
		rest = rest[i+1:]
	}
	return len(p), nil
}

// flushPartial ends a line left without its newline.
func (l *lineLog) flushPartial() {
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = l.partial[:0]
	}
}

func (l *lineLog) line(s string) {
	if len(l.lines) == LogLines {
		copy(l.lines, l.lines[1:])
		l.lines = l.lines[:LogLines-1]
	}
	l.lines = append(l.lines, s)
	if l.stream != nil {
		fmt.Fprintf(l.stream, "[%s] %s\n", l.label, s)
	}
}

// errorDocument is Lambda's error document {"errorMessage","errorType"}.
func errorDocument(msg, typ string) []byte {
	b, _ := json.Marshal(map[string]string{"errorMessage": msg, "errorType": typ})
	return b
}
