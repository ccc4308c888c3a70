//go:build linux

package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/invocation"
)

const conformancePkg = "github.com/sluicehq/sluice/examples/conformance"

// conformanceEvent builds an event of source "sqs" or "kinesis" with one
// record per action (ids "0", "1", ...) and returns it with the records'
// item identifiers.
func conformanceEvent(t testing.TB, source sevents.Source, actions ...string) ([]byte, []string) {
	t.Helper()
	cmd := func(i int, a string) []byte {
		b, _ := json.Marshal(map[string]string{"id": strconv.Itoa(i), "action": a})
		return b
	}
	var ev any
	var ids []string
	switch source {
	case "sqs":
		b := &sevents.SQSBuilder{}
		for i, a := range actions {
			b.Add(string(cmd(i, a)))
		}
		e := b.Event()
		for _, r := range e.Records {
			ids = append(ids, r.MessageId)
		}
		ev = e
	case "kinesis":
		b := &sevents.KinesisBuilder{}
		for i, a := range actions {
			b.Add(fmt.Sprint("pk-", i%2), cmd(i, a))
		}
		e := b.Event()
		for _, r := range e.Records {
			ids = append(ids, r.Kinesis.SequenceNumber)
		}
		ev = e
	default:
		t.Fatalf("source %s", source)
	}
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return raw, ids
}

func reportedIDs(t testing.TB, out []byte) []string {
	t.Helper()
	var r events.SQSEventResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	ids := []string{}
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// startRuntimeAPI returns a RuntimeAPIInvoker closed at the end of the test,
// with its logs shown if the test failed.
func startRuntimeAPI(t testing.TB, bootstrap string, env ...string) *RuntimeAPIInvoker {
	t.Helper()
	inv, err := RuntimeAPI(bootstrap, env)
	if err != nil {
		t.Fatal(err)
	}
	r := inv.(*RuntimeAPIInvoker)
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("function output:\n%s", r.Logs())
		}
	})
	return r
}

func testBinary(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

func invoke(t testing.TB, r invocation.Invoker, payload []byte, timeout time.Duration) invocation.Response {
	t.Helper()
	resp, err := r.Invoke(context.Background(), invocation.Invocation{Payload: payload, Timeout: timeout})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	return resp
}

// alive reports whether pid is a running process (not a zombie waiting
// for its parent, or for init, to reap it).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc: trust kill
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive", pid)
		}
	}
}

func TestRuntimeAPIPartialBatchResponse(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, rie.BuildHandler(t, conformancePkg), "SLUICE_SOURCE=sqs")
	raw, ids := conformanceEvent(t, "sqs", "ok", "fail", "ok")
	resp := invoke(t, r, raw, 5*time.Second)
	if resp.Failed() {
		t.Fatalf("want a partial batch response, got a function error %s: %s", resp.ErrorType, resp.Payload)
	}
	if got := reportedIDs(t, resp.Payload); !slices.Equal(got, ids[1:2]) {
		t.Fatalf("reported %v, want %v", got, ids[1:2])
	}
	pid := r.PID()
	raw, _ = conformanceEvent(t, "sqs", "ok")
	if resp := invoke(t, r, raw, 5*time.Second); resp.Failed() || len(reportedIDs(t, resp.Payload)) != 0 {
		t.Fatalf("second invocation: %+v", resp)
	}
	if r.PID() != pid {
		t.Fatalf("a warm function was restarted: pid %d, then %d", pid, r.PID())
	}
}

func TestRuntimeAPIHandlerError(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, rie.BuildHandler(t, conformancePkg), "SLUICE_SOURCE=sqs")
	raw, _ := conformanceEvent(t, "sqs", "fail", "transient:9")
	resp := invoke(t, r, raw, 5*time.Second)
	if resp.FunctionError != "Unhandled" || resp.ErrorType == "" || resp.TimedOut {
		t.Fatalf("want an Unhandled function error with a type, got %+v", resp)
	}
	var doc struct{ ErrorMessage, ErrorType string }
	if err := json.Unmarshal(resp.Payload, &doc); err != nil || doc.ErrorMessage == "" || doc.ErrorType != resp.ErrorType {
		t.Fatalf("payload is not the error document: %s (%v)", resp.Payload, err)
	}
	// A returned error does not end the process.
	pid := r.PID()
	raw, _ = conformanceEvent(t, "sqs", "ok")
	if resp := invoke(t, r, raw, 5*time.Second); resp.Failed() || r.PID() != pid {
		t.Fatalf("after a handler error: %+v, pid %d then %d", resp, pid, r.PID())
	}
}

