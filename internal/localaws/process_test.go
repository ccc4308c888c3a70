//go:build unix

package localaws

import (
	"context"
	"testing"
	"time"
)

// TestNodeServerExitsWhenStdinCloses checks the fallback that ends the Node
// servers when the test binary dies without running Stop (stdin is a pipe
// from this process, closed by the kernel when it exits).
func TestNodeServerExitsWhenStdinCloses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	srv, err := Start(ctx, KindSQS)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	srv.proc.stdin.Close()
	select {
	case <-srv.proc.exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still running 5 s after its stdin closed; log:\n%s", srv, srv.Log())
	}
}
