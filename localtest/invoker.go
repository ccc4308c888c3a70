package localtest

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

// BytesHandler is what an in-process handler must offer: aws-lambda-go's
// lambda.Handler, which every Sluice handler implements.
type BytesHandler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// InProcess returns an Invoker that calls h in this process with a context
// whose deadline is the invocation's timeout. A returned error or a panic
// is a function error; a call that outlives its deadline is a timeout (its
// goroutine is abandoned, as Lambda would freeze the sandbox).
//
// Run calls h from several goroutines at once when the mapping runs
// several invocations at once (several shards, a ParallelizationFactor,
// SQS MaximumConcurrency): where Lambda would run each in an execution
// environment of its own, h shares one memory, so it must be safe for
// concurrent use. A bootstrap (localtest/invoke.RuntimeAPI) gets one
// process per environment.
//
// It is not a Killer: a goroutine cannot be stopped in the middle of an
// effect, and the handler's memory would survive, so Run refuses crash
// and timeout faults with it. Run the function as a bootstrap
// (localtest/invoke.RuntimeAPI, sluice run --handler) to inject them.
func InProcess(h BytesHandler) invocation.Invoker { return &inProcess{h: h} }

type inProcess struct{ h BytesHandler }

func (p *inProcess) Close() error { return nil }

func (p *inProcess) Invoke(ctx context.Context, inv invocation.Invocation) (invocation.Response, error) {
	start := time.Now()
	timeout := inv.Timeout
	if timeout <= 0 {
		timeout = invocation.DefaultFunctionTimeout
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
		resp := invocation.Response{Duration: time.Since(start)}
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
			return invocation.Response{}, ctx.Err()
		}
		return invocation.Response{FunctionError: "Unhandled", ErrorType: "Sandbox.Timedout", TimedOut: true, Duration: time.Since(start),
			Payload: errorDocument(fmt.Sprintf("Task timed out after %.2f seconds", timeout.Seconds()), "Sandbox.Timedout")}, nil
	}
}

func errorDocument(msg, typ string) []byte {
	b, _ := jsonMarshal(map[string]string{"errorMessage": msg, "errorType": typ})
	return b
}