func TestRuntimeAPIInitFailure(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, rie.BuildHandler(t, conformancePkg), "SLUICE_SOURCE=bogus")
	raw, _ := conformanceEvent(t, "sqs", "ok")
	for i := range 2 {
		resp := invoke(t, r, raw, 5*time.Second)
		if resp.FunctionError != "Unhandled" || resp.ErrorType != "Runtime.ExitError" {
			t.Fatalf("invocation %d: want Runtime.ExitError, got %+v", i, resp)
		}
		if !strings.Contains(string(resp.Payload), "exit status 2") {
			t.Fatalf("invocation %d: payload %s", i, resp.Payload)
		}
	}
	if n := strings.Count(r.Logs(), "SLUICE_SOURCE"); n != 2 {
		t.Fatalf("want the init error in the logs twice (one process per invocation), got %d:\n%s", n, r.Logs())
	}
}

func TestRuntimeAPIDeadlineVisibleToFunction(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, rie.BuildHandler(t, conformancePkg), "SLUICE_SOURCE=kinesis")
	// The handler stops starting records 500 ms before its deadline: two
	// sleeps fit in 2 s, the third is cut short, Lambda gets an answer.
	raw, ids := conformanceEvent(t, "kinesis", "sleep:600", "sleep:600", "sleep:600", "sleep:600", "sleep:600")
	resp := invoke(t, r, raw, 2*time.Second)
	if resp.Failed() {
		t.Fatalf("want a partial response before the timeout, got %+v", resp)
	}
	if got := reportedIDs(t, resp.Payload); !slices.Equal(got, ids[2:3]) {
		t.Fatalf("reported %v, want %v", got, ids[2:3])
	}
}

func TestRuntimeAPIEnvironment(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=env", "FOO=bar", "AWS_LAMBDA_FUNCTION_NAME=orders",
		"AWS_LAMBDA_RUNTIME_API=10.0.0.1:1", "FOO=baz")
	resp, err := r.Invoke(context.Background(), invocation.Invocation{RequestID: "req-1", Payload: []byte("env"), Timeout: 4 * time.Second})
	if err != nil || resp.Failed() {
		t.Fatalf("%+v %v", resp, err)
	}
	var rep envReport
	if err := json.Unmarshal(resp.Payload, &rep); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range rep.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	want := map[string]string{
		"FOO":                             "baz",
		"AWS_LAMBDA_FUNCTION_NAME":        "orders",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_REGION":                      "us-east-1",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(testBinary(t)),
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if !regexp.MustCompile(`^127\.0\.0\.1:\d+$`).MatchString(env["AWS_LAMBDA_RUNTIME_API"]) {
		t.Errorf("AWS_LAMBDA_RUNTIME_API=%q", env["AWS_LAMBDA_RUNTIME_API"])
	}
	if rep.RemainingMS < 3000 || rep.RemainingMS > 4000 {
		t.Errorf("deadline %d ms ahead, want about 4000", rep.RemainingMS)
	}
	if rep.RequestID != "req-1" || rep.ARN != "arn:aws:lambda:us-east-1:123456789012:function:orders" || rep.Dir != want["LAMBDA_TASK_ROOT"] {
		t.Errorf("request id %q, arn %q, dir %q", rep.RequestID, rep.ARN, rep.Dir)
	}
	if !strings.HasPrefix(rep.TraceID, "Root=1-") {
		t.Errorf("trace id %q", rep.TraceID)
	}
	// A generated request id is a UUID, different each time.
	a, b := invoke(t, r, []byte("env"), time.Second), invoke(t, r, []byte("env"), time.Second)
	var ra, rb envReport
	json.Unmarshal(a.Payload, &ra)
	json.Unmarshal(b.Payload, &rb)
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(ra.RequestID) || ra.RequestID == rb.RequestID {
		t.Errorf("generated request ids %q, %q", ra.RequestID, rb.RequestID)
	}
}

func TestRuntimeAPITimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=echo")
	if resp := invoke(t, r, []byte(`"warm"`), time.Second); resp.Failed() || string(resp.Payload) != `"warm"` {
		t.Fatalf("warm-up: %+v", resp)
	}
	pid := r.PID()
	start := time.Now()
	resp := invoke(t, r, []byte("hang"), 300*time.Millisecond)
	if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("timeout answered after %v, want about 300ms", took)
	}
	if !resp.TimedOut || resp.FunctionError != "Unhandled" || resp.ErrorType != "Sandbox.Timedout" ||
		!strings.Contains(string(resp.Payload), "Task timed out after 0.30 seconds") {
		t.Fatalf("want a timeout, got %+v (%s)", resp, resp.Payload)
	}
	if alive(pid) {
		t.Fatalf("function process %d survived its timeout", pid)
	}
	m := regexp.MustCompile(`grandchild (\d+)`).FindStringSubmatch(r.Logs())
	if m == nil {
		t.Fatalf("no grandchild in the logs:\n%s", r.Logs())
	}
	gc, _ := strconv.Atoi(m[1])
	waitGone(t, gc) // killed with the group
	if r.PID() != 0 {
		t.Fatalf("PID %d after the timeout", r.PID())
	}
	if resp := invoke(t, r, []byte(`"again"`), time.Second); resp.Failed() || string(resp.Payload) != `"again"` {
		t.Fatalf("after the timeout: %+v", resp)
	}
	if p := r.PID(); p == 0 || p == pid {
		t.Fatalf("want a fresh process, got pid %d (was %d)", p, pid)
	}
}

