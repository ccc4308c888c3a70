package localaws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// process is one started server process and its captured output.
type process struct {
	kind   Kind
	cmd    *exec.Cmd
	argv   string // for messages
	log    *logBuffer
	stdin  io.WriteCloser // held open; the Node launchers exit when it closes
	lines  chan string    // first stdout line (the Node launchers print their port)
	exited chan struct{}  // closed when the process has exited

	mu      sync.Mutex
	waitErr error
	stopped bool
}

// launch starts name with args in dir. If watchStdin, the child's stdin is a
// pipe that this process keeps open for the child's lifetime.
func launch(kind Kind, dir, name string, args []string, watchStdin bool) (*process, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 2 * time.Second
	p := &process{
		kind:   kind,
		cmd:    cmd,
		argv:   strings.Join(append([]string{name}, args...), " "),
		log:    &logBuffer{},
		lines:  make(chan string, 1),
		exited: make(chan struct{}),
	}
	cmd.Stdout = &firstLineTap{w: p.log, lines: p.lines}
	cmd.Stderr = p.log
	if watchStdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("start %s server: stdin pipe: %w", kind, err)
		}
		p.stdin = w
	}

	// Start and wait on one goroutine locked to its OS thread: Pdeathsig
	// (Linux) fires when the thread that forked the child exits, and a locked
	// thread exits only when this goroutine returns, after the child is gone.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s server: run %s in %s: %w", kind, p.argv, dir, err)
	}
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr == nil {
		return errors.New("exit status 0")
	}
	return p.waitErr
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	already := p.stopped
	p.stopped = true
	p.mu.Unlock()
	if !already {
		if p.stdin != nil {
			p.stdin.Close()
		}
		_ = terminate(p.cmd.Process)
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = kill(p.cmd.Process)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			return fmt.Errorf("%s server (pid %d) did not exit after SIGKILL", p.kind, p.pid())
		}
	}
	// Children left in the group, if any, go too (ESRCH when none).
	_ = kill(p.cmd.Process)
	return nil
}

// childEnv is this process's environment minus what could change the servers'
// behaviour, plus the region/account the servers put in ARNs.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NODE_OPTIONS", "NODE_PATH", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCOUNT_ID":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "AWS_REGION="+Region, "AWS_DEFAULT_REGION="+Region, "AWS_ACCOUNT_ID=000000000000")
}

// logBuffer keeps the last logKeep bytes written to it.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const logKeep = 256 << 10

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*logKeep {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-logKeep:]...)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) > logKeep {
		return string(b.buf[len(b.buf)-logKeep:])
	}
	return string(b.buf)
}

// firstLineTap copies everything to w and sends the first complete line to lines.
type firstLineTap struct {
	w       io.Writer
	lines   chan<- string
	pending []byte
	sent    bool
}

func (f *firstLineTap) Write(p []byte) (int, error) {
	if !f.sent {
		f.pending = append(f.pending, p...)
		if i := bytes.IndexByte(f.pending, '\n'); i >= 0 {
			f.lines <- strings.TrimSpace(string(f.pending[:i]))
			f.sent, f.pending = true, nil
		}
	}
	return f.w.Write(p)
}
