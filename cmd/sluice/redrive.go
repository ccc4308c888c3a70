package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	"github.com/sluicehq/sluice/internal/ddbchecksum"
	"github.com/sluicehq/sluice/internal/redrive"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// redriveCommand replays dead-lettered records into a function.
func redriveCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("sluice redrive", redriveUsage, stderr)
	fromQueue := fs.String("from-queue", "", "read envelopes from this SQS queue URL (endpoint: $AWS_ENDPOINT_URL_SQS, else AWS)")
	fromFile := fs.String("from-file", "", "read envelopes from this file of JSON lines")
	handler := fs.String("handler", "", "a compiled Lambda bootstrap; an http(s):// Lambda Invoke API endpoint (SAM, LocalStack, RIE; "+
		"a host ending in amazonaws.com is AWS, SigV4-signed); or aws:NAME, the function NAME (or ARN) on AWS Lambda (required unless --dry-run)")
	functionName := fs.String("function-name", "", "the function the records are replayed into: the function an Invoke API endpoint calls; for a bootstrap, "+
		"its AWS_LAMBDA_FUNCTION_NAME (default: the function the envelopes name, their functionName). Envelopes of another function are left, "+
		"since their idempotency and attempts keys name that function")
	force := fs.Bool("force", false, "replay envelopes of another function than --function-name too (their effects may happen again)")
	invokeEndpoint := fs.String("invoke-endpoint", "", "with --handler aws:NAME, send the signed Invoke requests to this URL (default $AWS_ENDPOINT_URL_LAMBDA)")
	timeout := fs.Duration("timeout", invocation.DefaultFunctionTimeout, "the function's timeout")
	initTimeout := fs.Duration("init-timeout", invoke.DefaultInitTimeout, "how long a bootstrap may take to start")
	batchSize := fs.Int("batch-size", 1, "the most records per event; records share an event only when they share a source and ARN (and a Kinesis shard)")
	rate := fs.String("rate", "", "the most records replayed per second: N, N/s or N/m")
	dryRun := fs.Bool("dry-run", false, "print each event that would be sent; invoke nothing, remove nothing")
	logs := fs.Bool("logs", false, "stream the bootstrap's output to stderr")
	quiet := fs.Bool("quiet", false, "no progress line")
	attemptsTable := fs.String("attempts-table", "", "the function's attempts table (default: SLUICE_ATTEMPTS_TABLE of its environment): "+
		"each stream or Kafka record's count there is reset before its replay, so a record quarantined for crashing the function runs again "+
		"(endpoint: $AWS_ENDPOINT_URL_DYNAMODB, else AWS)")
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the function's environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usageError := usageErrors("sluice redrive", stderr)
	perSecond, err := parseRate(*rate)
	switch {
	case (*fromQueue == "") == (*fromFile == ""):
		return usageError("name one of --from-queue and --from-file")
	case *handler == "" && !*dryRun:
		return usageError("--handler is required (or --dry-run)")
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	case *timeout <= 0 || *initTimeout <= 0:
		return usageError("--timeout and --init-timeout must be positive")
	case *batchSize < 1 || *batchSize > redrive.MaxBatchSize:
		return usageError("--batch-size %d: must be 1 to %d", *batchSize, redrive.MaxBatchSize)
	case err != nil:
		return usageError("%v", err)
	}
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usageError("--env %q is not KEY=VALUE", kv)
		}
	}
	fenv := append(os.Environ(), env...)
	if dlqFile := envValue(fenv, "SLUICE_DLQ_FILE"); *fromFile != "" && dlqFile != "" && samePath(dlqFile, *fromFile) {
		return usageError("the function quarantines into %s (SLUICE_DLQ_FILE), the file being redriven: point SLUICE_DLQ_FILE elsewhere", dlqFile)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice redrive: %v\n", awsHint(err))
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := redrive.Options{BatchSize: *batchSize, Rate: perSecond, Timeout: *timeout, DryRun: *dryRun, DryRunOut: stdout,
		FunctionName: *functionName, Force: *force}
	if opts.FunctionName == "" {
		// A function name given in --env is as explicit as --function-name.
		opts.FunctionName = envValue(env, "AWS_LAMBDA_FUNCTION_NAME")
	}
	if !*dryRun {
		// The target is checked now; the invoker is opened once the
		// function's name is known (from the first envelope, by default).
		target, isAPI, err := resolveInvokeTarget(*handler, opts.FunctionName, opts.FunctionName != "", *invokeEndpoint, "")
		if err != nil {
			return usageError("%v", err)
		}
		_, isAWS := strings.CutPrefix(*handler, "aws:")
		if isAWS && opts.FunctionName == "" {
			opts.FunctionName = functionOfARN(target.function) // the deployed function is the one the records run as
		}
		if isAPI {
			opts.Open = func(ctx context.Context, function string) (invocation.Invoker, error) {
				t := target // aws:NAME names its function itself
				if !isAWS {
					t.function = function
					if t.function == "" {
						t.function = "function"
					}
				}
				return openInvokeAPI(ctx, t)
			}
		} else {
			// Checked now (no process starts before the first Invoke).
			check, err := invoke.RuntimeAPI(*handler, fenv)
			if err != nil {
				return fail(err)
			}
			check.Close()
			opts.Open = func(_ context.Context, function string) (invocation.Invoker, error) {
				runEnv := fenv
				if function != "" {
					runEnv = append(slices.Clip(fenv), "AWS_LAMBDA_FUNCTION_NAME="+function)
				}
				ropts := []invoke.RuntimeAPIOption{invoke.RuntimeAPIInitTimeout(*initTimeout)}
				if *logs {
					ropts = append(ropts, invoke.RuntimeAPILogs(stderr))
				}
				return invoke.RuntimeAPI(*handler, runEnv, ropts...)
			}
		}
		// What the function quarantines while the redrive runs tells a
		// replay that failed again from one that succeeded.
		if dlqFile := envValue(fenv, "SLUICE_DLQ_FILE"); dlqFile != "" && !isAPI {
			if opts.Watch, err = redrive.WatchFile(dlqFile); err != nil {
				return fail(err)
			}
		} else if url := envValue(fenv, "SLUICE_DLQ_URL"); url != "" && url != *fromQueue && !isAPI {
			fmt.Fprintf(stderr, "sluice redrive: note: the function quarantines into %s (SLUICE_DLQ_URL), not the queue being redriven: "+
				"a record quarantined there again is counted as replayed; look in that queue\n", url)
		}
	}

	if *attemptsTable == "" {
		*attemptsTable = envValue(fenv, "SLUICE_ATTEMPTS_TABLE")
	}
	if *attemptsTable != "" && !*dryRun {
		cfg, err := awsDefaultConfig(ctx, "AWS_ENDPOINT_URL_DYNAMODB", "")
		if err != nil {
			return fail(fmt.Errorf("--attempts-table %s: %w", *attemptsTable, err))
		}
		store, err := dynamodbattempts.New(dynamodb.NewFromConfig(cfg, ddbchecksum.Option), *attemptsTable)
		if err != nil {
			return fail(err)
		}
		opts.Attempts = store
	}

	var src redrive.Source
	if *fromFile != "" {
		src, err = redrive.File(*fromFile)
	} else {
		var api *sqs.Client
		api, err = sqsClient(ctx, *fromQueue)
		// A received message stays hidden while the events of one window
		// (up to ten envelopes, or a batch) run.
		events := (max(*batchSize, 10) + *batchSize - 1) / *batchSize
		src = redrive.Queue(api, *fromQueue, time.Duration(events)*(*timeout+*initTimeout)+30*time.Second, time.Second)
	}
	if err != nil {
		return fail(err)
	}
	prog := &lineProgress{w: stderr, on: !*quiet && !*logs && !*dryRun && isTerminal(stderr)}
	opts.Progress = func(t redrive.Totals) {
		prog.draw(fmt.Sprintf("%d envelopes read  %d replayed  %d left  %d invocations", t.Read, t.Replayed, t.Left(), t.Invocations))
	}
	start := time.Now()
	sum, err := redrive.Run(ctx, src, opts)
	prog.done()
	if sum != nil {
		redriveSummary(stdout, src.Name(), sum, *dryRun, time.Since(start))
	}
	if err != nil {
		return fail(err)
	}
	if !sum.OK() || sum.Stopped != "" {
		return 1
	}
	return 0
}

