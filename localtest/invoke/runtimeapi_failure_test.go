package invoke

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/invocation"
)

func TestRuntimeAPIInitFailureAndLogs(t *testing.T) {
	t.Parallel()
	inv, err := RuntimeAPI(testBinary(t), []string{testFunctionEnv + "=initerror"}, RuntimeAPIInitTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	resp, err := inv.Invoke(context.Background(), invocation.Invocation{Payload: []byte(`1`), Timeout: time.Second, N: 7})
	if err != nil || !resp.InitFailed || resp.ErrorType != "Runtime.TestInitError" {
		t.Fatalf("%+v %v", resp, err)
	}
	if _, err := RuntimeAPI(testBinary(t), nil, RuntimeAPIInitTimeout(0)); err == nil {
		t.Fatal("a zero init timeout must be refused")
	}
}

func TestRuntimeAPIInitTimeout(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	inv, err := RuntimeAPI(testBinary(t), []string{testFunctionEnv + "=sleep"}, RuntimeAPIInitTimeout(200*time.Millisecond), RuntimeAPILogs(&syncWriter{w: &out}))
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	resp, err := inv.Invoke(context.Background(), invocation.Invocation{Payload: []byte(`1`), Timeout: time.Second})
	if err != nil || !resp.InitFailed || !resp.TimedOut || !strings.Contains(string(resp.Payload), "init timeout") {
		t.Fatalf("%+v %v (%s)", resp, err, resp.Payload)
	}
}

func TestRuntimeAPILogsArePrefixed(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	sw := &syncWriter{w: &out}
	inv, err := RuntimeAPI(testBinary(t), []string{testFunctionEnv + "=echo"}, RuntimeAPILogs(sw))
	if err != nil {
		t.Fatal(err)
	}
	// "hang" prints its grandchild's pid, then runs into the timeout.
	resp, err := inv.Invoke(context.Background(), invocation.Invocation{RequestID: "req-1", Payload: []byte(`hang`), Timeout: 300 * time.Millisecond, N: 12})
	if err != nil || !resp.TimedOut || len(resp.Logs) != 1 || !strings.HasPrefix(resp.Logs[0], "grandchild ") {
		t.Fatalf("%+v %v", resp, err)
	}
	inv.Close()
	if got := sw.String(); !strings.Contains(got, "[#12 req-1] grandchild ") {
		t.Fatalf("streamed output:\n%s", got)
	}
}

func TestLineLogKeepsTheLastLines(t *testing.T) {
	l := &lineLog{ring: newRingBuffer(1 << 10)}
	l.begin("a")
	for i := range LogLines + 5 {
		fmt.Fprintf(l, "line %d\n", i)
	}
	l.Write([]byte("partial"))
	got := l.last()
	if len(got) != LogLines || got[0] != "line 6" || got[len(got)-1] != "partial" {
		t.Fatalf("%q", got)
	}
	l.Write([]byte(strings.Repeat("x", 3*maxLogLine) + "\n"))
	if got := l.last(); len(got[len(got)-1]) != maxLogLine {
		t.Fatalf("a long line must be cut: %d bytes", len(got[len(got)-1]))
	}
	l.begin("b")
	if got := l.last(); len(got) != 0 {
		t.Fatalf("a new invocation starts empty: %q", got)
	}
}

// syncWriter is a strings.Builder safe for concurrent use.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}
