package coldstart

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var sources = []string{"kinesis", "sqs", "kafka", "dynamodb", "sqs-traced"}

// build compiles cmd/name, stripped as a Lambda deployment would be.
func build(tb testing.TB, name string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/%s: %v\n%s", name, err, b)
	}
	return out
}

// runtimeAPI is a Runtime API endpoint that answers /next with an error,
// so the bootstrap exits once it asked; next receives the time of each ask.
func runtimeAPI(tb testing.TB) (addr string, next chan time.Time) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	next = make(chan time.Time, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/invocation/next") {
			next <- time.Now()
		}
		http.Error(w, "cold start probe: no invocation", http.StatusGone)
	})}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), next
}

// start runs bin against the endpoint and returns how long it took to ask
// for its first invocation, and its standard error.
func start(tb testing.TB, bin, addr string, next chan time.Time, env ...string) (time.Duration, []byte) {
	tb.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"AWS_LAMBDA_RUNTIME_API=" + addr, "PATH=/usr/bin:/bin"}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var asked time.Time
	select {
	case asked = <-next:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		tb.Fatalf("%s never asked for an invocation; stderr:\n%s", bin, stderr.Bytes())
	}
	cmd.Wait() // it exits on the error answer
	return asked.Sub(t0), stderr.Bytes()
}

var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock`)

// TestInitCost fails when a minimal bootstrap links a DynamoDB schema
// package it has no use for, or when any package's init takes more than
// 0.5 ms. The init cost of each package is the least of five starts, so a
// busy machine does not make it fail.
func TestInitCost(t *testing.T) {
	schema := regexp.MustCompile(`aws-sdk-go-v2/service/(dynamodb|dynamodbstreams)(/|$)|feature/dynamodb/attributevalue`)
	addr, next := runtimeAPI(t)
	for _, src := range append([]string{"bare"}, sources...) {
		t.Run(src, func(t *testing.T) {
			deps, err := exec.Command("go", "list", "-deps", "./cmd/"+src).CombinedOutput()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, deps)
			}
			for _, pkg := range strings.Fields(string(deps)) {
				if schema.MatchString(pkg) {
					t.Errorf("the %s bootstrap links %s: only a DynamoDB handler may, and no handler needs to", src, pkg)
				}
			}
			bin := build(t, src)
			best := map[string]float64{}
			for range 5 {
				_, stderr := start(t, bin, addr, next, "GODEBUG=inittrace=1")
				sc := bufio.NewScanner(bytes.NewReader(stderr))
				for sc.Scan() {
					m := initLine.FindStringSubmatch(sc.Text())
					if m == nil {
						continue
					}
					ms, _ := strconv.ParseFloat(m[2], 64)
					if old, ok := best[m[1]]; !ok || ms < old {
						best[m[1]] = ms
					}
				}
			}
			if len(best) == 0 {
				t.Fatal("no inittrace lines: is GODEBUG=inittrace=1 honoured?")
			}
			for pkg, ms := range best {
				if ms > 0.5 {
					t.Errorf("%s: init of %s takes %.2f ms (at best of 5 starts), over the 0.5 ms budget", src, pkg, ms)
				}
			}
		})
	}
}

// BenchmarkColdStart times process start -> first /next request of each
// source's minimal bootstrap and of a bare aws-lambda-go one, interleaved,
// and reports the medians and the stripped binary sizes.
func BenchmarkColdStart(b *testing.B) {
	addr, next := runtimeAPI(b)
	bare := build(b, "bare")
	for _, src := range sources {
		b.Run(src, func(b *testing.B) {
			bin := build(b, src)
			var ds, db []float64
			for b.Loop() {
				d, _ := start(b, bin, addr, next)
				ds = append(ds, float64(d.Microseconds())/1000)
				d, _ = start(b, bare, addr, next)
				db = append(db, float64(d.Microseconds())/1000)
			}
			ms, mb := median(ds), median(db)
			b.ReportMetric(ms, "sluice-ms")
			b.ReportMetric(mb, "bare-ms")
			b.ReportMetric(ms-mb, "delta-ms")
			b.ReportMetric(float64(size(b, bin)-size(b, bare))/(1<<20), "extra-MB")
			b.ReportMetric(float64(size(b, bin))/(1<<20), "sluice-MB")
			b.ReportMetric(float64(size(b, bare))/(1<<20), "bare-MB")
		})
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func size(tb testing.TB, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}
