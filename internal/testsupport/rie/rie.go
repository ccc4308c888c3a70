// Package rie runs a compiled Lambda handler ("bootstrap") under the real AWS
// Lambda Runtime Interface Emulator, directly on the host, and invokes it over
// HTTP on 127.0.0.1. It is a test helper:
//
//	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
//	fn := rie.Start(t, bin, rie.Env("SLUICE_SOURCE", "kinesis"), rie.Timeout(5*time.Second))
//	out, err := fn.Invoke(ctx, payload)
//
// The emulator binary is built from the version pinned in go.mod (a tool
// directive) into ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/bin/aws-lambda-rie on
// first use, or taken from $SLUICE_RIE; see scripts/build-rie.sh. RIE runs
// only on Linux.
//
// Behaviour of RIE worth knowing (checked against the pinned version):
//   - It runs one invocation at a time and crashes (nil pointer panic) if a
//     second one arrives while one is running, so Invoke serialises calls.
//   - A handler error comes back as HTTP 200 with an errorType/errorMessage
//     JSON body; a panic or exit as HTTP 502 with such a body. Invoke
//     returns both as *FunctionError.
//   - A timeout comes back as HTTP 200 with a plain-text body; Invoke returns
//     a *FunctionError of type ErrorTypeTimeout. RIE kills the runtime and
//     starts a fresh one (a new process, init runs again) for the next
//     invocation, as it does after a panic or exit.
//   - The function sees RIE's whole environment. Start gives RIE a minimal
//     one (PATH, AWS_REGION, AWS_DEFAULT_REGION, AWS_LAMBDA_FUNCTION_TIMEOUT)
//     plus the Env options, so host credentials never leak into handlers.
package rie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	defaultTimeout = 30 * time.Second
	defaultRegion  = "us-east-1"
	readyTimeout   = 10 * time.Second
	stopTimeout    = 5 * time.Second
	startAttempts  = 5
	invokePath     = "/2015-03-31/functions/function/invocations"
)

// Option configures Start.
type Option func(*config)

type config struct {
	env     map[string]string
	timeout time.Duration
	errs    []string
}

// Env sets an environment variable of the function. Later options win.
// AWS_LAMBDA_FUNCTION_TIMEOUT is set with Timeout instead.
func Env(key, value string) Option {
	return func(c *config) {
		switch key {
		case "AWS_LAMBDA_FUNCTION_TIMEOUT":
			c.errs = append(c.errs, "rie.Env(AWS_LAMBDA_FUNCTION_TIMEOUT): use rie.Timeout instead")
		case "AWS_LAMBDA_MAX_CONCURRENCY":
			c.errs = append(c.errs, "rie.Env(AWS_LAMBDA_MAX_CONCURRENCY): switches RIE to its managed-instances mode, which this package does not support")
		case "":
			c.errs = append(c.errs, "rie.Env: empty key")
		default:
			c.env[key] = value
		}
	}
}

// Timeout sets the function timeout (AWS_LAMBDA_FUNCTION_TIMEOUT). RIE only
// accepts whole seconds, so d must be a positive multiple of time.Second.
// The default is 30s.
func Timeout(d time.Duration) Option {
	return func(c *config) {
		if d < time.Second || d%time.Second != 0 {
			c.errs = append(c.errs, fmt.Sprintf("rie.Timeout(%v): RIE supports only whole seconds >= 1s", d))
			return
		}
		c.timeout = d
	}
}

// Function is a handler running under RIE. Its methods are safe for
// concurrent use.
type Function struct {
	url     string
	cmd     *exec.Cmd
	logs    *logBuffer
	client  *http.Client
	sem     chan struct{} // held while an invocation is in flight in RIE
	exited  chan struct{} // closed once RIE has exited and been reaped
	waitErr error         // RIE's exit status; read only after exited is closed

	stopCtx  context.Context // done once Stop has begun
	stop     context.CancelFunc
	stopOnce sync.Once
	stopErr  error
}

