package localaws

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// redisBinaries are the servers tried on PATH, in order.
var redisBinaries = []string{"redis-server", "valkey-server"}

// findRedis returns $SLUICE_REDIS_SERVER, or the first of redis-server and
// valkey-server on PATH.
func findRedis() (string, error) {
	if p := os.Getenv("SLUICE_REDIS_SERVER"); p != "" {
		if !isFile(p) {
			return "", fmt.Errorf("start redis server: SLUICE_REDIS_SERVER=%s is not a file", p)
		}
		return p, nil
	}
	for _, name := range redisBinaries {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("start redis server: neither redis-server nor valkey-server is on PATH. " +
		"Install one: Debian/Ubuntu `sudo apt-get install redis-server` (make test does it when run as root " +
		"or with passwordless sudo), macOS `brew install redis`; or set SLUICE_REDIS_SERVER to the server's path")
}

// startRedis runs redis-server on a free 127.0.0.1 port with no
// persistence (nothing is written to disk) and waits for PONG.
func startRedis(ctx context.Context) (*Server, error) {
	bin, err := findRedis()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-redis-")
	if err != nil {
		return nil, fmt.Errorf("start redis server: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start redis server: find a free port on 127.0.0.1: %w", err)
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", ""}
		p, err := launch(KindRedis, dir, bin, args, false)
		if err != nil {
			return nil, err
		}
		srv := &Server{Kind: KindRedis, Port: port, Endpoint: "redis://" + addr(port), Addr: addr(port), proc: p}
		err = waitPong(ctx, srv)
		if err == nil {
			go func() { <-p.exited; os.RemoveAll(dir) }()
			return srv, nil
		}
		lastErr = err
		if !errors.Is(err, errExited) || !strings.Contains(p.log.String(), "Address already in use") {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// waitPong sends PING until the server answers PONG, the process exits, or
// ctx ends (then it stops the server).
func waitPong(ctx context.Context, srv *Server) error {
	p := srv.proc
	var lastErr error
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("start redis server: %s %w (%v); its log:\n%s", p.argv, errExited, p.exitErr(), tail(p.log.String(), 4<<10))
		case <-ctx.Done():
			_ = p.stop(2 * time.Second)
			return fmt.Errorf("start redis server: %s at %s gave no PONG in time (%v; last error: %v); stopped it; its log:\n%s",
				p.argv, srv.Addr, context.Cause(ctx), lastErr, tail(p.log.String(), 4<<10))
		case <-tick.C:
		}
		if lastErr = ping(ctx, srv.Addr); lastErr == nil {
			return nil
		}
	}
}

func ping(ctx context.Context, address string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
