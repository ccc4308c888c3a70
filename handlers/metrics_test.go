package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/engine"
)

// emfUnits are the units the EMF specification allows (CloudWatch's
// StandardUnit values).
var emfUnits = []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
	"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second",
	"Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second",
	"Gigabits/Second", "Terabits/Second", "Count/Second", "None"}

// checkEMF checks one log line against the structure the CloudWatch
// Embedded Metric Format specification requires, and returns the root
// object.
func checkEMF(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, line)
	}
	meta, ok := root["_aws"].(map[string]any)
	if !ok {
		t.Fatalf("no _aws metadata object: %s", line)
	}
	for k := range meta {
		if k != "Timestamp" && k != "CloudWatchMetrics" {
			t.Errorf("_aws has a member the specification does not define: %q", k)
		}
	}
	ts, ok := meta["Timestamp"].(json.Number)
	if _, err := ts.Int64(); !ok || err != nil {
		t.Errorf("_aws.Timestamp %v: want an integer number of epoch milliseconds", meta["Timestamp"])
	}
	dirs, ok := meta["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		t.Fatalf("_aws.CloudWatchMetrics: want a non-empty array, got %v", meta["CloudWatchMetrics"])
	}
	for _, d := range dirs {
		dir, ok := d.(map[string]any)
		if !ok {
			t.Fatalf("a MetricDirective is not an object: %v", d)
		}
		for k := range dir {
			if k != "Namespace" && k != "Dimensions" && k != "Metrics" {
				t.Errorf("MetricDirective member %q is not in the specification", k)
			}
		}
		if ns, ok := dir["Namespace"].(string); !ok || ns == "" || len(ns) > 255 {
			t.Errorf("Namespace %v: want a string of 1-255 characters", dir["Namespace"])
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			t.Fatalf("Dimensions: want an array of DimensionSets, got %v", dir["Dimensions"])
		}
		for _, s := range sets {
			set, ok := s.([]any)
			if !ok || len(set) > 30 {
				t.Fatalf("DimensionSet %v: want an array of at most 30 names", s)
			}
			for _, n := range set {
				name, ok := n.(string)
				if !ok {
					t.Fatalf("dimension name %v is not a string", n)
				}
				if v, ok := root[name].(string); !ok || v == "" {
					t.Errorf("dimension %q: the root must have a non-empty string member of that name, has %v", name, root[name])
				}
			}
		}
		metrics, ok := dir["Metrics"].([]any)
		if !ok || len(metrics) == 0 || len(metrics) > 100 {
			t.Fatalf("Metrics: want 1-100 MetricDefinitions, got %v", dir["Metrics"])
		}
		seen := map[string]bool{}
		for _, m := range metrics {
			def, ok := m.(map[string]any)
			if !ok {
				t.Fatalf("MetricDefinition %v is not an object", m)
			}
			for k := range def {
				if k != "Name" && k != "Unit" && k != "StorageResolution" {
					t.Errorf("MetricDefinition member %q is not in the specification", k)
				}
			}
			name, ok := def["Name"].(string)
			if !ok || name == "" || len(name) > 255 || seen[name] {
				t.Fatalf("metric Name %v: want a unique string of 1-255 characters", def["Name"])
			}
			seen[name] = true
			if u, ok := def["Unit"]; ok && !slices.Contains(emfUnits, fmt.Sprint(u)) {
				t.Errorf("metric %s: unit %v is not a CloudWatch unit", name, u)
			}
			if _, ok := root[name].(json.Number); !ok {
				t.Errorf("metric %s: the root must have a numeric member of that name, has %v", name, root[name])
			}
		}
	}
	return root
}

func num(t *testing.T, root map[string]any, name string) float64 {
	t.Helper()
	n, ok := root[name].(json.Number)
	if !ok {
		t.Fatalf("%s: %v", name, root[name])
	}
	f, _ := n.Float64()
	return f
}

func kvEnv(kv ...string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

// lines is a concurrency-safe writer of lines.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) all() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := bytes.SplitAfter(l.buf.Bytes(), []byte("\n"))
	return ls[:len(ls)-1] // after the last newline
}

