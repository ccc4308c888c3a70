package localtest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// DefaultFunctionTimeout is the timeout of an Invocation that sets none, and
// of a run whose Options set none (Lambda's default).
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
}

// Failed reports whether the invocation is a function error.
func (r Response) Failed() bool { return r.FunctionError != "" || r.TimedOut }

// BytesHandler is what an in-process handler must offer: aws-lambda-go's
// lambda.Handler, which every Sluice handler implements.
type BytesHandler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// InProcess returns an Invoker that calls h in this process with a context
// whose deadline is the invocation's timeout. A returned error or a panic
// is a function error; a call that outlives its deadline is a timeout (its
// goroutine is abandoned, as Lambda would freeze the sandbox).
func InProcess(h BytesHandler) Invoker { return &inProcess{h: h} }

type inProcess struct{ h BytesHandler }

func (p *inProcess) Close() error { return nil }

func (p *inProcess) Invoke(ctx context.Context, inv Invocation) (Response, error) {
	start := time.Now()
	timeout := inv.Timeout
	if timeout <= 0 {
		timeout = DefaultFunctionTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		out   []byte
		err   error
		panic any
		stack []byte
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{panic: v, stack: debug.Stack()}
			}
		}()
		out, err := p.h.Invoke(cctx, inv.Payload)
		done <- result{out: out, err: err}
	}()
	select {
	case r := <-done:
		resp := Response{Duration: time.Since(start)}
		switch {
		case r.panic != nil:
			resp.FunctionError, resp.ErrorType = "Unhandled", "Runtime.Panic"
			resp.Payload = errorDocument(fmt.Sprint(r.panic), resp.ErrorType)
		case r.err != nil:
			resp.FunctionError, resp.ErrorType = "Unhandled", fmt.Sprintf("%T", r.err)
			resp.Payload = errorDocument(r.err.Error(), resp.ErrorType)
		default:
			resp.Payload = r.out
		}
		return resp, nil
	case <-cctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return Response{}, ctx.Err()
		}
		return Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Duration: time.Since(start),
			Payload: errorDocument(fmt.Sprintf("Task timed out after %.2f seconds", timeout.Seconds()), "Sandbox.Timedout")}, nil
	}
}

func errorDocument(msg, typ string) []byte {
	b, _ := jsonMarshal(map[string]string{"errorMessage": msg, "errorType": typ})
	return b
}
