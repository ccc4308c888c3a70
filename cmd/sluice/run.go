package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/localtest"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mappingPath := fs.String("mapping", "", "mapping.json: EventSource and CreateEventSourceMapping settings by their AWS names (required)")
	recordsPath := fs.String("records", "", "records.jsonl (one record per line) or a Lambda event file such as sam local generate-event writes (required unless the mapping names an endpoint)")
	handler := fs.String("handler", "", "a compiled Lambda bootstrap; an http(s):// Lambda Invoke API endpoint (SAM, LocalStack, RIE; "+
		"a host ending in amazonaws.com is AWS: requests are SigV4-signed with the default credential chain); "+
		"or aws:NAME, the function NAME (or ARN) on AWS Lambda in the mapping's Region or AWS_REGION (required)")
	functionName := fs.String("function-name", "function", "the function name for an Invoke API endpoint")
	invokeEndpoint := fs.String("invoke-endpoint", "", "with --handler aws:NAME, send the signed Invoke requests to this URL instead of "+
		"https://lambda.REGION.amazonaws.com (a VPC endpoint, a proxy, a test server; default $AWS_ENDPOINT_URL_LAMBDA)")
	tracePath := fs.String("trace", "", "write one JSON line per invocation to this file")
	reportPath := fs.String("report", "", "write the report as JSON to this file")
	effectsPath := fs.String("effects", "", "effects file: passed to the function as SLUICE_EFFECTS_FILE and read back for the invariant checks")
	timeout := fs.Duration("timeout", 3*time.Second, "the function's timeout")
	faults := fs.String("faults", "", "injected faults: error=RATE,crash=RATE,timeout=RATE,duplicate=RATE")
	seed := fs.Uint64("seed", 1, "seed for injected faults")
	maxInv := fs.Int("max-invocations", 0, "stop after this many invocations (default 100,000 + 10 per record)")
	wall := fs.Bool("wall-clock", false, "really wait out visibility timeouts and retry delays instead of skipping them")
	quiet := fs.Bool("quiet", false, "no progress line")
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the function's environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *mappingPath == "" || *handler == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "sluice run: --mapping and --handler are required")
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice run: %v\n", err)
		return 1
	}
	raw, err := os.ReadFile(*mappingPath)
	if err != nil {
		return fail(err)
	}
	mapping, err := localtest.ParseMapping(raw)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", *mappingPath, err))
	}
	if err := mapping.Validate(); err != nil {
		return fail(fmt.Errorf("%s: AWS would reject this mapping:\n  %s", *mappingPath, strings.ReplaceAll(err.Error(), "\n", "\n  ")))
	}
	functionNameSet := false
	fs.Visit(func(f *flag.Flag) { functionNameSet = functionNameSet || f.Name == "function-name" })
	target, isAPI, err := resolveInvokeTarget(*handler, *functionName, functionNameSet, *invokeEndpoint, mapping.Region)
	if err != nil {
		return fail(err)
	}
	opts := localtest.Options{Mapping: mapping, FunctionTimeout: *timeout, Seed: *seed, MaxInvocations: *maxInv, WallClock: *wall}
	if opts.Faults, err = parseFaults(*faults); err != nil {
		return fail(err)
	}
	if mapping.Endpoint == "" {
		if *recordsPath == "" {
			fmt.Fprintln(stderr, "sluice run: --records is required for an emulated source (the mapping names no Endpoint)")
			return 2
		}
		f, err := os.Open(*recordsPath)
		if err != nil {
			return fail(err)
		}
		opts.Records, err = localtest.ReadRecordsFor(f, mapping.EventSource, stderr)
		f.Close()
		if err != nil {
			return fail(fmt.Errorf("%s: %w", *recordsPath, err))
		}
		if err := setQueueDestination(context.Background(), mapping, &opts, nil); err != nil {
			return fail(err)
		}
	} else if err := openEndpoint(context.Background(), mapping, &opts); err != nil {
		return fail(err)
	}
	if c, ok := opts.Kafka.(interface{ Close() }); ok {
		defer c.Close()
	}

	fenv := append(os.Environ(), env...)
	for _, kv := range env {
		if !strings.Contains(kv, "=") {
			return fail(fmt.Errorf("--env %q is not KEY=VALUE", kv))
		}
	}
	if *effectsPath != "" {
		abs, err := filepath.Abs(*effectsPath)
		if err != nil {
			return fail(err)
		}
		if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		fenv = append(fenv, "SLUICE_EFFECTS_FILE="+abs)
		opts.Effects = func() ([]localtest.Effect, error) { return localtest.ReadEffects(abs) }
	}
	if isAPI {
		opts.Invoker, err = openInvokeAPI(context.Background(), target)
	} else {
		opts.Invoker, err = localtest.RuntimeAPI(*handler, fenv)
	}
	if err != nil {
		return fail(err)
	}
	defer opts.Invoker.Close()

	var traceW *bufio.Writer
	if *tracePath != "" {
		f, err := os.Create(*tracePath)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		traceW = bufio.NewWriter(f)
		defer traceW.Flush()
		enc := json.NewEncoder(traceW)
		opts.Trace = func(e localtest.TraceEntry) { enc.Encode(e) }
	}
	total := len(opts.Records)
	prog := newProgress(stderr, total, !*quiet && isTerminal(stderr))
	opts.Progress = prog.update

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := localtest.Run(ctx, opts)
	prog.done()
	if err != nil {
		return fail(err)
	}
	if *reportPath != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*reportPath, append(b, '\n'), 0o644); err != nil {
			return fail(err)
		}
	}
	summary(stdout, rep, time.Since(start))
	if !rep.Held() {
		return 1
	}
	return 0
}

