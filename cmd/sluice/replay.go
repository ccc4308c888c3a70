package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/replay"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// replayCommand replays a range of a stream's history into a function.
func replayCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("sluice replay", replayUsage, stderr)
	kinesisStream := fs.String("kinesis-stream", "", "replay this Kinesis data stream (by name; endpoint: $AWS_ENDPOINT_URL_KINESIS, else AWS)")
	dynamoDBStream := fs.String("dynamodb-stream", "", "replay this DynamoDB stream (a table's LatestStreamArn; endpoint: $AWS_ENDPOINT_URL_DYNAMODB_STREAMS, else $AWS_ENDPOINT_URL_DYNAMODB, else AWS)")
	kafkaTopic := fs.String("kafka-topic", "", "replay this Kafka topic (with --kafka-brokers)")
	kafkaBrokers := fs.String("kafka-brokers", "", "host:port[,host:port...]: the Kafka cluster")
	kafkaARN := fs.String("kafka-arn", "", "the MSK cluster ARN the events carry (default a local one, as sluice run's)")
	selfManaged := fs.Bool("self-managed", false, "Kafka events are a self-managed cluster's (eventSource SelfManagedKafka)")
	var lanes multiFlag
	fs.Var(&lanes, "shard", "replay only this shard id (repeatable; needed with a sequence number when the stream has several)")
	fs.Var(&lanes, "partition", "replay only this Kafka partition number (repeatable; needed with an offset when the topic has several)")
	from := fs.String("from", "", "where the range starts: TRIM_HORIZON, a time (2026-12-01T10:00:00Z: AT_TIMESTAMP), or a sequence number or offset (the record itself first); required")
	to := fs.String("to", "", "where it ends: a time (records that arrived before it), a sequence number or offset (included), or now (default: the records there when the replay starts)")
	handler := fs.String("handler", "", "a compiled Lambda bootstrap; an http(s):// Lambda Invoke API endpoint; or aws:NAME (required unless --endpoint or --dry-run)")
	endpoint := fs.String("endpoint", "", "an http(s):// Lambda Invoke API endpoint to send the events to (as --handler URL)")
	functionName := fs.String("function-name", "function", "the function's name: the function an Invoke API endpoint calls; for a bootstrap, its AWS_LAMBDA_FUNCTION_NAME (which prefixes its idempotency keys)")
	invokeEndpoint := fs.String("invoke-endpoint", "", "with --handler aws:NAME, send the signed Invoke requests to this URL (default $AWS_ENDPOINT_URL_LAMBDA)")
	timeout := fs.Duration("timeout", invocation.DefaultFunctionTimeout, "the function's timeout")
	initTimeout := fs.Duration("init-timeout", invoke.DefaultInitTimeout, "how long a bootstrap may take to start")
	batchSize := fs.Int("batch-size", replay.DefaultBatchSize, "the most records per event (one shard per Kinesis and DynamoDB event; a Kafka event holds several partitions)")
	rate := fs.String("rate", "", "the most records sent per second: N, N/s or N/m")
	batchRate := fs.String("batch-rate", "", "the most events sent per second: N, N/s or N/m")
	dryRun := fs.Bool("dry-run", false, "print each event that would be sent; send nothing, write no checkpoint")
	checkpointFile := fs.String("checkpoint", "", "the replay's checkpoint file: read at the start to resume, rewritten after each event with the last record of each shard or partition whose batch succeeded")
	maxBatches := fs.Int("max-batches", 0, "stop after this many events (0: no limit); run again with the same --checkpoint to go on")
	shadow := fs.Bool("shadow", false, "a shadow replay: the function runs with "+handlers.EnvShadow+"=1 (handlers.Shadow(ctx) is true; it should write to a shadow sink) and claims its idempotency keys under "+handlers.ShadowKeyPrefix+"; "+
		"a function behind an Invoke API endpoint must be deployed with "+handlers.EnvShadow+"=1")
	pf := fs.Int("parallelization-factor", 1, "a Kinesis replay into a bootstrap: the ParallelizationFactor the function declares in production ("+
		handlers.EnvParallelizationFactor+", which the CDK constructs set from its mapping), so its handler finds its own idempotency checkpoints (--env still wins)")
	logs := fs.Bool("logs", false, "stream the bootstrap's output to stderr")
	quiet := fs.Bool("quiet", false, "no progress line")
	var env multiFlag
	fs.Var(&env, "env", "KEY=VALUE for the function's environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usageError := usageErrors("sluice replay", stderr)
	perSecond, rateErr := parseRate(*rate)
	batchesPerSecond, batchRateErr := parseRate(*batchRate)
	if batchRateErr != nil {
		batchRateErr = fmt.Errorf("--batch-rate: %w", batchRateErr)
	}
	sources := 0
	for _, s := range []string{*kinesisStream, *dynamoDBStream, *kafkaTopic} {
		if s != "" {
			sources++
		}
	}
	fromPos, fromErr := replay.ParsePosition(*from)
	toPos, toErr := replay.ParsePosition(*to)
	switch {
	case sources != 1:
		return usageError("name one of --kinesis-stream, --dynamodb-stream and --kafka-topic")
	case *kafkaTopic != "" && *kafkaBrokers == "":
		return usageError("--kafka-topic needs --kafka-brokers")
	case *kafkaTopic == "" && (*kafkaBrokers != "" || *kafkaARN != "" || *selfManaged):
		return usageError("--kafka-brokers, --kafka-arn and --self-managed go with --kafka-topic")
	case *from == "":
		return usageError("--from is required: TRIM_HORIZON, a time, or a sequence number or offset")
	case fromErr != nil:
		return usageError("--from: %v", fromErr)
	case toErr != nil:
		return usageError("--to: %v", toErr)
	case toPos.TrimHorizon:
		return usageError("--to TRIM_HORIZON: a range ends at a time, a sequence number or offset, or now")
	case !fromPos.Time.IsZero() && !toPos.Time.IsZero() && !toPos.Time.After(fromPos.Time):
		return usageError("--to %s is not after --from %s", *to, *from)
	case *handler != "" && *endpoint != "":
		return usageError("name one of --handler and --endpoint")
	case *handler == "" && *endpoint == "" && !*dryRun:
		return usageError("--handler or --endpoint is required (or --dry-run)")
	case *endpoint != "" && !strings.HasPrefix(*endpoint, "http://") && !strings.HasPrefix(*endpoint, "https://"):
		return usageError("--endpoint %q: an http(s):// Lambda Invoke API endpoint", *endpoint)
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	case *timeout <= 0 || *initTimeout <= 0:
		return usageError("--timeout and --init-timeout must be positive")
	case *batchSize < 1 || *batchSize > replay.MaxBatchSize:
		return usageError("--batch-size %d: must be 1 to %d", *batchSize, replay.MaxBatchSize)
	case *maxBatches < 0:
		return usageError("--max-batches must not be negative")
	case *pf < 1 || *pf > 10:
		return usageError("--parallelization-factor %d: must be 1 to 10", *pf)
	case rateErr != nil:
		return usageError("%v", rateErr)
	case batchRateErr != nil:
		return usageError("%v", batchRateErr)
	}
	if *kafkaTopic != "" {
		for _, p := range lanes {
			if _, err := strconv.ParseUint(p, 10, 31); err != nil {
				return usageError("--partition %q: a Kafka partition number", p)
			}
		}
	}
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageError("--env %q is not KEY=VALUE", kv)
		}
		if k == handlers.EnvShadow {
			return usageError("--env %s: pass --shadow instead (the checkpoint records which replay it is)", kv)
		}
	}
	fenv := os.Environ()
	if *kinesisStream != "" {
		// The lanes of a Kinesis handler's checkpoints follow the factor
		// it is told: told what production declares, a replay into
		// production finds production's checkpoints.
		fenv = append(fenv, handlers.EnvParallelizationFactor+"="+strconv.Itoa(*pf))
	}
	fenv = append(fenv, env...)
	if v := envValue(fenv, handlers.EnvShadow); !*shadow && v != "" && v != "0" && !strings.EqualFold(v, "false") {
		return usageError("%s=%s is in the environment, but this is not a --shadow replay: unset it, or pass --shadow", handlers.EnvShadow, v)
	}
	if *shadow {
		fenv = append(fenv, handlers.EnvShadow+"=1")
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice replay: %v\n", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var stream replay.Stream
	var what string
	switch {
	case *kinesisStream != "":
		cfg, err := awsDefaultConfig(ctx, "AWS_ENDPOINT_URL_KINESIS", "")
		if err != nil {
			return fail(fmt.Errorf("AWS configuration for Kinesis: %w", err))
		}
		stream, what = replay.Kinesis(cfg, *kinesisStream), "Kinesis stream "+*kinesisStream
	case *dynamoDBStream != "":
		envName := "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"
		url := os.Getenv(envName)
		if url == "" && os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" {
			envName, url = "AWS_ENDPOINT_URL_DYNAMODB", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
		}
		cfg, err := awsDefaultConfig(ctx, envName, "")
		if err != nil {
			return fail(fmt.Errorf("AWS configuration for DynamoDB Streams: %w", err))
		}
		if url != "" {
			cfg.BaseEndpoint = &url
		}
		stream, what = replay.DynamoDB(cfg, *dynamoDBStream), "DynamoDB stream "+*dynamoDBStream
	default:
		env := invocation.KafkaEnvelope{EventSource: "SelfManagedKafka"}
		if !*selfManaged {
			region := orDefault(os.Getenv("AWS_REGION"), "us-east-1")
			env = invocation.KafkaEnvelope{EventSource: "aws:kafka", EventSourceARN: orDefault(*kafkaARN, "arn:aws:kafka:"+region+":123456789012:cluster/local/1")}
		}
		stream, what = replay.Kafka(strings.Split(*kafkaBrokers, ","), *kafkaTopic, env), "Kafka topic "+*kafkaTopic
	}

	opts := replay.Options{BatchSize: *batchSize, Rate: perSecond, BatchRate: batchesPerSecond, Timeout: *timeout,
		DryRun: *dryRun, DryRunOut: stdout, Checkpoint: *checkpointFile, Function: *functionName, Shadow: *shadow, MaxBatches: *maxBatches}
	if !*dryRun {
		target := *handler
		if target == "" {
			target = *endpoint
		}
		functionNameSet := false
		fs.Visit(func(f *flag.Flag) { functionNameSet = functionNameSet || f.Name == "function-name" })
		t, isAPI, err := resolveInvokeTarget(target, *functionName, functionNameSet, *invokeEndpoint, "")
		if err != nil {
			return usageError("%v", err)
		}
		if isAPI {
			if *shadow {
				fmt.Fprintf(stderr, "sluice replay: --shadow with an Invoke API endpoint: sluice cannot set that function's environment; "+
					"it must be a shadow deployment configured with %s=1, or it writes to production\n", handlers.EnvShadow)
			}
			opts.Function = t.function
			opts.Invoker, err = openInvokeAPI(ctx, t)
		} else {
			fenv = append(fenv, "AWS_LAMBDA_FUNCTION_NAME="+*functionName)
			ropts := []invoke.RuntimeAPIOption{invoke.RuntimeAPIInitTimeout(*initTimeout)}
			if *logs {
				ropts = append(ropts, invoke.RuntimeAPILogs(stderr))
			}
			opts.Invoker, err = invoke.RuntimeAPI(target, fenv, ropts...)
		}
		if err != nil {
			return fail(err)
		}
		defer opts.Invoker.Close()
	}
	prog := &lineProgress{w: stderr, on: !*quiet && !*logs && !*dryRun && isTerminal(stderr)}
	opts.Progress = func(s *replay.Summary) {
		prog.draw(fmt.Sprintf("%d events  %d records  %d acknowledged  %d failed", s.Events, s.Records, s.Acknowledged, len(s.Failures)))
	}
	start := time.Now()
	sum, err := replay.Run(ctx, stream, replay.Range{From: fromPos, To: toPos, Lanes: lanes}, opts)
	prog.done()
	if sum != nil {
		replaySummary(stdout, what, sum, fromPos, toPos, opts, time.Since(start))
	}
	if err != nil {
		return fail(err)
	}
	if len(sum.Failures) > 0 || strings.HasPrefix(sum.Stopped, "interrupted") {
		return 1
	}
	return 0
}

