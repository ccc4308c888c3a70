package invoke

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// ringBuffer keeps the last max bytes written to it. It is safe for
// concurrent use.
type ringBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte // grows to max, then is written round
	off  int    // next write position once full
	full bool
}

func newRingBuffer(max int) *ringBuffer { return &ringBuffer{max: max} }

func (b *ringBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.full {
		if len(b.buf)+len(p) <= b.max {
			b.buf = append(b.buf, p...)
			return n, nil
		}
		nb := make([]byte, b.max)
		b.off = copy(nb, b.buf)
		b.buf, b.full = nb, true
	}
	if len(p) >= b.max {
		copy(b.buf, p[len(p)-b.max:])
		b.off = 0
		return n, nil
	}
	k := copy(b.buf[b.off:], p)
	if k < len(p) {
		b.off = copy(b.buf, p[k:])
	} else {
		b.off += k
	}
	if b.off == b.max {
		b.off = 0
	}
	return n, nil
}

// Printf writes a formatted line.
func (b *ringBuffer) Printf(format string, args ...any) {
	fmt.Fprintf(b, format, args...)
}

func (b *ringBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.full {
		return string(b.buf)
	}
	return string(b.buf[b.off:]) + string(b.buf[:b.off])
}

// lockedWriter serialises the writes of several execution environments'
// line logs to one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineLog takes the output of one execution environment's function: it
// keeps it in the ring buffer (shared by the environments), splits it into
// lines, keeps the current invocation's last LogLines lines and streams
// lines, prefixed by their invocation, when asked to.
type lineLog struct {
	ring      *ringBuffer
	stream    io.Writer // or nil; shared by the environments, so a lockedWriter
	initLabel string    // the label of output written during init; "init" when empty

	mu      sync.Mutex
	label   string // the invocation the output belongs to
	inv     string // the current invocation's label, for after init
	partial []byte
	lines   []string // the current invocation's last lines, oldest first
}

// begin starts a new invocation's lines.
func (l *lineLog) begin(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushPartial()
	l.label, l.inv, l.lines = label, label, l.lines[:0]
}

// initStart marks output from now on as the process's init.
func (l *lineLog) initStart() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushPartial()
	l.label = l.initLabel
	if l.label == "" {
		l.label = "init"
	}
}

// handOver marks output from now on as the invocation's.
func (l *lineLog) handOver() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushPartial()
	l.label = l.inv
}

// note writes one line of the invoker's to the ring and the stream,
// without touching the function's lines.
func (l *lineLog) note(s string) {
	l.ring.Write([]byte(s + "\n"))
	if l.stream == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stream.Write([]byte("[" + l.label + "] " + s + "\n"))
}

// last returns the current invocation's last lines.
func (l *lineLog) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.lines), len(l.lines)+1)
	copy(out, l.lines)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
		if len(out) > LogLines {
			out = out[1:]
		}
	}
	return out
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.ring.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if room := maxLogLine - len(l.partial); room > 0 {
				l.partial = append(l.partial, rest[:min(room, len(rest))]...)
			}
			break
		}
		if room := maxLogLine - len(l.partial); room > 0 {
			l.partial = append(l.partial, rest[:min(room, i)]...)
		}
		l.line(string(bytes.TrimSuffix(l.partial, []byte("\r"))))
		l.partial = l.partial[:0]
		rest = rest[i+1:]
	}
	return len(p), nil
}

// flushPartial ends a line left without its newline.
func (l *lineLog) flushPartial() {
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = l.partial[:0]
	}
}

func (l *lineLog) line(s string) {
	if len(l.lines) == LogLines {
		copy(l.lines, l.lines[1:])
		l.lines = l.lines[:LogLines-1]
	}
	l.lines = append(l.lines, s)
	if l.stream != nil {
		l.stream.Write([]byte("[" + l.label + "] " + s + "\n"))
	}
}