func TestRuntimeAPIPanicAndExitRestart(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=echo")
	invoke(t, r, []byte(`1`), time.Second)
	pid := r.PID()

	// aws-lambda-go reports the panic, then exits.
	resp := invoke(t, r, []byte("panic"), 2*time.Second)
	if resp.FunctionError != "Unhandled" || !strings.Contains(string(resp.Payload), "asked to panic") {
		t.Fatalf("panic: %+v (%s)", resp, resp.Payload)
	}
	waitGone(t, pid)
	if resp := invoke(t, r, []byte(`2`), time.Second); resp.Failed() {
		t.Fatalf("after the panic: %+v (%s)", resp, resp.Payload)
	}
	pid2 := r.PID()
	if pid2 == pid {
		t.Fatal("the panicked process was reused")
	}

	resp = invoke(t, r, []byte("exit"), 2*time.Second)
	if resp.ErrorType != "Runtime.ExitError" || !strings.Contains(string(resp.Payload), "exit status 3") {
		t.Fatalf("exit: %+v (%s)", resp, resp.Payload)
	}
	if resp := invoke(t, r, []byte(`3`), time.Second); resp.Failed() || r.PID() == pid2 {
		t.Fatalf("after the exit: %+v", resp)
	}
}

func TestRuntimeAPIInitErrorPosted(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=initerror")
	resp := invoke(t, r, []byte(`1`), time.Second)
	if resp.FunctionError != "Unhandled" || resp.ErrorType != "Runtime.TestInitError" || !strings.Contains(string(resp.Payload), "cannot start") {
		t.Fatalf("%+v (%s)", resp, resp.Payload)
	}
	if r.PID() != 0 {
		t.Fatal("the process that failed init still runs")
	}
}

func TestRuntimeAPIResponseTooLarge(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=echo")
	resp := invoke(t, r, []byte("big"), 5*time.Second)
	if resp.ErrorType != "Function.ResponseSizeTooLarge" {
		t.Fatalf("%+v", resp.ErrorType)
	}
}

