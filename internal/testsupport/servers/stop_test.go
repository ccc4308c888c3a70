//go:build unix

package servers_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// TestStopKillsProcess checks that a dedicated server's process is gone after Stop.
func TestStopKillsProcess(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 60*time.Second)
	srv, err := servers.Start(ctx, servers.KindKinesis)
	if err != nil {
		t.Fatal(err)
	}
	pid := srv.PID()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if srv.Running() {
		t.Fatal("Running() after Stop")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d still exists after Stop (kill 0: %v)", pid, err)
	}
}
