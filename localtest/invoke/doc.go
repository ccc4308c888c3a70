// Package invoke holds the invokers of localtest that run a function outside
// the test's process, as Lambda runs it:
//
//   - RuntimeAPI starts a compiled handler (a Lambda bootstrap) and serves
//     it the Lambda Runtime API (net/http, one server per process): cold
//     and warm starts, the init limit, deadlines that kill the whole
//     process group, crashes, log capture with per-invocation prefixes. It
//     runs as many execution environments at once as invocations ask for
//     (invocation.Invocation.Environment), each its own process with its
//     own init, as Lambda does under concurrency. It is an
//     invocation.Killer: the runner's injected crashes and timeouts kill
//     the process of the invocation's environment inside the invocation
//     (invocation.Invocation.Kill).
//   - InvokeAPI calls any Lambda Invoke API endpoint (SAM start-lambda, the
//     Runtime Interface Emulator, LocalStack, AWS), signed with SigV4 when
//     asked (InvokeAPISigV4).
//
// Both return an invocation.Invoker: give it to localtest.Options.Invoker, or
// call Invoke directly to replay one event (sluice invoke, and a redrive of
// dead letters, do). The in-process invoker, localtest.InProcess, stays in
// localtest, so a Go test that only calls a handler links none of this.
package invoke
