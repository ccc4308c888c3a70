// Package jaeger runs Jaeger, a real trace backend, for the tests of
// package tracing: its OTLP receiver (HTTP, protobuf) takes the spans a
// function exports, and its query API gives them back, links included.
//
//	j := jaeger.Start(t)
//	// export to j.OTLP (http://127.0.0.1:PORT), then
//	spans, err := j.Spans(ctx, "orders", 4)
//
// The binary is built from the version in scripts/jaeger.version by
// scripts/build-jaeger.sh into ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/bin
// (or taken from $SLUICE_JAEGER); Start runs the script on first use when
// the binary is missing, which takes minutes. Jaeger runs with an
// in-memory store and listens on free 127.0.0.1 ports only; it is stopped
// in t.Cleanup, and on Linux killed with the test binary (Pdeathsig).
package jaeger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running Jaeger.
type Server struct {
	// OTLP is the base URL of the OTLP/HTTP receiver, for
	// OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces).
	OTLP string
	// Query is the base URL of the query API.
	Query string

	cmd    *exec.Cmd
	exited chan struct{}
	logs   *logBuffer
}

// config is an all-in-one configuration on the given ports, with nothing
// on a fixed port and no telemetry of its own.
const config = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Start starts Jaeger for the test and stops it in t.Cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("jaeger: %v", err)
	}
	var s *Server
	for attempt := 0; ; attempt++ {
		s, err = start(bin, t.TempDir())
		if err == nil || attempt == 3 {
			break
		}
	}
	if err != nil {
		t.Fatalf("jaeger: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", s.logs.String())
		}
		s.stop()
	})
	return s
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// Binary returns the path of the Jaeger binary of scripts/jaeger.version,
// building it with scripts/build-jaeger.sh when it is missing.
func Binary() (string, error) {
	buildOnce.Do(func() { buildOnce.path, buildOnce.err = binary() })
	return buildOnce.path, buildOnce.err
}

func binary() (string, error) {
	if p := os.Getenv("SLUICE_JAEGER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("SLUICE_JAEGER=%s: %w; unset it or run scripts/build-jaeger.sh", p, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	v, err := os.ReadFile(filepath.Join(root, "scripts", "jaeger.version"))
	if err != nil {
		return "", fmt.Errorf("the pinned version: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the Jaeger binary (set HOME or XDG_CACHE_HOME): %w", err)
	}
	p := filepath.Join(cache, "sluice", "bin", "jaeger-"+strings.TrimSpace(string(v)))
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "build-jaeger.sh"))
	cmd.Env = append(os.Environ(), "SLUICE_JAEGER="+p)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building Jaeger with scripts/build-jaeger.sh (needs Go and the Go module proxy): %w\n%s", err, out)
	}
	return p, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("locating go.mod (is Go on PATH?): %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module: run the tests from within the sluice module")
	}
	return filepath.Dir(gomod), nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func start(bin, dir string) (*Server, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[0], ports[1], ports[2], ports[3]), 0o644); err != nil {
		return nil, err
	}
	s := &Server{
		OTLP:   "http://127.0.0.1:" + strconv.Itoa(ports[3]),
		Query:  "http://127.0.0.1:" + strconv.Itoa(ports[0]),
		exited: make(chan struct{}),
		logs:   &logBuffer{},
	}
	s.cmd = exec.Command(bin, "--config", "file:"+cfg)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	s.cmd.SysProcAttr = sysProcAttr()
	started := make(chan error, 1)
	// Pdeathsig fires when the thread that started the child exits: start
	// and wait on one goroutine locked to its thread.
	go func() {
		runtime.LockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	health := "http://127.0.0.1:" + strconv.Itoa(ports[2]) + "/status"
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("jaeger exited at start:\n%s", s.logs.String())
		default:
		}
		if resp, err := http.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("jaeger not healthy after 30 s:\n%s", s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) stop() {
	_ = terminate(s.cmd.Process)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = kill(s.cmd.Process)
		<-s.exited
	}
}

// Logs returns what Jaeger wrote.
func (s *Server) Logs() string { return s.logs.String() }

// Span is a span as Jaeger's query API (api/v3, OTLP JSON) gives it back.
type Span struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Attributes   []KV   `json:"attributes"`
	Events       []struct {
		Name       string `json:"name"`
		Attributes []KV   `json:"attributes"`
	} `json:"events"`
	Links []struct {
		TraceID    string `json:"traceId"`
		SpanID     string `json:"spanId"`
		Attributes []KV   `json:"attributes"`
	} `json:"links"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
	// Service is the service.name of the span's resource.
	Service string `json:"-"`
}

// KV is an attribute.
type KV struct {
	Key   string `json:"key"`
	Value struct {
		String *string          `json:"stringValue"`
		Int    *json.RawMessage `json:"intValue"`
		Bool   *bool            `json:"boolValue"`
	} `json:"value"`
}

// Attr returns attribute key of the span as text, or "".
func (s Span) Attr(key string) string { return attrOf(s.Attributes, key) }

func attrOf(kvs []KV, key string) string {
	for _, kv := range kvs {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value; {
		case v.String != nil:
			return *v.String
		case v.Int != nil:
			return strings.Trim(string(*v.Int), `"`)
		case v.Bool != nil:
			return strconv.FormatBool(*v.Bool)
		}
	}
	return ""
}

type traces struct {
	Result struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []KV `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []Span `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	} `json:"result"`
}

// Spans returns the spans of service that Jaeger stored in the last hour,
// asking again until it has at least want of them or ctx ends. Trace and
// span ids are hex, as OpenTelemetry prints them.
func (s *Server) Spans(ctx context.Context, service string, want int) ([]Span, error) {
	return s.SpansUntil(ctx, service, fmt.Sprintf("at least %d spans", want), func(spans []Span) bool { return len(spans) >= want })
}

// SpansUntil is Spans asking again until done holds of the spans Jaeger
// has (it indexes a batch of spans over time, not at once), or ctx ends;
// what names done in the error.
func (s *Server) SpansUntil(ctx context.Context, service, what string, done func([]Span) bool) ([]Span, error) {
	q := url.Values{}
	q.Set("query.service_name", service)
	q.Set("query.start_time_min", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano))
	q.Set("query.start_time_max", time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano))
	q.Set("query.num_traces", "1000")
	var spans []Span
	var last error
	for {
		spans, last = s.get(ctx, "/api/v3/traces?"+q.Encode())
		if last == nil && done(spans) {
			return spans, nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = fmt.Errorf("%d spans of service %s, want %s", len(spans), service, what)
			}
			return spans, fmt.Errorf("jaeger query: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Trace returns the spans of one trace (hex id).
func (s *Server) Trace(ctx context.Context, traceID string) ([]Span, error) {
	return s.get(ctx, "/api/v3/traces/"+traceID)
}

func (s *Server) get(ctx context.Context, path string) ([]Span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Query+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil // no trace matched yet
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
	}
	var tr traces
	if err := json.Unmarshal(body, &tr); err != nil {
		return nil, fmt.Errorf("GET %s: %w: %.300s", path, err, body)
	}
	var out []Span
	for _, rs := range tr.Result.ResourceSpans {
		svc := attrOf(rs.Resource.Attributes, "service.name")
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				sp.Service = svc
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

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
