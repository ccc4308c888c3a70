package rie_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
)

const helloPkg = "github.com/sluicehq/sluice/internal/testsupport/rie/testdata/hello"

type helloResp struct {
	Echo       json.RawMessage `json:"echo"`
	Value      string          `json:"value"`
	Set        bool            `json:"set"`
	DeadlineMs int64           `json:"deadline_ms"`
	RequestID  string          `json:"request_id"`
	FuncName   string          `json:"function_name"`
	PID        int             `json:"pid"`
	Slept      bool            `json:"slept"`
}

func start(t *testing.T, opts ...rie.Option) *rie.Function {
	t.Helper()
	return rie.Start(t, rie.BuildHandler(t, helloPkg), opts...)
}

func call(t *testing.T, fn *rie.Function, payload string) helloResp {
	t.Helper()
	out, err := fn.Invoke(context.Background(), []byte(payload))
	if err != nil {
		t.Fatalf("Invoke(%s): %v", payload, err)
	}
	var r helloResp
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("Invoke(%s) = %q: %v", payload, out, err)
	}
	return r
}

func functionError(t *testing.T, fn *rie.Function, payload string) *rie.FunctionError {
	t.Helper()
	out, err := fn.Invoke(context.Background(), []byte(payload))
	var fe *rie.FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("Invoke(%s) = %q, %v; want a *rie.FunctionError", payload, out, err)
	}
	return fe
}

func TestEcho(t *testing.T) {
	t.Parallel()
	fn := start(t)
	r := call(t, fn, `{"action":"echo","echo":{"a":[1,2,"x"]}}`)
	if got := string(r.Echo); got != `{"a":[1,2,"x"]}` {
		t.Errorf("echo = %s", got)
	}
	if !strings.Contains(fn.Logs(), "START RequestId:") {
		t.Errorf("Logs() lacks RIE's START line:\n%s", fn.Logs())
	}
}

