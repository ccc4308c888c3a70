package invocation

import (
	"context"
	"time"
)

// DefaultFunctionTimeout is the timeout of an Invocation that sets none
// (Lambda's default).
const DefaultFunctionTimeout = 3 * time.Second

// An Invoker runs one invocation of the function under test, as Lambda's
// Invoke does for an event source mapping.
//
// Invoke returns an error only when the invocation could not be made at all
// (the function is gone, an endpoint refuses). A function error, a timeout or
// a crash is an answer, described in Response. An error with a method
// Throttled() bool that returns true is a throttled call (HTTP 429): the
// runner retries it with back-off, as Lambda does.
type Invoker interface {
	Invoke(ctx context.Context, inv Invocation) (Response, error)
	Close() error
}

// Invocation is one call of the function.
type Invocation struct {
	RequestID string
	Payload   []byte
	// Timeout is the function's timeout: the invoker gives the function a
	// deadline this far ahead, and ends the invocation (killing the process,
	// for a process invoker) when it passes.
	Timeout time.Duration
	// N is the invocation's number in the run (1, 2, ...), for log prefixes;
	// 0 when there is none.
	N int
	// Environment, when positive, asks an invoker that runs several
	// execution environments at once (each its own process, with its own
	// init, as Lambda runs a function under concurrency) to run the
	// invocation in that one (1, 2, ...); the local runner numbers them so
	// that a run repeats. 0 lets the invoker choose an idle one. Invokers
	// of one environment ignore it.
	Environment int
	// Kill, when set, asks the invoker to end this invocation as a crash or
	// a timeout ends one on Lambda: by killing the function's process
	// inside it. The local runner sets it (localtest.Faults.CrashRate,
	// TimeoutRate) only for an invoker that is a Killer; other invokers
	// ignore it.
	Kill *Kill
}

// KillPoint is where inside an invocation an injected crash or timeout
// lands.
type KillPoint string

// Kill points.
const (
	// KillAtHandOver: the process asked for the invocation and is killed
	// instead of being handed it: it dies before its first record.
	KillAtHandOver KillPoint = "hand-over"
	// KillMidBatch: the process is killed (or, for a timeout, frozen)
	// Kill.After after the hand-over, wherever it is in the batch then:
	// between two records, inside an effect, between a claim and its
	// completion.
	KillMidBatch KillPoint = "mid-batch"
	// KillBeforeAnswer: the function finished the batch (its last effect
	// done) and posted its answer; the process is killed and the answer
	// never reaches Lambda. A KillMidBatch whose moment comes after the
	// function answered lands here.
	KillBeforeAnswer KillPoint = "before-answer"
)

// Kill is an injected crash or timeout, or, in Response.Killed, what the
// invoker did.
type Kill struct {
	Point KillPoint
	// After is, for KillMidBatch and for a timeout, how long after the
	// hand-over the kill (a timeout's freeze) lands; in Response.Killed,
	// when it did.
	After time.Duration
	// Timeout makes it a timeout: the process is frozen (SIGSTOP, on Unix)
	// at Point, as a function stuck in a call that never returns, and
	// killed (SIGKILL) when the invocation's deadline passes; the answer
	// is Sandbox.Timedout. Without it, a crash: the process is killed
	// (SIGKILL) at Point, and the answer is Runtime.ExitError ("signal:
	// killed").
	Timeout bool
}

// A Killer is an Invoker that can kill the function's process in the
// middle of an invocation and honours Invocation.Kill; the next invocation
// then starts a new process (a new init: the function's memory is gone).
// The local runner refuses crash and timeout faults for an invoker that is
// not one, or whose CanKill is false: a fault that leaves the process alive
// would not be a crash.
type Killer interface {
	Invoker
	CanKill() bool
}

// Response is how an invocation ended.
type Response struct {
	// Payload is the function's response body (for a function error, the
	// error document).
	Payload []byte
	// FunctionError is empty on success; otherwise Lambda's
	// X-Amz-Function-Error value ("Unhandled"), whatever the cause.
	FunctionError string
	// ErrorType is the error's type when known ("Runtime.ExitError",
	// "Sandbox.Timedout", "errorString", ...).
	ErrorType string
	// TimedOut is true when the function ran into its timeout.
	TimedOut bool
	// InitFailed is true when the function failed before it asked for its
	// first invocation: its process exited, posted /runtime/init/error, or
	// ran past the init timeout (then TimedOut is true too). Only invokers
	// that can tell (the Runtime API invoker) set it.
	InitFailed bool
	// Logs are, for a failed invocation, the last lines (at most LogLines)
	// the function wrote during it, its init included when it started cold,
	// when the invoker sees them.
	Logs     []string
	Duration time.Duration
	// Environment and PID are, when the invoker tells, the execution
	// environment the invocation ran in (see Invocation.Environment) and
	// the process id of the function there; 0 when unknown.
	Environment int
	PID         int
	// Killed is set when the invoker killed the process as Invocation.Kill
	// asked: where the kill landed and when, after the hand-over. It is
	// nil when the process ended otherwise first (it exited by itself, or
	// its init failed).
	Killed *Kill
}

// Failed reports whether the invocation is a function error.
func (r Response) Failed() bool { return r.FunctionError != "" || r.TimedOut }