// functionOfARN is the function name in arn:aws:lambda:REGION:ACCOUNT:
// function:NAME[:QUALIFIER], or name itself when it is no ARN.
func functionOfARN(name string) string {
	if p := strings.Split(name, ":"); len(p) >= 7 && p[0] == "arn" && p[5] == "function" {
		return p[6]
	}
	return name
}

func redriveSummary(w io.Writer, name string, sum *redrive.Summary, dryRun bool, took time.Duration) {
	t := sum.Totals
	if dryRun {
		fmt.Fprintf(w, "dry run of %s: %d envelopes read; would send %d events with %d records; %d envelopes would stay\n",
			name, t.Read, t.Invocations, t.Records, t.Left())
	} else {
		fn := ""
		if sum.FunctionName != "" {
			fn = " into function " + sum.FunctionName
		}
		fmt.Fprintf(w, "redrive of %s%s: %d envelopes read, %d invocations in %v\n", name, fn, t.Read, t.Invocations, took.Round(time.Millisecond))
		fmt.Fprintf(w, "  replayed %d (removed)  left %d: failed %d, not envelopes %d, truncated %d, repeated %d, other function %d\n",
			t.Replayed, t.Left(), t.Failed, t.Invalid, t.Truncated, t.Repeated, t.OtherFunction)
		if t.Requarantined > 0 {
			fmt.Fprintf(w, "  quarantined again %d: the function failed them again and wrote new envelopes; the redrive did not succeed for them\n", t.Requarantined)
		}
	}
	for i, l := range sum.Requarantines {
		if i == 20 {
			fmt.Fprintf(w, "  ... and %d more quarantined again\n", len(sum.Requarantines)-20)
			break
		}
		fmt.Fprintf(w, "  quarantined again: record %s, its new envelope in %s\n", l.Record, l.Message)
	}
	for i, l := range sum.Leftovers {
		if i == 20 {
			fmt.Fprintf(w, "  ... and %d more\n", len(sum.Leftovers)-20)
			break
		}
		rec := ""
		if l.Record != "" {
			rec = " record " + l.Record
		}
		fmt.Fprintf(w, "  left %s%s: %s\n", l.Message, rec, oneLine(l.Reason))
	}
	if sum.Stopped != "" {
		fmt.Fprintf(w, "  stopped early: %s\n", sum.Stopped)
	}
}

