package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/fetch"
)

// fetchFailedCommand turns Lambda's on-failure records into envelopes.
func fetchFailedCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("sluice fetch-failed", fetchFailedUsage, stderr)
	fromQueue := fs.String("from-queue", "", "read on-failure records from this SQS queue URL (endpoint: $AWS_ENDPOINT_URL_SQS, else AWS)")
	fromFile := fs.String("from-file", "", "read on-failure records from this file of JSON lines (a sluice run file:// destination)")
	fromBucket := fs.String("from-bucket", "", "read on-failure objects from this S3 bucket, s3://BUCKET[/PREFIX] (default prefix aws/lambda/; endpoint: $AWS_ENDPOINT_URL_S3, else AWS)")
	fromDir := fs.String("from-dir", "", "read on-failure objects from the files under this directory (a sluice run file://DIR/ destination)")
	toFile := fs.String("to-file", "", "append the envelopes to this file of JSON lines")
	toQueue := fs.String("to-queue", "", "send the envelopes to this SQS queue URL")
	kafkaBrokers := fs.String("kafka-brokers", "", "host:port[,host:port...]: read Kafka records from these brokers instead of the batch info's bootstrapServers")
	kafkaWait := fs.Duration("kafka-wait", 10*time.Second, "give up on a Kafka partition after this long without records")
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usageError := usageErrors("sluice fetch-failed", stderr)
	from := 0
	for _, f := range []string{*fromQueue, *fromFile, *fromBucket, *fromDir} {
		if f != "" {
			from++
		}
	}
	bucket, prefix, bucketErr := parseBucketURL(*fromBucket)
	switch {
	case from != 1:
		return usageError("name one of --from-queue, --from-file, --from-bucket and --from-dir")
	case *fromBucket != "" && bucketErr != nil:
		return usageError("--from-bucket: %v", bucketErr)
	case (*toQueue == "") == (*toFile == ""):
		return usageError("name one of --to-file and --to-queue")
	case *fromFile != "" && *toFile != "" && samePath(*fromFile, *toFile):
		return usageError("--from-file and --to-file are the same file")
	case *kafkaWait <= 0:
		return usageError("--kafka-wait must be positive")
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "sluice fetch-failed: %v\n", awsHint(err))
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var mu sync.Mutex
	kinesisClients := map[string]*kinesis.Client{}
	streamsClients := map[string]*dynamodbstreams.Client{}
	var cfgErr error
	opts := fetch.Options{
		Kinesis: func(region string) fetch.KinesisAPI {
			mu.Lock()
			defer mu.Unlock()
			if c, ok := kinesisClients[region]; ok {
				return c
			}
			cfg, err := awsDefaultConfig(ctx, "AWS_ENDPOINT_URL_KINESIS", region)
			if err != nil {
				cfgErr = err
			}
			c := kinesis.NewFromConfig(cfg)
			kinesisClients[region] = c
			return c
		},
		DynamoDBStreams: func(region string) fetch.DynamoDBStreamsAPI {
			mu.Lock()
			defer mu.Unlock()
			if c, ok := streamsClients[region]; ok {
				return c
			}
			env := "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"
			endpoint := os.Getenv(env)
			if endpoint == "" && os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "" {
				env, endpoint = "AWS_ENDPOINT_URL_DYNAMODB", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
			}
			cfg, err := awsDefaultConfig(ctx, env, region)
			if err != nil {
				cfgErr = err
			}
			c := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
				if endpoint != "" {
					o.BaseEndpoint = &endpoint
				}
			})
			streamsClients[region] = c
			return c
		},
		Kafka: fetch.FranzKafka(*kafkaWait),
	}
	if *kafkaBrokers != "" {
		opts.KafkaSeeds = strings.Split(*kafkaBrokers, ",")
	}

	var src fetch.Source
	var err error
	switch {
	case *fromFile != "":
		src, err = fetch.File(*fromFile)
	case *fromDir != "":
		src, err = fetch.Dir(*fromDir)
	case *fromBucket != "":
		var cfg aws.Config
		cfg, err = awsDefaultConfig(ctx, "AWS_ENDPOINT_URL_S3", "")
		local := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
		src = fetch.Bucket(s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = local }), bucket, prefix)
	default:
		api, cerr := sqsClient(ctx, *fromQueue)
		src, err = fetch.Queue(api, *fromQueue, 5*time.Minute, time.Second), cerr
	}
	if err != nil {
		return fail(err)
	}
	var sink fetch.Sink
	if *toQueue != "" {
		api, err := sqsClient(ctx, *toQueue)
		if err != nil {
			return fail(err)
		}
		sink = fetch.QueueSink{API: api, URL: *toQueue}
	} else {
		f, err := dlq.OpenFile(*toFile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		sink = f
	}
	prog := &lineProgress{w: stderr, on: !*quiet && isTerminal(stderr)}
	sum, err := fetch.Run(ctx, src, fetch.New(opts), sink, func(t fetch.Totals) {
		prog.draw(fmt.Sprintf("%d on-failure records read  %d fetched  %d records  %d left", t.Read, t.Fetched, t.Records, t.Failed))
	})
	prog.done()
	if cfgErr != nil && err != nil {
		err = fmt.Errorf("%w (AWS configuration: %v)", err, cfgErr)
	}
	if sum != nil {
		t := sum.Totals
		to := *toFile
		if to == "" {
			to = *toQueue
		}
		fmt.Fprintf(stdout, "fetch-failed from %s: %d on-failure records read, %d fetched (removed), %d envelopes written to %s, %d left (%d past retention)\n",
			src.Name(), t.Read, t.Fetched, t.Records, to, t.Failed, t.Trimmed)
		for i, l := range sum.Leftovers {
			if i == 20 {
				fmt.Fprintf(stdout, "  ... and %d more\n", len(sum.Leftovers)-20)
				break
			}
			fmt.Fprintf(stdout, "  left %s: %s\n", l.Message, oneLine(l.Reason))
		}
		if sum.Stopped != "" {
			fmt.Fprintf(stdout, "  stopped early: %s\n", sum.Stopped)
		}
	}
	if err != nil {
		return fail(err)
	}
	if sum.Failed > 0 || sum.Stopped != "" {
		return 1
	}
	return 0
}