func TestMetricsLineIsEMF(t *testing.T) {
	arrival := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := arrival.Add(5 * time.Second)
	b := &sevents.KinesisBuilder{ShardID: "shardId-000000000007", Clock: func() time.Time { return arrival }}
	for i, a := range []string{"ok", "transient", "fail", "ok"} {
		b.Add("pk", payload(fmt.Sprint(i), a))
	}
	ev, _ := json.Marshal(b.Event())
	out := &lines{}
	calls := 0
	h, err := NewKinesis(func(_ context.Context, r KinesisRecord[msg]) error {
		if r.Value.Action == "transient" {
			if calls++; calls == 1 {
				return batch.Transient(fmt.Errorf("flaky"))
			}
			return nil
		}
		return act(r.Value.Action)
	}, WithLogger(slog.New(slog.DiscardHandler)), withClock(func() time.Time { return now }),
		withLookupEnv(kvEnv(EnvFunctionName, "orders-consumer")),
		WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Microsecond)}),
		WithMetrics(Metrics{Namespace: "Shop/Orders", Dimensions: []Dimension{DimensionFunction, DimensionSource, DimensionResource},
			Fixed: map[string]string{"Environment": "test"}, Output: out}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Invoke(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	ls := out.all()
	if len(ls) != 1 {
		t.Fatalf("%d lines for one batch: %q", len(ls), ls)
	}
	root := checkEMF(t, ls[0])
	dir := root["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if ts, _ := root["_aws"].(map[string]any)["Timestamp"].(json.Number).Int64(); ts != now.UnixMilli() {
		t.Errorf("Timestamp %d, want %d", ts, now.UnixMilli())
	}
	if dir["Namespace"] != "Shop/Orders" || fmt.Sprint(dir["Dimensions"]) != "[[FunctionName Source ShardId Environment]]" {
		t.Errorf("directive %v", dir)
	}
	for k, v := range map[string]string{"FunctionName": "orders-consumer", "Source": "kinesis", "ShardId": "shardId-000000000007", "Environment": "test"} {
		if root[k] != v {
			t.Errorf("%s = %v, want %q", k, root[k], v)
		}
	}
	for k, v := range map[string]float64{MetricRecordsReceived: 4, MetricRecordsSucceeded: 2, MetricRecordsFailed: 1,
		MetricRecordsNotAttempted: 1, MetricInProcessRetries: 1, MetricRecordsDuplicate: 0, MetricBatchDuration: 0, MetricOldestRecordAge: 5000} {
		if got := num(t, root, k); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
}

func TestMetricsDuplicatesAndQueue(t *testing.T) {
	out := &lines{}
	h, err := NewSQS(func(context.Context, SQSRecord[msg]) error { return nil },
		opts(WithIdempotency(idempotency.NewMemoryStore()), WithMetrics(Metrics{Namespace: "Shop", Dimensions: []Dimension{DimensionResource}, Output: out}))...)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"}, [2]string{"", "ok"})
	for range 2 {
		if _, err := h.Invoke(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	ls := out.all()
	if len(ls) != 2 {
		t.Fatalf("%d lines", len(ls))
	}
	first, second := checkEMF(t, ls[0]), checkEMF(t, ls[1])
	if num(t, first, MetricRecordsDuplicate) != 0 || num(t, second, MetricRecordsDuplicate) != 3 || num(t, second, MetricRecordsSucceeded) != 3 {
		t.Errorf("duplicates: first %s second %s", ls[0], ls[1])
	}
	if q, _ := second["QueueName"].(string); q == "" || strings.Contains(q, ":") {
		t.Errorf("QueueName %v", second["QueueName"])
	}
	if _, ok := second["Source"]; ok {
		t.Errorf("Source is not among the chosen dimensions: %s", ls[1])
	}
}

func TestMetricsSwitch(t *testing.T) {
	fn := func(context.Context, KinesisRecord[msg]) error { return nil }
	build := func(env func(string) (string, bool), o ...Option) (*KinesisHandler[msg], error) {
		return NewKinesis(fn, append([]Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(env)}, o...)...)
	}
	off, err := build(noEnv)
	if err != nil || off.cfg.metrics != nil {
		t.Fatalf("metrics must be off without WithMetrics and %s: %v %v", EnvMetricsNamespace, off.cfg.metrics, err)
	}
	onByEnv, err := build(kvEnv(EnvMetricsNamespace, "Team/Orders"))
	if err != nil || onByEnv.cfg.metrics == nil || !strings.Contains(onByEnv.cfg.metrics.format.Head(), `"Team/Orders"`) || onByEnv.cfg.metrics.out != os.Stdout {
		t.Fatalf("%s must turn metrics on, to standard output: %+v %v", EnvMetricsNamespace, onByEnv.cfg.metrics, err)
	}
	out := &lines{}
	envWins, err := build(kvEnv(EnvMetricsNamespace, "FromEnv"), WithMetrics(Metrics{Namespace: "FromCode", Output: out}))
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := kinesisTestEvent("ok")
	envWins.Invoke(context.Background(), ev)
	if root := checkEMF(t, out.all()[0]); root["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Namespace"] != "FromEnv" {
		t.Errorf("the environment must name the namespace: %s", out.all()[0])
	}
	for _, tc := range []struct {
		env  func(string) (string, bool)
		m    Metrics
		want string
	}{
		{noEnv, Metrics{}, "must be 1 to 255"},
		{noEnv, Metrics{Namespace: "AWS/Lambda"}, "reserved"},
		{kvEnv(EnvMetricsNamespace, "bad$name"), Metrics{}, EnvMetricsNamespace},
		{noEnv, Metrics{Namespace: "x", Dimensions: []Dimension{"Region"}}, "unknown dimension"},
		{noEnv, Metrics{Namespace: "x", Fixed: map[string]string{"RecordsFailed": "1"}}, "clashes"},
	} {
		if _, err := build(tc.env, WithMetrics(tc.m)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.m, err, tc.want)
		}
	}
}

// BenchmarkMetrics compares a batch with metrics off and on: the cost of the
// EMF line, written to /dev/null as a file, as Lambda's stdout is one.
func BenchmarkMetrics(b *testing.B) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	for _, n := range []int{10000, 100} {
		raw := kinesisFixture(b, n)
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("records=%d/metrics=off", n)
			o := []Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(kvEnv(EnvFunctionName, "bench"))}
			if on {
				name = fmt.Sprintf("records=%d/metrics=on", n)
				o = append(o, WithMetrics(Metrics{Namespace: "Bench", Dimensions: []Dimension{DimensionFunction, DimensionSource, DimensionResource}, Output: devnull}))
			}
			b.Run(name, func(b *testing.B) {
				h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[benchOrder]) error {
					benchSink += r.Value.Amount
					return nil
				}, o...)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.Invoke(context.Background(), raw); err != nil {
						b.Fatal(err)
					}
				}
				reportPerRecord(b, n)
			})
		}
	}
}

