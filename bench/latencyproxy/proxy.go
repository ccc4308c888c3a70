// Package latencyproxy is a TCP proxy on loopback that delays every chunk
// of bytes by a fixed time in each direction, so that a benchmark against a
// local server (DynamoDB Local) pays the round trips a function pays to a
// real one. It is a delay line, not a stall: bytes keep flowing while
// earlier ones wait, so pipelined and concurrent requests overlap as they
// would on a real network, and a request and its answer cost one round
// trip (twice the one-way delay) on top of the server's own time.
//
// scripts/bench-peers.sh starts it (cmd/latencyproxy) in front of
// DynamoDB Local when IDEM_RTT is set; a Go benchmark can Start one itself.
package latencyproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards connections accepted on 127.0.0.1 to an upstream address.
type Proxy struct {
	ln       net.Listener
	upstream string
	oneWay   time.Duration

	conns atomic.Int64 // connections accepted
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]struct{}
	done  chan struct{}
}

// Start listens on a free 127.0.0.1 port and forwards every connection to
// upstream (host:port), delaying each chunk by rtt/2 in each direction.
func Start(upstream string, rtt time.Duration) (*Proxy, error) {
	if rtt < 0 {
		return nil, errors.New("latencyproxy: the round trip must not be negative")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, oneWay: rtt / 2, open: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Connections is how many connections the proxy accepted.
func (p *Proxy) Connections() int64 { return p.conns.Load() }

// Close stops accepting, closes every connection and waits for the pumps.
func (p *Proxy) Close() error {
	close(p.done)
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		c.Close()
		return false
	default:
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(server, client) }()
	go func() { defer wg.Done(); p.pump(client, server) }()
	wg.Wait()
}

// chunk is bytes read at one moment, due for writing oneWay later.
type chunk struct {
	b   []byte
	due time.Time
}

// pump copies src to dst through a delay line. When src ends, dst's write
// side is closed once the bytes in flight are written, so a half-closed
// connection stays half-closed.
func (p *Proxy) pump(dst, src net.Conn) {
	line := make(chan chunk, 4096)
	go func() {
		defer close(line)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				line <- chunk{b: b[:n], due: time.Now().Add(p.oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range line {
		if failed {
			continue // drain, so the reader ends
		}
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			failed = true
			src.Close()
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && !failed {
		cw.CloseWrite()
	} else {
		dst.Close()
	}
}

var _ io.Closer = (*Proxy)(nil)