func TestRuntimeAPIContextCancelKills(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=echo")
	invoke(t, r, []byte(`1`), time.Second)
	pid := r.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := r.Invoke(ctx, invocation.Invocation{Payload: []byte("hang"), Timeout: 10 * time.Second}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	if alive(pid) {
		t.Fatal("an abandoned invocation left its process running")
	}
}

func TestRuntimeAPICloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	inv, err := RuntimeAPI(rie.BuildHandler(t, conformancePkg), []string{"SLUICE_SOURCE=sqs"})
	if err != nil {
		t.Fatal(err)
	}
	r := inv.(*RuntimeAPIInvoker)
	raw, _ := conformanceEvent(t, "sqs", "ok")
	invoke(t, r, raw, time.Second)
	pid := r.PID()
	if !alive(pid) {
		t.Fatal("no process")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("process %d survived Close", pid)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Invoke(context.Background(), invocation.Invocation{Payload: raw}); !errors.Is(err, ErrInvokerClosed) {
		t.Fatalf("Invoke after Close: %v", err)
	}
}

func TestRuntimeAPICloseDuringInvoke(t *testing.T) {
	t.Parallel()
	r := startRuntimeAPI(t, testBinary(t), testFunctionEnv+"=echo")
	invoke(t, r, []byte(`1`), time.Second)
	pid := r.PID()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Invoke(context.Background(), invocation.Invocation{Payload: []byte("hang"), Timeout: 10 * time.Second})
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	r.Close()
	if err := <-errc; !errors.Is(err, ErrInvokerClosed) {
		t.Fatalf("want ErrInvokerClosed, got %v", err)
	}
	if alive(pid) {
		t.Fatal("process survived Close")
	}
}

func TestRuntimeAPIBadBootstrap(t *testing.T) {
	if _, err := RuntimeAPI(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Fatal("want an error for a missing bootstrap")
	}
	if _, err := RuntimeAPI(t.TempDir(), nil); err == nil {
		t.Fatal("want an error for a directory")
	}
}

func TestRuntimeAPIRingBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"fits", []string{"ab", "cd"}, "abcd"},
		{"exactly full", []string{"abcd", "efgh"}, "abcdefgh"},
		{"wraps", []string{"abcde", "fgh", "ij"}, "cdefghij"},
		{"wraps twice", []string{"abcdefg", "hijkl", "mnopqrs"}, "lmnopqrs"},
		{"one huge write", []string{"ab", "0123456789"}, "23456789"},
		{"ends at the edge", []string{"abcdef", "ghij", "klmnop"}, "ijklmnop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRingBuffer(8)
			for _, w := range tc.writes {
				if n, _ := b.Write([]byte(w)); n != len(w) {
					t.Fatalf("Write returned %d", n)
				}
			}
			if got := b.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRuntimeAPIEnvironments: invocations asked to run in two execution
// environments run at once, in two processes, each with its own init; a
// crash kills only its own environment's process, and the next invocation
// there starts a new one while the other environment stays warm.
func TestRuntimeAPIEnvironments(t *testing.T) {
	t.Parallel()
	var stream syncBuffer
	inv, err := RuntimeAPI(testBinary(t), []string{testFunctionEnv + "=echo"}, RuntimeAPILogs(&stream))
	if err != nil {
		t.Fatal(err)
	}
	r := inv.(*RuntimeAPIInvoker)
	defer func() {
		r.Close()
		if t.Failed() {
			t.Logf("function output:\n%s", r.Logs())
		}
	}()
	ctx := context.Background()
	dir := t.TempDir()
	resps := make([]invocation.Response, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			resps[i], errs[i] = r.Invoke(ctx, invocation.Invocation{RequestID: fmt.Sprint("meet-", i+1), Payload: []byte("meet:" + dir),
				Timeout: 5 * time.Second, N: i + 1, Environment: i + 1})
		})
	}
	wg.Wait()
	for i, resp := range resps {
		if errs[i] != nil || resp.Failed() {
			t.Fatalf("environment %d: %v %+v (%s): the two invocations did not run at once", i+1, errs[i], resp, resp.Payload)
		}
		if resp.Environment != i+1 || resp.PID == 0 || string(resp.Payload) != strconv.Itoa(resp.PID) {
			t.Fatalf("environment %d answered %+v (%s)", i+1, resp, resp.Payload)
		}
	}
	if resps[0].PID == resps[1].PID {
		t.Fatalf("both environments ran in pid %d", resps[0].PID)
	}
	logs := stream.String()
	if !strings.Contains(logs, "[init] localtest: started") || !strings.Contains(logs, "[init env 2] localtest: started") {
		t.Fatalf("want an init in each environment:\n%s", logs)
	}

	// A crash in environment 2 leaves environment 1's process alone.
	resp, err := r.Invoke(ctx, invocation.Invocation{RequestID: "crash", Payload: []byte(`1`), Timeout: time.Second, N: 3, Environment: 2,
		Kill: &invocation.Kill{Point: invocation.KillAtHandOver}})
	if err != nil || resp.Killed == nil || resp.Environment != 2 || resp.PID != resps[1].PID {
		t.Fatalf("crash in environment 2: %v %+v", err, resp)
	}
	waitGone(t, resps[1].PID)
	if !alive(resps[0].PID) {
		t.Fatalf("environment 1's process %d died with environment 2's", resps[0].PID)
	}
	// Without an environment named, the first idle one: environment 1,
	// still warm.
	if resp := invoke(t, r, []byte(`2`), time.Second); resp.Failed() || resp.Environment != 1 || resp.PID != resps[0].PID {
		t.Fatalf("environment 1 after the crash: %+v, want its warm process %d", resp, resps[0].PID)
	}
	resp, err = r.Invoke(ctx, invocation.Invocation{Payload: []byte(`3`), Timeout: time.Second, Environment: 2})
	if err != nil || resp.Failed() || resp.Environment != 2 || resp.PID == resps[1].PID || resp.PID == resps[0].PID {
		t.Fatalf("environment 2 after the crash: %v %+v, want a new process", err, resp)
	}
	if n := strings.Count(stream.String(), "[init env 2] localtest: started"); n != 2 {
		t.Fatalf("want two inits in environment 2, got %d:\n%s", n, stream.String())
	}

	// Environment 0 takes an idle environment, or a new one when all are
	// busy.
	dir = t.TempDir()
	for i := range 2 {
		wg.Go(func() {
			resps[i], errs[i] = r.Invoke(ctx, invocation.Invocation{Payload: []byte("meet:" + dir), Timeout: 5 * time.Second})
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || resps[0].Failed() || resps[1].Failed() || resps[0].Environment == resps[1].Environment {
		t.Fatalf("two invocations at once without an environment: %v %v %+v %+v", errs[0], errs[1], resps[0], resps[1])
	}
}