// BenchmarkMetricsPaired runs batches with metrics off and on alternately,
// so that the load of a shared machine falls on both alike, and reports the
// extra time metrics cost as a percentage ("overhead-%"): the figure the 2%
// budget is about.
func BenchmarkMetricsPaired(b *testing.B) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	for _, n := range []int{10000, 100} {
		raw := kinesisFixture(b, n)
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			fn := func(ctx context.Context, r KinesisRecord[benchOrder]) error {
				benchSink += r.Value.Amount
				return nil
			}
			base := []Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(kvEnv(EnvFunctionName, "bench"))}
			off, err1 := NewKinesis(fn, base...)
			on, err2 := NewKinesis(fn, append(base, WithMetrics(Metrics{Namespace: "Bench",
				Dimensions: []Dimension{DimensionFunction, DimensionSource, DimensionResource}, Output: devnull}))...)
			if err1 != nil || err2 != nil {
				b.Fatal(err1, err2)
			}
			var tOff, tOn time.Duration
			ctx := context.Background()
			i := 0
			for b.Loop() {
				first, second, t1, t2 := off, on, &tOff, &tOn
				if i%2 == 1 {
					first, second, t1, t2 = on, off, &tOn, &tOff
				}
				i++
				s := time.Now()
				first.Invoke(ctx, raw)
				m := time.Now()
				second.Invoke(ctx, raw)
				*t1 += m.Sub(s)
				*t2 += time.Since(m)
			}
			b.ReportMetric(100*(float64(tOn)-float64(tOff))/float64(tOff), "overhead-%")
			b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N)/float64(n), "ns/record-on")
			b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N)/float64(n), "ns/record-off")
		})
	}
}

// BenchmarkMetricsEmit is the cost of one batch's EMF line alone.
func BenchmarkMetricsEmit(b *testing.B) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	h, err := NewKinesis(func(context.Context, KinesisRecord[msg]) error { return nil }, WithLogger(slog.New(slog.DiscardHandler)),
		withLookupEnv(kvEnv(EnvFunctionName, "bench")), WithMetrics(Metrics{Namespace: "Bench",
			Dimensions: []Dimension{DimensionFunction, DimensionSource, DimensionResource}, Output: devnull}))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{10000, 100} {
		items := make([]engine.Item, n)
		now := time.Now()
		for i := range items {
			items[i].Arrival = now.Add(-time.Duration(n-i) * time.Millisecond)
		}
		res := &engine.Result{Succeeded: n, Duration: 3 * time.Millisecond, Oldest: items[0].Arrival}
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.cfg.metrics.emit("kinesis", "shardId-000000000003", items, res)
			}
		})
	}
}
