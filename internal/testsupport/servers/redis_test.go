package servers_test

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// TestRedis: the shared server answers on 127.0.0.1, keeps nothing on
// disk, and one of its own is gone after Stop.
func TestRedis(t *testing.T) {
	t.Parallel()
	srv := servers.Redis(t)
	if !strings.HasPrefix(srv.Addr, "127.0.0.1:") || srv.Endpoint != "redis://"+srv.Addr {
		t.Fatalf("Addr %q, Endpoint %q", srv.Addr, srv.Endpoint)
	}
	if got := redisCmd(t, srv.Addr, "CONFIG", "GET", "save"); !strings.Contains(got, "\r\nsave\r\n$0\r\n") {
		t.Errorf("CONFIG GET save = %q, want an empty save (no snapshots)", got)
	}
	if got := redisCmd(t, srv.Addr, "CONFIG", "GET", "bind"); !strings.Contains(got, "127.0.0.1") {
		t.Errorf("CONFIG GET bind = %q, want 127.0.0.1", got)
	}
	own := servers.New(t, servers.KindRedis)
	if own.Addr == srv.Addr {
		t.Fatalf("New returned the shared server's address %s", own.Addr)
	}
	pid := own.PID()
	if err := own.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("redis-server pid %d still exists after Stop (kill 0: %v)", pid, err)
	}
}

// TestRedisMissing: without a server on PATH the start fails, saying how
// to install one.
func TestRedisMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("SLUICE_REDIS_SERVER", "")
	_, err := servers.Start(t.Context(), servers.KindRedis)
	if err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("Start without redis-server: %v, want an error saying how to install it", err)
	}
}

// redisCmd sends one command and returns the raw reply.
func redisCmd(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var out strings.Builder
	// Replies here are short arrays of bulk strings: read until the
	// connection is quiet.
	for {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			return out.String()
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