func parseFaults(s string) (localtest.Faults, error) {
	var f localtest.Faults
	if s == "" {
		return f, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		rate, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || rate < 0 || rate > 1 {
			return f, fmt.Errorf("--faults %q: want NAME=RATE with RATE in [0,1]", part)
		}
		switch k {
		case "error":
			f.ErrorRate = rate
		case "crash":
			f.CrashRate = rate
		case "timeout":
			f.TimeoutRate = rate
		case "duplicate":
			f.DuplicateRate = rate
		default:
			return f, fmt.Errorf("--faults: unknown fault %q (error, crash, timeout, duplicate)", k)
		}
	}
	return f, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress draws one line on a terminal, at most ten times a second.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	total int
	last  time.Time
	t     localtest.Totals
}

func newProgress(w io.Writer, total int, on bool) *progress {
	return &progress{w: w, total: total, on: on}
}

func (p *progress) update(t localtest.Totals) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t = t
	if time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw()
}

func (p *progress) draw() {
	t := p.t
	fmt.Fprintf(p.w, "\r\x1b[K%d invocations  %d ok  %d partial  %d errors  %d timeouts  %d bisections",
		t.Invocations, t.Successes, t.PartialFailures, t.FunctionErrors, t.Timeouts, t.Bisections)
}

func (p *progress) done() {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw()
	fmt.Fprintln(p.w)
}

func summary(w io.Writer, rep *localtest.Report, took time.Duration) {
	t := rep.Totals
	m := rep.Mapping
	fmt.Fprintf(w, "%s mapping: %d records, %d invocations in %v\n", m.EventSource, t.Records, t.Invocations, took.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  invocations\tsuccess %d\tpartial %d\tfunction error %d\ttimeout %d\n", t.Successes, t.PartialFailures, t.FunctionErrors, t.Timeouts)
	fmt.Fprintf(tw, "  lambda\tbisections %d\tretries %d\tduplicates %d\t\n", t.Bisections, t.Retries, t.Duplicates)
	fmt.Fprintf(tw, "  records\tprocessed %d\ton-failure %d\tdead-lettered %d\tleft %d\n", t.Processed, t.OnFailure, t.DeadLettered, t.Left)
	tw.Flush()
	for i, of := range rep.OnFailureRecords {
		if i == 3 {
			fmt.Fprintf(w, "  ... and %d more on-failure records (see --report)\n", len(rep.OnFailureRecords)-3)
			break
		}
		b, _ := json.Marshal(of)
		fmt.Fprintf(w, "  on-failure: %s\n", b)
	}
	if n := len(rep.Unprocessed); n > 0 {
		fmt.Fprintf(w, "  not processed:")
		for i, u := range rep.Unprocessed {
			if i == 10 {
				fmt.Fprintf(w, " ... and %d more (see the report)", n-10)
				break
			}
			name := u.ID
			if u.PayloadID != "" {
				name = u.PayloadID
			}
			fmt.Fprintf(w, " %s (%s)", name, u.Fate)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Checkpoints) > 0 {
		fmt.Fprintf(w, "  checkpoints:")
		for _, k := range slices.Sorted(maps.Keys(rep.Checkpoints)) {
			fmt.Fprintf(w, " %s=%s", k, rep.Checkpoints[k])
		}
		fmt.Fprintln(w)
	}
	if rep.Stopped != "" {
		fmt.Fprintf(w, "  stopped early: %s\n", rep.Stopped)
	}
	for _, inv := range rep.Invariants {
		mark := "held"
		if !inv.Held {
			mark = "VIOLATED"
		}
		fmt.Fprintf(w, "  invariant %s: %s\n", inv.Name, mark)
		for _, v := range inv.Violations {
			fmt.Fprintf(w, "    - %s\n", v)
		}
	}
}