func replaySummary(w io.Writer, what string, sum *replay.Summary, from, to replay.Position, opts replay.Options, took time.Duration) {
	mode := "production"
	if opts.Shadow {
		mode = "shadow"
	}
	noun := "shards"
	if sum.Source == events.SourceKafka {
		noun = "partitions"
	}
	if opts.DryRun {
		fmt.Fprintf(w, "dry run of a %s replay of %s (%s %s) from %s to %s: would send %d events with %d records; nothing sent, no checkpoint written\n",
			mode, what, noun, strings.Join(sum.Lanes, ", "), from, to, sum.Events, sum.Records)
	} else {
		fmt.Fprintf(w, "%s replay of %s (%s %s) from %s to %s: %d events, %d records sent, %d acknowledged in %v\n",
			mode, what, noun, strings.Join(sum.Lanes, ", "), from, to, sum.Events, sum.Records, sum.Acknowledged, took.Round(time.Millisecond))
	}
	for _, l := range sum.Lanes {
		if p := sum.Resumed[l]; p != "" {
			fmt.Fprintf(w, "  resumed %s after %s (checkpoint)\n", l, p)
		}
	}
	if opts.Checkpoint != "" && !opts.DryRun {
		var parts []string
		for _, l := range sum.Lanes {
			if p := sum.Positions[l]; p != "" {
				parts = append(parts, l+" at "+p)
			}
		}
		slices.Sort(parts)
		fmt.Fprintf(w, "  checkpoint %s: %s\n", opts.Checkpoint, orDefault(strings.Join(parts, ", "), "nothing acknowledged yet"))
	}
	for _, f := range sum.Failures {
		fmt.Fprintf(w, "  FAILED %s record %s: %s; the checkpoint stays before it\n", f.Lane, f.Record, oneLine(f.Reason))
	}
	if sum.Stopped != "" {
		fmt.Fprintf(w, "  stopped early: %s\n", sum.Stopped)
	}
}

// replayUsage is what "sluice replay -h" prints before the flags.
const replayUsage = `Usage: sluice replay (--kinesis-stream NAME | --dynamodb-stream ARN | --kafka-topic TOPIC --kafka-brokers HOSTS)
           --from POSITION [--to POSITION] (--handler TARGET | --endpoint URL) [flags]

Replays a range of a stream's retained history (not its dead letters): reads
the records as the event source mapping would, batches them as it would,
sends each batch in Lambda's event shape, and reads the answer as it would
(partial batch responses honoured). A record the function fails stops its
shard or partition; the others go on. With --checkpoint the replay resumes
where it stopped. Records keep their ids, so with idempotency on a replay to
production skips what production completed; --shadow runs the function as a
shadow consumer (its own sink, its own idempotency keys).

A range that starts before the stream's retention is an error saying what is
left. Exit status: 0 when the range was replayed (or --max-batches reached),
1 when a record failed, the replay was interrupted or could not run, 2 on a
usage error.

Flags:
`