// parseRate reads --rate: N, N/s or N/m, in records per second.
func parseRate(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	num, unit, _ := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--rate %q: want a positive number of records, N, N/s or N/m", s)
	}
	switch unit {
	case "", "s":
		return n, nil
	case "m":
		return n / 60, nil
	}
	return 0, fmt.Errorf("--rate %q: the unit is /s or /m", s)
}

func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// sqsClient is an SQS client for a queue URL: AWS_ENDPOINT_URL_SQS if set
// (the SDK reads it; with fake credentials unless the environment has
// some), else the region in an AWS queue URL (sqs.REGION.amazonaws.com) or
// the default configuration's.
func sqsClient(ctx context.Context, url string) (*sqs.Client, error) {
	cfg, err := awsDefaultConfig(ctx, "AWS_ENDPOINT_URL_SQS", regionOfHost(url, "sqs"))
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for the queue %s: %w", url, err)
	}
	return sqs.NewFromConfig(cfg), nil
}

// awsDefaultConfig is the default configuration, with fake credentials
// when endpointEnv names a local endpoint and the environment has none,
// and region (else AWS_REGION, else us-east-1 for a local endpoint).
func awsDefaultConfig(ctx context.Context, endpointEnv, region string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	local := os.Getenv(endpointEnv) != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	if local && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err == nil && cfg.Region == "" {
		if !local {
			return cfg, errors.New("no region: set AWS_REGION")
		}
		cfg.Region = "us-east-1"
	}
	return cfg, err
}

// regionOfHost is REGION in https://SERVICE.REGION.amazonaws.com/..., or "".
func regionOfHost(url, service string) string {
	_, rest, _ := strings.Cut(url, "://")
	host, _, _ := strings.Cut(rest, "/")
	labels := strings.Split(host, ".")
	if len(labels) >= 4 && labels[0] == service && labels[2] == "amazonaws" {
		return labels[1]
	}
	return ""
}

// lineProgress redraws one line on a terminal, at most ten times a second.
type lineProgress struct {
	mu   sync.Mutex
	w    io.Writer
	on   bool
	last time.Time
	text string
}

func (p *lineProgress) draw(text string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text = text
	if time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\x1b[K%s", text)
}

func (p *lineProgress) done() {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.text != "" {
		fmt.Fprintf(p.w, "\r\x1b[K%s\n", p.text)
	}
}

// redriveUsage is what "sluice redrive -h" prints before the flags.
const redriveUsage = `Usage: sluice redrive (--from-queue URL | --from-file FILE) --handler TARGET [flags]

Replays dead-lettered records: reads the envelopes Sluice's quarantine (or
sluice fetch-failed) wrote, rebuilds each record's Lambda event byte for
byte, invokes the function, reads its answer as the event source mapping
would, and removes an envelope (deletes the message, or rewrites the file
without the line) only once its record succeeded. The record keeps its ids
and runs as the function that quarantined it (the envelope's functionName,
which the default idempotency keys hold), so with idempotency on a redrive
never repeats an effect, and running one again is safe. A record whose
replay ends in quarantine again (its new envelope in the queue being
redriven, or in the function's SLUICE_DLQ_FILE) is counted apart. A summary
goes to standard output. Exit status: 0 when no envelope is left and no
record was quarantined again, 1 when some are (failed, another function's,
not envelopes, truncated, quarantined again) or the redrive failed, 2 on a
usage error.

Flags:
`
