//go:build linux

package invoke

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/invocation"
)

// effectLine is one line of the conformance function's effects file.
type effectLine struct {
	Record, ID, Request string
	PID                 int
	Invocation          int64
}

func readEffectLines(t *testing.T, path string) []effectLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []effectLine
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var e effectLine
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("effects line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the invoker's log stream.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRuntimeAPIKill injects a crash at each kill point, and a timeout,
// into the compiled conformance function (Kinesis: its records run in
// order) and checks that the process really died inside the invocation:
// the effects stop where the kill landed, the answer is Lambda's
// (Runtime.ExitError "signal: killed", or Sandbox.Timedout), and the next
// invocation runs in a new process whose memory starts afresh (a new PID,
// its in-memory invocation count back at 1, a new [init]).
func TestRuntimeAPIKill(t *testing.T) {
	t.Parallel()
	bin := rie.BuildHandler(t, conformancePkg)
	cases := []struct {
		name    string
		kill    invocation.Kill
		timeout time.Duration
		actions []string
		effects int // left by the killed invocation
		point   invocation.KillPoint
	}{
		{"crash at the hand-over", invocation.Kill{Point: invocation.KillAtHandOver}, 10 * time.Second,
			[]string{"ok", "ok"}, 0, invocation.KillAtHandOver},
		{"crash mid-batch", invocation.Kill{Point: invocation.KillMidBatch, After: time.Second}, 10 * time.Second,
			[]string{"ok", "ok", "await:never", "ok"}, 2, invocation.KillMidBatch},
		{"crash before the answer", invocation.Kill{Point: invocation.KillBeforeAnswer}, 10 * time.Second,
			[]string{"ok", "ok", "ok"}, 3, invocation.KillBeforeAnswer},
		{"mid-batch moment after the answer", invocation.Kill{Point: invocation.KillMidBatch, After: 5 * time.Second}, 10 * time.Second,
			[]string{"ok"}, 1, invocation.KillBeforeAnswer},
		// Frozen while record 1 sleeps: without the freeze records 1 and 2
		// would take effect (at 2 s) before the deadline (3 s; the handler
		// starts no record in its last 500 ms).
		{"timeout", invocation.Kill{Point: invocation.KillMidBatch, After: 600 * time.Millisecond, Timeout: true}, 3 * time.Second,
			[]string{"ok", "sleep:2000", "ok"}, 1, invocation.KillMidBatch},
		{"timeout after the answer", invocation.Kill{Point: invocation.KillMidBatch, After: 5 * time.Second, Timeout: true}, 2 * time.Second,
			[]string{"ok"}, 1, invocation.KillBeforeAnswer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			effects := filepath.Join(t.TempDir(), "effects.jsonl")
			var stream syncBuffer
			inv, err := RuntimeAPI(bin, []string{"SLUICE_SOURCE=kinesis", "SLUICE_EFFECTS_FILE=" + effects}, RuntimeAPILogs(&stream))
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
			// A warm process first: its memory counts one invocation.
			raw, _ := conformanceEvent(t, "kinesis", "ok")
			if resp, err := r.Invoke(ctx, invocation.Invocation{RequestID: "warm", Payload: raw, Timeout: 10 * time.Second, N: 1}); err != nil || resp.Failed() {
				t.Fatalf("warm-up: %v %+v", err, resp)
			}
			pid := r.PID()

			// await:never holds a record until the kill: no file of that
			// name ever exists.
			actions := make([]string, len(tc.actions))
			for i, a := range tc.actions {
				actions[i] = strings.Replace(a, "await:never", "await:"+filepath.Join(t.TempDir(), "never"), 1)
			}
			raw, _ = conformanceEvent(t, "kinesis", actions...)
			kill := tc.kill
			resp, err := r.Invoke(ctx, invocation.Invocation{RequestID: "killed", Payload: raw, Timeout: tc.timeout, N: 2, Kill: &kill})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Killed == nil || resp.Killed.Point != tc.point || resp.Killed.Timeout != tc.kill.Timeout {
				t.Fatalf("Killed = %+v, want point %s (timeout %v)", resp.Killed, tc.point, tc.kill.Timeout)
			}
			if tc.kill.Timeout {
				if !resp.TimedOut || resp.ErrorType != "Sandbox.Timedout" || resp.InitFailed || resp.Duration < tc.timeout {
					t.Fatalf("want a timeout at the deadline (%v), got %+v (%s)", tc.timeout, resp, resp.Payload)
				}
			} else if resp.TimedOut || resp.ErrorType != "Runtime.ExitError" || resp.InitFailed ||
				!strings.Contains(string(resp.Payload), "Runtime exited with error: signal: killed") {
				t.Fatalf("want Runtime.ExitError signal: killed, got %+v (%s)", resp, resp.Payload)
			}
			if r.PID() != 0 {
				t.Fatalf("the killed process %d still runs (PID %d)", pid, r.PID())
			}
			got := 0
			for _, e := range readEffectLines(t, effects) {
				if e.Request == "killed" {
					got++
				}
			}
			if got != tc.effects {
				t.Fatalf("the killed invocation left %d effects, want %d", got, tc.effects)
			}

			// The next invocation: a new process, its memory fresh.
			raw, _ = conformanceEvent(t, "kinesis", "ok")
			if resp, err := r.Invoke(ctx, invocation.Invocation{RequestID: "next", Payload: raw, Timeout: 10 * time.Second, N: 3}); err != nil || resp.Failed() {
				t.Fatalf("after the kill: %v %+v (%s)", err, resp, resp.Payload)
			}
			var next *effectLine
			for _, e := range readEffectLines(t, effects) {
				switch {
				case e.Request == "warm" && (e.PID != pid || e.Invocation != 1):
					t.Fatalf("warm-up effect %+v, want pid %d invocation 1", e, pid)
				case e.Request == "next":
					next = &e
				}
			}
			if next == nil || next.PID == pid || next.PID == 0 || next.Invocation != 1 {
				t.Fatalf("after the kill, effect %+v: want a new process (not pid %d) that counts 1 invocation", next, pid)
			}
			logs := stream.String()
			if n := strings.Count(logs, "[init] localtest: started"); n != 2 {
				t.Fatalf("want two inits in the log stream, got %d:\n%s", n, logs)
			}
			if !strings.Contains(logs, "[#2 killed] localtest: killing pid") {
				t.Fatalf("the stream does not say the process was killed in invocation #2:\n%s", logs)
			}
		})
	}
}