// Start runs bootstrap (a handler binary, see BuildHandler) under RIE with
// both RIE addresses on free 127.0.0.1 ports, and returns once RIE accepts
// connections. The function's working directory is a fresh t.TempDir. RIE
// and the handler process are stopped by t.Cleanup; if the test failed, RIE's
// output is logged then. Start fails the test if anything goes wrong.
func Start(t testing.TB, bootstrap string, opts ...Option) *Function {
	t.Helper()
	cfg := config{env: map[string]string{}, timeout: defaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		t.Fatalf("rie.Start: %s", strings.Join(cfg.errs, "; "))
	}
	if err := platformSupported(); err != nil {
		t.Fatalf("rie.Start: %v", err)
	}
	abs, err := filepath.Abs(bootstrap)
	if err == nil {
		err = checkExecutable(abs)
	}
	if err != nil {
		t.Fatalf("rie.Start: bootstrap %s: %v (build it with rie.BuildHandler)", bootstrap, err)
	}
	bin, err := rieBinary()
	if err != nil {
		t.Fatalf("rie.Start: cannot get the aws-lambda-rie binary: %v", err)
	}

	env := cfg.environ()
	dir := t.TempDir()
	var lastErr error
	for range startAttempts {
		f, err := launch(bin, abs, dir, env)
		if err == nil {
			t.Cleanup(func() {
				if err := f.Stop(); err != nil {
					t.Errorf("rie: %v", err)
				}
				if t.Failed() {
					t.Logf("rie: output of aws-lambda-rie running %s:\n%s", bootstrap, f.Logs())
				}
			})
			return f
		}
		lastErr = err
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	t.Fatalf("rie.Start(%s): %v", bootstrap, lastErr)
	return nil
}

func (c *config) environ() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	m := map[string]string{
		"PATH":               path,
		"AWS_REGION":         defaultRegion,
		"AWS_DEFAULT_REGION": defaultRegion,
	}
	for k, v := range c.env {
		m[k] = v
	}
	m["AWS_LAMBDA_FUNCTION_TIMEOUT"] = fmt.Sprint(int64(c.timeout / time.Second))
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

var errAddrInUse = errors.New("address already in use")

// launch starts one RIE process and waits for it to listen. It returns an
// error wrapping errAddrInUse if RIE lost a race for one of its ports.
func launch(bin, bootstrap, dir string, env []string) (*Function, error) {
	rieAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if apiAddr == rieAddr {
		return nil, fmt.Errorf("picking ports: %w", errAddrInUse)
	}

	logs := &logBuffer{}
	cmd := exec.Command(bin,
		"--runtime-interface-emulator-address", rieAddr,
		"--runtime-api-address", apiAddr,
		"--log-level", "info",
		bootstrap)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logs
	cmd.Stderr = logs
	setProcAttrs(cmd)
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}

	stopCtx, stop := context.WithCancel(context.Background())
	f := &Function{
		url:  "http://" + rieAddr + invokePath,
		cmd:  cmd,
		logs: logs,
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 1,
		}},
		sem:     make(chan struct{}, 1),
		exited:  make(chan struct{}),
		stopCtx: stopCtx,
		stop:    stop,
	}
	go func() {
		f.waitErr = cmd.Wait()
		close(f.exited)
	}()

	if err := f.awaitReady(rieAddr, apiAddr); err != nil {
		if serr := f.Stop(); serr != nil {
			err = fmt.Errorf("%w; also %v", err, serr)
		}
		return nil, err
	}
	return f, nil
}

func (f *Function) awaitReady(addrs ...string) error {
	deadline := time.Now().Add(readyTimeout)
	for _, addr := range addrs {
		for {
			c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-f.exited:
				logs := f.Logs()
				if strings.Contains(logs, "address already in use") {
					return fmt.Errorf("aws-lambda-rie could not bind %s: %w", addr, errAddrInUse)
				}
				return fmt.Errorf("aws-lambda-rie exited before listening (%v); output:\n%s", f.waitErr, logs)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("aws-lambda-rie did not listen on %s within %v; output:\n%s", addr, readyTimeout, f.Logs())
			}
		}
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("picking a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Invoke posts payload to the function and returns the response body.
//
// If the handler fails or times out, the error is a *FunctionError (use
// errors.As). Invocations run one at a time, because RIE cannot run two; a
// call waits for the previous one. If ctx ends first, Invoke returns ctx's
// error, but the invocation keeps running in RIE until it returns or times
// out, and later calls wait for it.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("rie: invoke: %w", err)
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("rie: invoke: waiting for the previous invocation to finish: %w", context.Cause(ctx))
	case <-f.stopCtx.Done():
		return nil, errors.New("rie: invoke: function is stopped")
	}

	type result struct {
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-f.sem }()
		body, err := f.post(payload)
		done <- result{body, err}
	}()
	select {
	case r := <-done:
		return r.body, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("rie: invoke abandoned (the handler keeps running until it returns or times out): %w", context.Cause(ctx))
	}
}

func (f *Function) post(payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(f.stopCtx, http.MethodPost, f.url, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("rie: invoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, f.transportError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, f.transportError(err)
	}
	if fe, ok := parseFunctionError(resp.StatusCode, body); ok {
		return nil, fe
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rie: invoke: RIE answered HTTP %d with %q; its output is in Function.Logs", resp.StatusCode, body)
	}
	return body, nil
}

func (f *Function) transportError(err error) error {
	if f.stopCtx.Err() != nil {
		return fmt.Errorf("rie: invoke: function was stopped during the invocation: %w", err)
	}
	select {
	case <-f.exited:
		return fmt.Errorf("rie: invoke: aws-lambda-rie exited (%v); output:\n%s", f.waitErr, f.Logs())
	default:
		return fmt.Errorf("rie: invoke: %w (output of aws-lambda-rie is in Function.Logs)", err)
	}
}

// Endpoint returns the base URL of RIE's Invoke API (http://127.0.0.1:PORT);
// invocations are POSTed to Endpoint()+"/2015-03-31/functions/function/invocations".
func (f *Function) Endpoint() string { return strings.TrimSuffix(f.url, invokePath) }

// Logs returns everything RIE and the handler have written to stdout and
// stderr so far.
func (f *Function) Logs() string { return f.logs.String() }

// Stop kills RIE and the handler process and waits for RIE to exit. An
// in-flight Invoke fails. Stop is idempotent; Start registers it with
// t.Cleanup, so tests call it only to stop early.
func (f *Function) Stop() error {
	f.stopOnce.Do(func() {
		f.stop()
		select {
		case <-f.exited:
		default:
			killTree(f.cmd.Process)
		}
		select {
		case <-f.exited:
		case <-time.After(stopTimeout + time.Second):
			f.stopErr = fmt.Errorf("aws-lambda-rie (pid %d) did not exit within %v of SIGKILL", f.cmd.Process.Pid, stopTimeout)
		}
		f.client.CloseIdleConnections()
	})
	return f.stopErr
}

// logBuffer is an io.Writer collecting process output, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
