package latencyproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bench/latencyproxy"
)

func upstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "echo:%s", b)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Each request and its answer pay one round trip, and bytes pass unchanged.
func TestRequestPaysOneRoundTrip(t *testing.T) {
	const rtt = 80 * time.Millisecond
	p, err := latencyproxy.Start(upstream(t), rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	for i := range 3 {
		start := time.Now()
		resp, err := c.Post("http://"+p.Addr(), "text/plain", strings.NewReader(fmt.Sprint("hello ", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got, want := string(b), fmt.Sprint("echo:hello ", i); got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
		// The first request also pays for the TCP connection's first bytes;
		// every request pays at least one whole round trip.
		if d := time.Since(start); d < rtt {
			t.Fatalf("request %d took %v, less than the round trip %v", i, d, rtt)
		}
	}
	if p.Connections() != 1 {
		t.Fatalf("%d connections, want 1 kept alive", p.Connections())
	}
}

// Concurrent requests overlap: ten at once cost about one round trip, not ten.
func TestConcurrentRequestsOverlap(t *testing.T) {
	const rtt = 300 * time.Millisecond
	p, err := latencyproxy.Start(upstream(t), rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 10}}
	defer c.CloseIdleConnections()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get("http://" + p.Addr())
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Ten serial requests would take 10 round trips; overlapped they take
	// about one (a new connection each adds no round trip of its own here:
	// the proxy accepts locally and dials upstream at once). Five is far
	// from both, so a loaded machine does not decide the verdict.
	if d := time.Since(start); d >= 5*rtt {
		t.Fatalf("10 concurrent requests took %v: they did not overlap (round trip %v)", d, rtt)
	}
}

// A half-closed connection stays half-closed: the upstream sees the end of
// the request and its answer still comes back.
func TestHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c) // until the client's write side closes
		c.Write([]byte(strings.ToUpper(string(b))))
		c.Close()
	}()
	p, err := latencyproxy.Start(ln.Addr().String(), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("ping"))
	c.(*net.TCPConn).CloseWrite()
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != io.EOF || got != "PING" {
		t.Fatalf("got %q, %v; want PING then EOF", got, err)
	}
}