func TestFunctionErrors(t *testing.T) {
	t.Parallel()
	fn := start(t)
	pid := call(t, fn, `{"action":"pid"}`).PID

	fe := functionError(t, fn, `{"action":"error","message":"boom"}`)
	if fe.Type != "errorString" || fe.Message != "boom" || fe.StatusCode != 200 {
		t.Errorf("returned error: got %+v", fe)
	}
	if got := call(t, fn, `{"action":"pid"}`).PID; got != pid {
		t.Errorf("runtime restarted after a returned error: pid %d -> %d", pid, got)
	}

	fe = functionError(t, fn, `{"action":"panic","message":"aaah"}`)
	if fe.Type != "string" || fe.Message != "aaah" || fe.StatusCode != 502 || !strings.Contains(string(fe.Body), "stackTrace") {
		t.Errorf("panic: got %+v", fe)
	}
	pid2 := call(t, fn, `{"action":"pid"}`).PID
	if pid2 == pid {
		t.Errorf("runtime not restarted after a panic (pid %d)", pid)
	}

	fe = functionError(t, fn, `{"action":"exit"}`)
	if fe.Type != "Runtime.ExitError" || fe.StatusCode != 502 || !strings.Contains(fe.Message, "exit status 3") {
		t.Errorf("exit: got %+v", fe)
	}
	if got := call(t, fn, `{"action":"pid"}`).PID; got == pid2 {
		t.Errorf("runtime not restarted after exit (pid %d)", got)
	}

	fe = functionError(t, fn, `not json`)
	if fe.Type != "SyntaxError" {
		t.Errorf("bad payload: got %+v", fe)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	fn := start(t, rie.Timeout(time.Second))
	pid := call(t, fn, `{"action":"pid"}`).PID

	begin := time.Now()
	fe := functionError(t, fn, `{"action":"sleep","ms":3000}`)
	if fe.Type != rie.ErrorTypeTimeout || fe.Message != "Task timed out after 1.00 seconds" || fe.StatusCode != 200 {
		t.Errorf("timeout: got %+v", fe)
	}
	if d := time.Since(begin); d > 2500*time.Millisecond {
		t.Errorf("timeout took %v, want about 1s", d)
	}
	// RIE kills the timed-out runtime and starts a new one on the next invoke.
	if !processGone(pid, 2*time.Second) {
		t.Errorf("timed-out runtime (pid %d) still running", pid)
	}
	r := call(t, fn, `{"action":"sleep","ms":10}`)
	if !r.Slept {
		t.Errorf("invoke after timeout: %+v", r)
	}
	if got := call(t, fn, `{"action":"pid"}`).PID; got == pid {
		t.Errorf("runtime not restarted after timeout (pid %d)", pid)
	}
}

func TestDeadlineAndContext(t *testing.T) {
	t.Parallel()
	fn := start(t, rie.Timeout(3*time.Second), rie.Env("AWS_LAMBDA_FUNCTION_NAME", "hello-fn"))
	r := call(t, fn, `{"action":"deadline"}`)
	if r.DeadlineMs <= 2000 || r.DeadlineMs > 3000 {
		t.Errorf("time to ctx deadline = %dms, want in (2000, 3000]", r.DeadlineMs)
	}
	if r.RequestID == "" {
		t.Error("lambdacontext has no AwsRequestID")
	}
	if r.FuncName != "hello-fn" {
		t.Errorf("lambdacontext.FunctionName = %q, want hello-fn", r.FuncName)
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("SLUICE_RIE_TEST_HOST_ONLY", "leak")
	fn := start(t, rie.Env("SLUICE_SOURCE", "kinesis"), rie.Env("SLUICE_SOURCE", "sqs"), rie.Timeout(7*time.Second))
	for key, want := range map[string]string{
		"SLUICE_SOURCE":               "sqs",
		"AWS_LAMBDA_FUNCTION_TIMEOUT": "7",
		"AWS_REGION":                  "us-east-1",
		"AWS_LAMBDA_FUNCTION_NAME":    "test_function",
	} {
		if r := call(t, fn, `{"action":"env","key":"`+key+`"}`); !r.Set || r.Value != want {
			t.Errorf("%s = %q (set %v), want %q", key, r.Value, r.Set, want)
		}
	}
	if r := call(t, fn, `{"action":"env","key":"SLUICE_RIE_TEST_HOST_ONLY"}`); r.Set {
		t.Errorf("host environment leaked into the function: %q", r.Value)
	}
	if r := call(t, fn, `{"action":"env","key":"AWS_LAMBDA_RUNTIME_API"}`); !strings.HasPrefix(r.Value, "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %q, want 127.0.0.1:port", r.Value)
	}
}

// RIE crashes if it receives an invocation while one is running; Invoke
// must serialise concurrent calls.
func TestConcurrentInvokesAreSerialised(t *testing.T) {
	t.Parallel()
	fn := start(t)
	const n, sleep = 4, 200 * time.Millisecond
	begin := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			out, err := fn.Invoke(context.Background(), []byte(`{"action":"sleep","ms":200}`))
			if err != nil || string(out) != `{"slept":true}` {
				t.Errorf("Invoke = %q, %v", out, err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(begin); d < n*sleep {
		t.Errorf("%d invocations of %v took %v; they were not serialised", n, sleep, d)
	}
}

func TestInvokeContext(t *testing.T) {
	t.Parallel()
	fn := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := fn.Invoke(ctx, []byte(`{"action":"sleep","ms":700}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Invoke with expired ctx: err = %v, want DeadlineExceeded", err)
	}
	// The abandoned invocation still occupies RIE; the next one waits for it.
	if r := call(t, fn, `{"action":"echo","echo":1}`); string(r.Echo) != "1" {
		t.Errorf("invoke after abandoned one: %+v", r)
	}
}

func TestStopKillsHandler(t *testing.T) {
	t.Parallel()
	fn := start(t)
	pid := call(t, fn, `{"action":"pid"}`).PID

	// Stop while an invocation is in flight.
	errc := make(chan error, 1)
	go func() {
		_, err := fn.Invoke(context.Background(), []byte(`{"action":"sleep","ms":10000}`))
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	begin := time.Now()
	if err := fn.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if err := <-errc; err == nil {
		t.Error("in-flight Invoke succeeded after Stop")
	}
	if !processGone(pid, 2*time.Second) {
		t.Errorf("handler process %d still running after Stop", pid)
	}
	if _, err := fn.Invoke(context.Background(), []byte(`{"action":"pid"}`)); err == nil {
		t.Error("Invoke after Stop succeeded")
	}
	if err := fn.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestManyFunctions(t *testing.T) {
	t.Parallel()
	bin := rie.BuildHandler(t, helloPkg)
	if again := rie.BuildHandler(t, helloPkg); again != bin {
		t.Errorf("BuildHandler not cached: %s then %s", bin, again)
	}
	var fns []*rie.Function
	for i := range 4 {
		fns = append(fns, rie.Start(t, bin, rie.Env("N", string(rune('a'+i)))))
	}
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			out, err := fn.Invoke(context.Background(), []byte(`{"action":"env","key":"N"}`))
			if want := `{"value":"` + string(rune('a'+i)) + `","set":true}`; err != nil || string(out) != want {
				t.Errorf("function %d: Invoke = %s, %v; want %s", i, out, err, want)
			}
		})
	}
	wg.Wait()
}

// processGone reports whether pid has exited (a zombie counts as exited:
// in a container, PID 1 may never reap orphans) within d.
func processGone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(s[i+1:], " Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