// parseBucketURL reads s3://BUCKET[/PREFIX] or arn:PARTITION:s3:::BUCKET;
// "" is no bucket.
func parseBucketURL(s string) (bucket, prefix string, err error) {
	if s == "" {
		return "", "", nil
	}
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		if _, name, isArn := strings.Cut(s, ":s3:::"); isArn && strings.HasPrefix(s, "arn:") {
			rest = name
		} else {
			return "", "", fmt.Errorf("%q: want s3://BUCKET[/PREFIX] or arn:aws:s3:::BUCKET", s)
		}
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%q names no bucket", s)
	}
	return bucket, prefix, nil
}

// fetchFailedUsage is what "sluice fetch-failed -h" prints before the flags.
const fetchFailedUsage = `Usage: sluice fetch-failed (--from-queue URL | --from-file FILE | --from-bucket s3://BUCKET[/PREFIX] | --from-dir DIR)
                           (--to-file FILE | --to-queue URL) [flags]

Reads Lambda's on-failure records of stream and Kafka mappings (they name a
shard and sequence range, or offsets, never the records), reads the named
records back from the stream while it still retains them, and writes one
dead-letter envelope per record, which sluice redrive replays. The objects
of an S3 on-failure destination (--from-bucket; --from-dir for the files
sluice run writes for a file://DIR/ destination) hold the failed batch
itself: their records are taken from there, without reading the stream,
even past its retention. Each on-failure record is removed (the message or
object deleted, the file rewritten without the line, or removed) once its
envelopes are written.

Streams are reached through the standard AWS environment:
AWS_ENDPOINT_URL_KINESIS, AWS_ENDPOINT_URL_DYNAMODB_STREAMS (else
AWS_ENDPOINT_URL_DYNAMODB, where DynamoDB Local and LocalStack serve
streams), AWS_REGION (else the region of the stream's ARN); a bucket through
AWS_ENDPOINT_URL_S3 and AWS_REGION (the bucket's region). Exit status: 0
when every on-failure record was fetched, 1 when some are left (past the
stream's retention, not on-failure records, a failed read), 2 on a usage
error.

Flags:
`
