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
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
	"github.com/sluicehq/sluice/localtest/source"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("sluice run", "", stderr)
	mappingPath := fs.String("mapping", "", "mapping.json: EventSource and CreateEventSourceMapping settings by their AWS names; "+
		"with --template, the mapping in the template: a SAM function's event as FUNCTION.EVENT, the function when it has one, "+
		"or the mapping's logical ID (required)")
	tf := addTemplateFlags(fs, "run the mapping --mapping names with the settings, function timeout, memory and environment that deploy; "+
		"without --handler, the function runs from sam build's .aws-sam/build/FUNCTION/bootstrap")
	templatePath := tf.path
	endpoint := fs.String("endpoint", "", "with --template, read the stream, table or queue the mapping names from this server instead of "+
		"emulating it: an AWS API endpoint (kinesalite, DynamoDB Local, fauxqs, LocalStack; aws for AWS itself) or kafka://host:port; "+
		"the source is found by the name the template gives it")
	recordsPath := fs.String("records", "", "records.jsonl (one record per line) or a Lambda event file such as sam local generate-event writes (required unless the mapping names an endpoint)")
	handler := fs.String("handler", "", "a compiled Lambda bootstrap; an http(s):// Lambda Invoke API endpoint (SAM, LocalStack, RIE; "+
		"a host ending in amazonaws.com is AWS: requests are SigV4-signed with the default credential chain); "+
		"or aws:NAME, the function NAME (or ARN) on AWS Lambda in the mapping's Region or AWS_REGION (required)")
	functionName := fs.String("function-name", "function", "the function's name: the function an Invoke API endpoint calls; for a bootstrap, its "+
		"AWS_LAMBDA_FUNCTION_NAME; on-failure records name it (default: the mapping's FunctionName, else function)")
	invokeEndpoint := fs.String("invoke-endpoint", "", "with --handler aws:NAME, send the signed Invoke requests to this URL instead of "+
		"https://lambda.REGION.amazonaws.com (a VPC endpoint, a proxy, a test server; default $AWS_ENDPOINT_URL_LAMBDA)")
	tracePath := fs.String("trace", "", "write one JSON line per invocation to this file")
	reportPath := fs.String("report", "", "write the report as JSON to this file")
	htmlPath := fs.String("html", "", "write the run as one self-contained HTML page to this file: invariants, counts, a timeline per lane, "+
		"every record's path")
	effectsPath := fs.String("effects", "", "effects file: passed to the function as SLUICE_EFFECTS_FILE and read back for the invariant checks; "+
		`one {"record": <record id>, ...} line per processed record`)
	effectsKey := fs.String("effects-key", "", `match effects to records by this top-level payload field (each effects line carries the same field) `+
		`instead of by "record", the record's id in its source`)
	allowKillRepeats := fs.Bool("allow-kill-repeats", false, "with --exactly-once and crash or timeout faults: accept a record's repeated "+
		"effect when the invocation that first made it was killed before the record's completion was stored (the window no idempotency "+
		"store closes); for a function whose effect's destination drops repeats by the record's idempotency key")
	exactlyOnce := fs.Bool("exactly-once", false, "also check that no record took effect twice (idempotency); "+
		"on by itself when the function's environment sets SLUICE_IDEMPOTENCY_TABLE; needs --effects")
	timeout := fs.Duration("timeout", 3*time.Second, "the function's timeout")
	initTimeout := fs.Duration("init-timeout", invoke.DefaultInitTimeout, "how long a bootstrap may take to start (Lambda's init limit)")
	faults := fs.String("faults", "", "injected faults: error=RATE,crash=RATE,timeout=RATE,duplicate=RATE; "+
		"crash kills the bootstrap's process (SIGKILL) inside the invocation, timeout freezes it and kills it at --timeout (both need a bootstrap --handler)")
	seed := fs.Uint64("seed", 1, "seed for injected faults")
	maxInv := fs.Int("max-invocations", 0, "stop after this many invocations (default 100,000 + 10 per record)")
	wall := fs.Bool("wall-clock", false, "really wait out visibility timeouts and retry delays instead of skipping them")
	logs := fs.Bool("logs", false, "stream the bootstrap's stdout and stderr to stderr, each line prefixed by its invocation ([#N request-id] or [init])")
	quiet := fs.Bool("quiet", false, "no progress line")
	allowFlag := fs.String("allow", "", "FATE[,FATE...]: fates every record may end with besides its expectation (processed unless its records line "+
		`says "expect"): `+strings.Join(localtest.Fates(), ", "))
	var expectFlags multiFlag
	fs.Var(&expectFlags, "expect", `FATE, N=FATE, N:S=FATE or id:ID=FATE (repeatable): the fate every record of --records without its own "expect" must end with, `+
		"that of the record the report names line N (record N of an event file), of user record S (from 0) of the KPL aggregate on line N, "+
		"or that of the record whose id in its source is ID (a sequence number, <sequence number>:<S> for a KPL user record, SQS message id or "+
		"Kafka <topic>-<partition>@<offset>, as the report's fates name records; from a real source too)")
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the function's environment (repeatable); wins over SLUICE_REPORT_BATCH_ITEM_FAILURES, "+
		"which sluice sets from the mapping's FunctionResponseTypes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usage := usageErrors("sluice run", stderr)
	if *mappingPath == "" || (*handler == "" && *templatePath == "") {
		return usage("--mapping and --handler are required")
	}
	if *endpoint != "" && *templatePath == "" {
		return usage("--endpoint goes with --template: a mapping file names its own Endpoint")
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usage("--env %q is not KEY=VALUE", kv)
		}
	}
	fl, err := parseFaults(*faults)
	if err != nil {
		return usage("%v", err)
	}
	var allow []string
	if *allowFlag != "" {
		if allow, err = localtest.ParseFates(*allowFlag); err != nil {
			return usage("--allow: %v", err)
		}
	}
	expects, err := parseExpects(expectFlags)
	if err != nil {
		return usage("%v", err)
	}
	switch {
	case *timeout <= 0:
		return usage("--timeout %v: must be positive", *timeout)
	case *initTimeout <= 0:
		return usage("--init-timeout %v: must be positive", *initTimeout)
	case *maxInv < 0:
		return usage("--max-invocations %d: must not be negative", *maxInv)
	case *effectsKey != "" && *effectsPath == "":
		return usage("--effects-key goes with --effects")
	case *exactlyOnce && *effectsPath == "":
		return usage("--exactly-once goes with --effects: the check counts each record's effects")
	case hasLineExpects(expects) && *recordsPath == "":
		return usage("--expect FATE and N=FATE go with --records: a record from a real source has no line; name it by its id in its source: --expect id:ID=FATE")
	}
	functionNameSet, timeoutSet, handlerSet := false, false, false
	fs.Visit(func(f *flag.Flag) {
		functionNameSet = functionNameSet || f.Name == "function-name"
		timeoutSet = timeoutSet || f.Name == "timeout"
		handlerSet = handlerSet || f.Name == "handler"
	})

	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice run: %v\n", err)
		return 1
	}
	var mapping *localtest.Mapping
	var templateEnv []string
	if *templatePath != "" {
		// A template that cannot be read as it deploys is a usage error.
		tm, err := mappingFromTemplate(tf, *mappingPath, env, stderr)
		if err != nil {
			return usage("%v", err)
		}
		mapping = tm.Mapping
		if !timeoutSet && tm.FunctionTimeout > 0 {
			*timeout = tm.FunctionTimeout
		}
		templateEnv = functionEnv(tm.Environment, tm.FunctionMemory)
		*mappingPath = *templatePath + " (" + tm.LogicalID + ")"
		if *handler == "" {
			if *handler, err = builtBootstrap(*templatePath, tm.Function); err != nil {
				return usage("%v", err)
			}
		}
		if !strings.Contains(*handler, "://") && !strings.HasPrefix(*handler, "aws:") {
			if err := checkArchitecture(*handler, tm.Architectures, !handlerSet, stderr, "sluice run"); err != nil {
				return usage("%v", err)
			}
		}
		if *endpoint != "" {
			if err := templateEndpoint(context.Background(), mapping, *endpoint); err != nil {
				return fail(err)
			}
		}
	} else {
		raw, err := os.ReadFile(*mappingPath)
		if err != nil {
			return fail(err)
		}
		mapping, err = localtest.ParseMapping(raw)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", *mappingPath, err))
		}
	}
	if err := mapping.Validate(); err != nil {
		return fail(fmt.Errorf("%s: AWS would reject this mapping:\n  %s", *mappingPath, strings.ReplaceAll(err.Error(), "\n", "\n  ")))
	}
	target, isAPI, err := resolveInvokeTarget(*handler, *functionName, functionNameSet, *invokeEndpoint, mapping.Region)
	if err != nil {
		return usage("%v", err)
	}
	// One function per run: the one the flags name is the mapping's, which
	// on-failure records name and the bootstrap is told.
	named := ""
	switch {
	case strings.HasPrefix(*handler, "aws:"):
		named = target.function
	case functionNameSet:
		named = *functionName
	}
	if named != "" {
		if mapping.FunctionName != "" && functionNameOf(mapping.FunctionName) != functionNameOf(named) {
			return usage("%s names the function %s but the flags name %s: name one function", *mappingPath, mapping.FunctionName, named)
		}
		if mapping.FunctionName == "" || !strings.HasPrefix(mapping.FunctionName, "arn:") {
			mapping.FunctionName = named
		}
	}
	opts := localtest.Options{Mapping: mapping, FunctionTimeout: *timeout, Seed: *seed, MaxInvocations: *maxInv, WallClock: *wall,
		Faults: fl, EffectsKey: *effectsKey, Allow: allow, ExpectByID: expectsByID(expects)}
	if mapping.Endpoint == "" {
		if *recordsPath == "" {
			return usage("--records is required for an emulated source (the mapping names no Endpoint)")
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
		if len(opts.Records) == 0 {
			return usage("--records %s holds no record: a run over nothing tests nothing", *recordsPath)
		}
		if err := applyExpects(opts.Records, expects); err != nil {
			return usage("%s: %v", *recordsPath, err)
		}
		if err := setQueueDestination(context.Background(), mapping, &opts, nil); err != nil {
			return fail(err)
		}
		closeDest, err := setKafkaDestination(mapping, &opts)
		if err != nil {
			return fail(err)
		}
		if closeDest != nil {
			defer closeDest()
		}
	} else if err := openEndpoint(context.Background(), mapping, &opts); err != nil {
		return fail(err)
	}
	if c, ok := opts.Kafka.(interface{ Close() }); ok {
		defer c.Close()
	}

	// The function's environment: sluice's own, then what the mapping says
	// (as Sluice's CDK constructs set it: the report switch, a stream's
	// parallelization factor), then the template's, then --env,
	// the last one winning.
	fenv := append(os.Environ(), handlers.EnvReportBatchItemFailures+"="+strconv.FormatBool(mapping.ReportsBatchItemFailures()))
	if mapping.EventSource == events.SourceKinesis || mapping.EventSource == events.SourceDynamoDB {
		// The mapping's factor, declared as the constructs declare it: a
		// Kinesis handler keeps its idempotency checkpoints per shard
		// only when told 1.
		pf := 1
		if mapping.ParallelizationFactor != nil {
			pf = *mapping.ParallelizationFactor
		}
		fenv = append(fenv, handlers.EnvParallelizationFactor+"="+strconv.Itoa(pf))
	}
	fenv = append(fenv, templateEnv...)
	if mapping.FunctionName != "" {
		fenv = append(fenv, "AWS_LAMBDA_FUNCTION_NAME="+functionNameOf(mapping.FunctionName))
	}
	fenv = append(fenv, env...)
	if *htmlPath != "" {
		// Created here so a path that cannot be written is a usage error
		// before anything runs; the run writes it at its end.
		hf, err := os.Create(*htmlPath)
		if err != nil {
			return usage("--html %s: the page cannot be created (%v): create its directory, or name another file", *htmlPath, err)
		}
		hf.Close()
		opts.HTML = *htmlPath
	}
	if *effectsPath != "" {
		abs, err := filepath.Abs(*effectsPath)
		if err != nil {
			return fail(err)
		}
		// Created empty before the run: a function that cannot write it
		// would fail every record, and a stale one would pass for effects.
		ef, err := os.Create(abs)
		if err != nil {
			return usage("--effects %s: the effects file cannot be created (%v): create its directory, or name another file", *effectsPath, err)
		}
		ef.Close()
		fenv = append(fenv, "SLUICE_EFFECTS_FILE="+abs)
		opts.Effects = func() ([]localtest.Effect, error) { return localtest.ReadEffects(abs, *effectsKey) }
		// A function with idempotency on promises each effect once: check it.
		opts.ExactlyOnce = *exactlyOnce || envValue(fenv, "SLUICE_IDEMPOTENCY_TABLE") != ""
		opts.AllowKillRepeats = *allowKillRepeats
	}
	if isAPI && (fl.CrashRate > 0 || fl.TimeoutRate > 0) {
		return usage("--faults crash and timeout kill the function's process inside an invocation: they need a bootstrap --handler "+
			"(the process behind %s is not sluice's to kill)", *handler)
	}
	if isAPI {
		opts.Invoker, err = openInvokeAPI(context.Background(), target)
	} else {
		// The function's own dead letters, as its environment names them:
		// what it quarantined is read back after the run.
		if opts.Quarantine, err = quarantineOf(context.Background(), fenv, *handler); err != nil {
			return fail(err)
		}
		// What its handlers answer without running it (a duplicate, an
		// s3:TestEvent), in a file of the run's own, and its idempotency
		// table, to check those claims.
		skips, cerr := os.CreateTemp("", "sluice-skips-*.jsonl")
		if cerr != nil {
			return fail(cerr)
		}
		skips.Close()
		defer os.Remove(skips.Name())
		fenv = append(fenv, handlers.EnvSkipsFile+"="+skips.Name())
		opts.Skips = func() ([]localtest.Skip, error) { return localtest.ReadSkips(skips.Name()) }
		if table := envValue(fenv, "SLUICE_IDEMPOTENCY_TABLE"); table != "" {
			cfg, err := functionAWSConfig(context.Background(), fenv, "DYNAMODB")
			if err != nil {
				return fail(fmt.Errorf("reading the function's idempotency table (SLUICE_IDEMPOTENCY_TABLE=%s): %w", table, err))
			}
			opts.Idempotency = source.IdempotencyTable(cfg, table)
		}
		ropts := []invoke.RuntimeAPIOption{invoke.RuntimeAPIInitTimeout(*initTimeout)}
		if *logs {
			ropts = append(ropts, invoke.RuntimeAPILogs(stderr))
		}
		opts.Invoker, err = invoke.RuntimeAPI(*handler, fenv, ropts...)
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
	// The line is drawn at the end even if no invocation was made.
	prog := &lineProgress{w: stderr, on: !*quiet && !*logs && isTerminal(stderr), text: runProgress(localtest.Totals{})}
	opts.Progress = func(t localtest.Totals) { prog.draw(runProgress(t)) }

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
	summary(stdout, rep, time.Since(start), opts.Quarantine != nil, fl.CrashRate > 0 || fl.TimeoutRate > 0, opts.HTML)
	if !rep.Held() {
		return 1
	}
	return 0
}

// mappingFromTemplate reads the mapping name designates from the template
// --template names. A variable of the function's environment that
// CloudFormation resolves only at deploy must be given with --env.
func mappingFromTemplate(tf *templateFlags, name string, env []string, stderr io.Writer) (*localtest.TemplateMapping, error) {
	path := *tf.path
	raw, opts, err := tf.read()
	if err != nil {
		return nil, err
	}
	tm, err := localtest.ReadTemplateMapping(raw, name, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if missing := missingVariables(tm.Unresolved, env); len(missing) > 0 {
		return nil, fmt.Errorf("%s: the function %s reads variables known only once deployed:\n  %s",
			path, tm.FunctionLogicalID, strings.Join(missing, "\n  "))
	}
	for _, n := range tm.Notes {
		fmt.Fprintf(stderr, "sluice run: %s: %s\n", path, n)
	}
	return tm, nil
}

// noKillLanded is the summary's line for a run whose crash or timeout
// faults, drawn at random, killed nothing: its checks held without a kill
// to test them, which the reader must not take for a run that survived one.
func noKillLanded(invocations int) string {
	return fmt.Sprintf("  process killed 0 times: crash or timeout faults were asked for, but none landed in %d invocations, so no check here was tested against a kill (another --seed, or more records, gives them more chances)", invocations)
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

// runProgress is sluice run's progress line.
func runProgress(t localtest.Totals) string {
	return fmt.Sprintf("%d invocations  %d ok  %d partial  %d errors  %d timeouts  %d bisections",
		t.Invocations, t.Successes, t.PartialFailures, t.FunctionErrors, t.Timeouts, t.Bisections)
}

// summary prints what the run did and its verdict; quarantine says the
// function's dead letters were read (so "quarantined N" is known).
func summary(w io.Writer, rep *localtest.Report, took time.Duration, quarantine, killsAsked bool, html string) {
	t := rep.Totals
	m := rep.Mapping
	sqs := m.EventSource == events.SourceSQS || m.EventSource == events.SourceSQSFIFO
	users := ""
	if t.Aggregates > 0 {
		agg := "aggregates"
		if t.Aggregates == 1 {
			agg = "aggregate"
		}
		users = fmt.Sprintf(" (%d of them user records of %d KPL %s)", t.UserRecords, t.Aggregates, agg)
	}
	fmt.Fprintf(w, "%s mapping: %d records%s, %d invocations in %v\n", m.EventSource, t.Records, users, t.Invocations, took.Round(time.Millisecond))
	if f := rep.Failure; f != nil {
		fmt.Fprintf(w, "  RUN FAILED (%s): %s\n", f.Kind, f.Reason)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  invocations\tsuccess %d\tpartial %d\tfunction error %d\ttimeout %d\tinit failure %d\n",
		t.Successes, t.PartialFailures, t.FunctionErrors, t.Timeouts, t.InitFailures)
	if sqs {
		fmt.Fprintf(tw, "  lambda\tredeliveries %d\tduplicates %d\t\t\t\n", t.Redeliveries, t.Duplicates)
	} else {
		fmt.Fprintf(tw, "  lambda\tbisections %d\tretries %d\tduplicates %d\t\t\n", t.Bisections, t.Retries, t.Duplicates)
	}
	fmt.Fprintf(tw, "  records\tprocessed %d\t", t.Processed)
	if t.Skipped > 0 {
		fmt.Fprintf(tw, "skipped %d\t", t.Skipped)
	}
	if quarantine || t.Quarantined > 0 {
		fmt.Fprintf(tw, "quarantined %d\t", t.Quarantined)
	}
	fmt.Fprintf(tw, "on-failure %d\tdead-lettered %d\tleft %d\t", t.OnFailure, t.DeadLettered, t.Left)
	if t.Filtered > 0 {
		fmt.Fprintf(tw, "filtered %d\t", t.Filtered)
	}
	fmt.Fprintln(tw)
	tw.Flush()
	if len(rep.Kills) == 0 && killsAsked {
		fmt.Fprintln(w, noKillLanded(rep.Totals.Invocations))
	}
	if len(rep.Kills) > 0 {
		points := map[invocation.KillPoint]int{}
		for _, k := range rep.Kills {
			if !k.Timeout {
				points[k.Point]++
			}
		}
		fmt.Fprintf(w, "  process killed %d times: %d crashes (%d at the hand-over, %d mid-batch, %d before answering), %d timeouts (frozen, killed at the deadline); each time a new process started (a new init)\n",
			len(rep.Kills), t.Crashes, points[invocation.KillAtHandOver], points[invocation.KillMidBatch], points[invocation.KillBeforeAnswer], len(rep.Kills)-t.Crashes)
		for i, k := range rep.Kills {
			if i == 3 {
				fmt.Fprintf(w, "    ... and %d more (see --report kills)\n", len(rep.Kills)-3)
				break
			}
			fmt.Fprintf(w, "    #%d %s\n", k.N, k.What)
		}
	}
	if t.IgnoredResponses > 0 {
		why := "the mapping's FunctionResponseTypes lacks ReportBatchItemFailures"
		if m.ReportsBatchItemFailures() {
			why = "Kafka in on-demand mode does not read partial responses"
		}
		fmt.Fprintf(w, "  WARNING: Lambda ignored %d partial batch responses (%s): %d records the function reported as failed were acknowledged as processed\n",
			t.IgnoredResponses, why, t.IgnoredRecords)
	}
	if n := len(rep.Unprocessed); n > 0 {
		fmt.Fprintf(w, "  not processed:")
		for i, u := range rep.Unprocessed {
			if i == 10 {
				fmt.Fprintf(w, " ... and %d more (see the report)", n-10)
				break
			}
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, " %s: %s", u.Name(), u.Fate)
		}
		fmt.Fprintln(w)
	}
	for i, s := range rep.Skipped {
		if i == 5 {
			fmt.Fprintf(w, "    ... and %d more skipped (see --report skipped)\n", len(rep.Skipped)-5)
			break
		}
		if i == 0 {
			fmt.Fprintf(w, "  skipped (answered by the handler without running the function):\n")
		}
		how := s.Checked
		if s.Problem != "" {
			how = "NOT SHOWN: " + s.Problem
		}
		fmt.Fprintf(w, "    %s: %s; %s\n", s.Name(), s.Reason, how)
	}
	for i, of := range rep.OnFailureRecords {
		if i == 3 {
			fmt.Fprintf(w, "  ... and %d more on-failure records (see --report)\n", len(rep.OnFailureRecords)-3)
			break
		}
		b, _ := json.Marshal(of)
		fmt.Fprintf(w, "  on-failure: %s\n", b)
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
	if f := rep.LastFailedInvocation; f != nil {
		fmt.Fprintf(w, "  last failed invocation #%d (%s, %s): %s: %s\n", f.N, f.RequestID, f.Result, f.ErrorType, oneLine(f.ErrorMessage))
		if len(f.Logs) > 0 {
			fmt.Fprintf(w, "    its last %d output lines:\n", len(f.Logs))
			for _, l := range f.Logs {
				if len(l) > 300 {
					l = l[:300] + "... (see --report)"
				}
				fmt.Fprintf(w, "    | %s\n", l)
			}
		}
	}
	for _, inv := range rep.Invariants {
		switch {
		case inv.Status == localtest.StatusHeld && inv.Reason != "":
			fmt.Fprintf(w, "  invariant %s: held (%s)\n", inv.Name, inv.Reason)
		case inv.Status == localtest.StatusHeld:
			fmt.Fprintf(w, "  invariant %s: held\n", inv.Name)
		case inv.Status == localtest.StatusViolated:
			fmt.Fprintf(w, "  invariant %s: VIOLATED\n", inv.Name)
		default:
			fmt.Fprintf(w, "  invariant %s: NOT EVALUATED: %s\n", inv.Name, inv.Reason)
		}
		for _, v := range inv.Violations {
			fmt.Fprintf(w, "    - %s\n", v)
		}
		if inv.Name == localtest.InvariantFates && inv.Status == localtest.StatusViolated {
			fmt.Fprintf(w, "    a record may end other than processed only where you say so: \"expect\" on its records line, "+
				"--expect FATE, N=FATE, N:S=FATE or id:ID=FATE, or --allow FATE for every record (fates: %s)\n", strings.Join(localtest.Fates(), ", "))
		}
	}
	if rep.Failure != nil {
		fmt.Fprintf(w, "  the run could not test the function: %s\n", rep.Failure.Reason)
	}
	if html != "" {
		fmt.Fprintf(w, "  html report: %s\n", html)
	}
	fmt.Fprintf(w, "  %s\n", verdictLine(rep))
}

// verdictLine is the summary's last line: PASS, or FAIL and why.
func verdictLine(rep *localtest.Report) string {
	if rep.Held() {
		return "PASS: the run ended and every check held"
	}
	var why []string
	if rep.Failure != nil {
		why = append(why, "the run could not test the function ("+rep.Failure.Kind+")")
	} else if rep.Stopped != "" {
		why = append(why, "the run stopped early")
	}
	for _, inv := range rep.Invariants {
		switch inv.Status {
		case localtest.StatusViolated:
			why = append(why, inv.Name+" violated")
		case localtest.StatusNotEvaluated:
			why = append(why, inv.Name+" not evaluated")
		}
	}
	return "FAIL: " + strings.Join(why, "; ")
}

// recordExpect is one --expect: the fate of every record (n == 0, id ==
// ""), of the record the report names line n (record n of an event file)
// or of user record sub of the KPL aggregate there (user), or of the
// record whose id in its source is id.
type recordExpect struct {
	n    int
	user bool
	sub  int
	id   string
	fate string
}

// hasLineExpects reports whether an --expect names records by line (or
// all of them), which only a records file has.
func hasLineExpects(expects []recordExpect) bool {
	for _, e := range expects {
		if e.id == "" {
			return true
		}
	}
	return false
}

// expectsByID are the --expect id:ID=FATE, for Options.ExpectByID.
func expectsByID(expects []recordExpect) map[string]string {
	var out map[string]string
	for _, e := range expects {
		if e.id != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[e.id] = e.fate
		}
	}
	return out
}

// parseExpects reads the --expect flags.
func parseExpects(flags []string) ([]recordExpect, error) {
	var out []recordExpect
	all := 0
	ids := map[string]bool{}
	for _, f := range flags {
		e := recordExpect{fate: f}
		if rest, ok := strings.CutPrefix(f, "id:"); ok {
			// The fate follows the last "=": ids hold none, but may hold ":".
			i := strings.LastIndex(rest, "=")
			if i <= 0 {
				return nil, fmt.Errorf("--expect %q: want id:ID=FATE, ID the record's id in its source", f)
			}
			e = recordExpect{id: rest[:i], fate: rest[i+1:]}
			if ids[e.id] {
				return nil, fmt.Errorf("--expect %q: id %s is given twice", f, e.id)
			}
			ids[e.id] = true
		} else if n, fate, ok := strings.Cut(f, "="); ok {
			line, sub, user := strings.Cut(n, ":")
			v, err := strconv.Atoi(line)
			s, serr := 0, error(nil)
			if user {
				s, serr = strconv.Atoi(sub)
			}
			if err != nil || v < 1 || serr != nil || s < 0 {
				return nil, fmt.Errorf("--expect %q: want FATE, N=FATE, N:S=FATE (N a line (record) number from 1, S a user record of its KPL aggregate from 0) or id:ID=FATE", f)
			}
			e = recordExpect{n: v, user: user, sub: s, fate: fate}
		}
		if _, err := localtest.ParseFates(e.fate); err != nil || strings.Contains(e.fate, ",") {
			return nil, fmt.Errorf("--expect %q: %q is not a fate: want one of %s", f, e.fate, strings.Join(localtest.Fates(), ", "))
		}
		if e.n == 0 && e.id == "" {
			all++
		}
		out = append(out, e)
	}
	if all > 1 {
		return nil, errors.New("--expect FATE (for every record) given twice: give one, and N=FATE for single records")
	}
	return out, nil
}

// applyExpects sets the records' Expect from --expect: FATE for every
// record without its own "expect", N=FATE for the record named line N (a
// JSON-lines file) or record N (an event file, whose records have no line).
func applyExpects(recs []localtest.InputRecord, expects []recordExpect) error {
	for _, e := range expects {
		if e.n != 0 || e.id != "" {
			continue
		}
		for i := range recs {
			if recs[i].Expect == "" {
				recs[i].Expect = e.fate
			}
		}
	}
	for _, e := range expects {
		if e.n == 0 {
			continue // all records, or by id: Options.ExpectByID
		}
		found := false
		for i := range recs {
			if recs[i].Line != e.n && (recs[i].Line != 0 || i+1 != e.n) {
				continue
			}
			found = true
			switch {
			case !e.user:
				recs[i].Expect = e.fate
			case e.sub >= len(recs[i].Aggregate):
				return fmt.Errorf("--expect %d:%d=%s: %s %d holds no user record %d (it holds %d)", e.n, e.sub, e.fate, where(recs), e.n, e.sub, len(recs[i].Aggregate))
			default:
				recs[i].Aggregate[e.sub].Expect = e.fate
			}
		}
		if !found {
			return fmt.Errorf("--expect %d=%s: no record is %s %d", e.n, e.fate, where(recs), e.n)
		}
	}
	return nil
}

// where says how --expect N names the records: by line, or (an event
// file) by number.
func where(recs []localtest.InputRecord) string {
	if recs[0].Line == 0 {
		return "record"
	}
	return "line"
}

// quarantineOf is the Quarantine of a bootstrap run with env: its
// SLUICE_DLQ_URL (which wins, as package fromenv reads them) or
// SLUICE_DLQ_FILE. A relative file is the function's: from its working
// directory, the bootstrap's (LAMBDA_TASK_ROOT). Nil when it has neither.
func quarantineOf(ctx context.Context, env []string, bootstrap string) (localtest.Quarantine, error) {
	if url := envValue(env, "SLUICE_DLQ_URL"); url != "" {
		cfg, err := functionAWSConfig(ctx, env, "SQS")
		if err != nil {
			return nil, fmt.Errorf("reading the function's dead letters (SLUICE_DLQ_URL=%s): %w", url, err)
		}
		return source.SQSQuarantine(cfg, url), nil
	}
	path := envValue(env, "SLUICE_DLQ_FILE")
	if path == "" {
		return nil, nil
	}
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(bootstrap)
		if err != nil {
			return nil, err
		}
		path = filepath.Join(filepath.Dir(abs), path)
	}
	q, err := localtest.QuarantineFile(path)
	if err != nil {
		return nil, err
	}
	return q, nil
}

// functionAWSConfig is the AWS configuration a function started with env
// uses for a service (SQS, DYNAMODB, as AWS_ENDPOINT_URL_<SERVICE> names
// it): its region, its endpoint for the service (AWS_ENDPOINT_URL_SQS,
// else AWS_ENDPOINT_URL) and its credentials; the default chain when it
// names neither credentials nor an endpoint (the service is then AWS's).
func functionAWSConfig(ctx context.Context, env []string, service string) (aws.Config, error) {
	region := orDefault(envValue(env, "AWS_REGION"), orDefault(envValue(env, "AWS_DEFAULT_REGION"), "us-east-1"))
	endpoint := orDefault(envValue(env, "AWS_ENDPOINT_URL_"+service), envValue(env, "AWS_ENDPOINT_URL"))
	key, secret := envValue(env, "AWS_ACCESS_KEY_ID"), envValue(env, "AWS_SECRET_ACCESS_KEY")
	if endpoint == "" && key == "" {
		return config.LoadDefaultConfig(ctx, config.WithRegion(region))
	}
	// Built by hand: the process's own AWS_ENDPOINT_URL_SQS (and the
	// like), which the default loader would read, is not the function's.
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	if key != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, secret, envValue(env, "AWS_SESSION_TOKEN"))
	}
	if endpoint != "" {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	return cfg, nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// functionNameOf is the name in a function ARN
// (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]), or name itself.
func functionNameOf(name string) string {
	if _, rest, ok := strings.Cut(name, ":function:"); ok {
		name, _, _ = strings.Cut(rest, ":")
	}
	return name
}

// envValue is the value the last KEY=VALUE of env gives key, as a process
// started with env sees it.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
