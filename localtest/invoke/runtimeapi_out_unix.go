//go:build unix

package invoke

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// funcOutput carries the function's stdout and stderr (one pipe, so their
// lines stay in order) to sink. A reader goroutine forwards output as it
// comes; drain forwards, at once, whatever the function wrote so far, so
// that output written before the function answered is attributed to that
// invocation, not to the next one.
type funcOutput struct {
	r    *os.File
	dup  int // a second descriptor of the read end, read by drain
	sink io.Writer
	mu   sync.Mutex // held while a chunk is read and forwarded: chunks reach sink in order
	buf  []byte     // drain's buffer, under mu
	done chan struct{}
}

// attachOutput gives cmd a pipe for stdout and stderr that feeds sink.
// After cmd.Start the caller calls started; after cmd.Wait, finish.
func attachOutput(cmd *exec.Cmd, sink io.Writer) (*funcOutput, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o := &funcOutput{r: pr, dup: -1, sink: sink, buf: make([]byte, 32<<10), done: make(chan struct{})}
	rc, err := pr.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { o.dup, err = syscall.Dup(int(fd)) })
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	syscall.CloseOnExec(o.dup)
	cmd.Stdout, cmd.Stderr = pw, pw
	go o.read(rc)
	return o, nil
}

func (o *funcOutput) read(rc syscall.RawConn) {
	defer close(o.done)
	buf := make([]byte, 32<<10)
	rc.Read(func(fd uintptr) bool {
		for {
			o.mu.Lock()
			n, err := syscall.Read(int(fd), buf)
			if n > 0 {
				o.sink.Write(buf[:n])
			}
			o.mu.Unlock()
			switch {
			case n > 0 || err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false // wait for more
			}
			return true // end of file, or an error
		}
	})
}

// started closes the parent's copy of the write end.
func (o *funcOutput) started(cmd *exec.Cmd) {
	if w, ok := cmd.Stdout.(*os.File); ok {
		w.Close()
	}
}

// drain forwards what the function has written and the reader has not.
func (o *funcOutput) drain() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dup < 0 {
		return
	}
	for {
		n, err := syscall.Read(o.dup, o.buf)
		if n > 0 {
			o.sink.Write(o.buf[:n])
			continue
		}
		if err == syscall.EINTR {
			continue
		}
		return
	}
}

// finish forwards the rest and closes the pipe (a grandchild that still
// holds its write end does not keep it open).
func (o *funcOutput) finish() {
	o.drain()
	o.r.Close()
	<-o.done
	o.mu.Lock()
	syscall.Close(o.dup)
	o.dup = -1
	o.mu.Unlock()
}
