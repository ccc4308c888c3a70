package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/destination"
	"github.com/sluicehq/sluice/localtest/invoke"
	"github.com/sluicehq/sluice/localtest/source"
)

// awsConfig is the SDK configuration for a mapping's Endpoint: "aws" means
// AWS itself (the default credential chain); any other URL is a local or
// emulated endpoint (LocalStack, kinesalite, DynamoDB Local, fauxqs), reached
// with the environment's credentials if it has any, else fake ones.
func awsConfig(ctx context.Context, m *localtest.Mapping) (aws.Config, error) {
	region := m.Region
	if region == "" {
		region = "us-east-1"
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if m.Endpoint != "aws" {
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
		}
		opts = append(opts, config.WithBaseEndpoint(m.Endpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, fmt.Errorf("AWS configuration for %s: %w", m.Endpoint, err)
	}
	return cfg, nil
}

// openEndpoint sets the source of a mapping that names a real endpoint:
//
//	kinesis   Endpoint + StreamName
//	dynamodb  Endpoint + StreamArn
//	sqs       Endpoint + QueueUrl
//	kafka     Endpoint kafka://host:port[,host:port...] + Topic
//
// and, for an on-failure destination that is an SQS queue URL or an S3
// bucket, the destination. (A kafka://topic destination is on the source's
// cluster; the runner opens it.)
func openEndpoint(ctx context.Context, m *localtest.Mapping, opts *localtest.Options) error {
	need := func(field, value string) error {
		if value == "" {
			return fmt.Errorf("mapping: a %s source on an endpoint needs %s", m.EventSource, field)
		}
		return nil
	}
	if m.EventSource == events.SourceKafka {
		brokers, ok := strings.CutPrefix(m.Endpoint, "kafka://")
		if !ok {
			return fmt.Errorf("mapping: a Kafka Endpoint is kafka://host:port[,host:port...], not %q", m.Endpoint)
		}
		if err := need("Topic", m.Topic); err != nil {
			return err
		}
		env := invocation.KafkaEnvelope{EventSource: "SelfManagedKafka", BootstrapServers: brokers}
		if !m.SelfManaged {
			env.EventSource = "aws:kafka"
			env.EventSourceARN = "arn:aws:kafka:" + orDefault(m.Region, "us-east-1") + ":123456789012:cluster/local/1"
		}
		src, err := source.KafkaCluster(strings.Split(brokers, ","), []string{m.Topic}, env,
			source.KafkaStartingPosition(m.StartingPosition))
		if err != nil {
			return err
		}
		opts.Kafka = src
		return nil
	}
	cfg, err := awsConfig(ctx, m)
	if err != nil {
		return err
	}
	switch m.EventSource {
	case events.SourceKinesis:
		if err := need("StreamName", m.StreamName); err != nil {
			return err
		}
		var kopts []source.KinesisStreamOption
		if ts := m.StartingPositionTimestamp; ts != nil {
			sec, frac := math.Modf(*ts)
			kopts = append(kopts, source.KinesisStartingTimestamp(time.Unix(int64(sec), int64(frac*1e9))))
		}
		opts.Stream = source.KinesisStream(cfg, m.StreamName, m.StartingPosition, kopts...)
	case events.SourceDynamoDB:
		if err := need("StreamArn", m.StreamARN); err != nil {
			return err
		}
		opts.Stream = source.DynamoDBStream(cfg, m.StreamARN, m.StartingPosition)
	case events.SourceSQS, events.SourceSQSFIFO:
		if err := need("QueueUrl", m.QueueURL); err != nil {
			return err
		}
		opts.Queue = source.SQSQueue(cfg, m.QueueURL)
	}
	return setQueueDestination(ctx, m, opts, &cfg)
}

// setQueueDestination sends on-failure records to an SQS queue URL named in
// the mapping, through the mapping's Endpoint or, for an emulated source,
// the queue URL's own host; or to an S3 bucket (setS3Destination).
func setQueueDestination(ctx context.Context, m *localtest.Mapping, opts *localtest.Options, cfg *aws.Config) error {
	d := m.DestinationConfig
	if d != nil && d.OnFailure != nil && s3Bucket(d.OnFailure.Destination) != "" {
		return setS3Destination(ctx, m, opts, s3Bucket(d.OnFailure.Destination))
	}
	if d == nil || d.OnFailure == nil || !strings.HasPrefix(d.OnFailure.Destination, "http") {
		return nil
	}
	url := d.OnFailure.Destination
	if cfg == nil {
		mm := *m
		if mm.Endpoint == "" {
			scheme, rest, _ := strings.Cut(url, "://")
			host, _, _ := strings.Cut(rest, "/")
			mm.Endpoint = scheme + "://" + host
			if strings.HasSuffix(host, "amazonaws.com") {
				mm.Endpoint = "aws"
			}
		}
		c, err := awsConfig(ctx, &mm)
		if err != nil {
			return err
		}
		cfg = &c
	}
	opts.Destination = destination.SQS(*cfg, url)
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// invokeTarget is where a --handler that is not a bootstrap sends Invoke
// requests.
type invokeTarget struct {
	url      string // "" for the AWS Lambda endpoint of the region
	function string
	sign     bool   // SigV4 with the default credential chain
	region   string // "" for the default configuration's (AWS_REGION, profile)
}

// resolveInvokeTarget reads --handler when it names an Invoke API:
//
//	aws:NAME            AWS Lambda in the region of NAME's ARN, the
//	                    mapping's Region or the default configuration,
//	                    at invokeEndpoint or AWS_ENDPOINT_URL_LAMBDA if set;
//	                    signed
//	https://...amazonaws.com[.cn]  signed, in the region of the host name
//	                    (lambda.REGION.amazonaws.com) or as for aws:
//	http(s)://...       unsigned (SAM, LocalStack, RIE)
//
// ok is false for a bootstrap path.
func resolveInvokeTarget(handler, functionName string, functionNameSet bool, invokeEndpoint, mappingRegion string) (t invokeTarget, ok bool, err error) {
	if name, isAWS := strings.CutPrefix(handler, "aws:"); isAWS {
		switch {
		case name == "" && !functionNameSet:
			return t, true, errors.New("--handler aws:NAME needs the function's NAME (or ARN)")
		case name == "":
			name = functionName
		case functionNameSet && functionName != name:
			return t, true, fmt.Errorf("--handler %s and --function-name %s name different functions", handler, functionName)
		}
		t = invokeTarget{function: name, sign: true, region: mappingRegion, url: invokeEndpoint}
		if t.url == "" {
			t.url = os.Getenv("AWS_ENDPOINT_URL_LAMBDA")
		}
		// arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]
		if p := strings.Split(name, ":"); len(p) >= 7 && p[0] == "arn" && p[2] == "lambda" && p[3] != "" {
			t.region = p[3]
		}
		return t, true, nil
	}
	if !strings.HasPrefix(handler, "http://") && !strings.HasPrefix(handler, "https://") {
		if invokeEndpoint != "" {
			return t, false, errors.New("--invoke-endpoint goes with --handler aws:NAME")
		}
		return t, false, nil
	}
	if invokeEndpoint != "" {
		return t, true, errors.New("--invoke-endpoint goes with --handler aws:NAME, not with an http(s):// handler")
	}
	t = invokeTarget{url: handler, function: functionName}
	u, err := url.Parse(handler)
	if err != nil {
		return t, true, fmt.Errorf("--handler %q: %w", handler, err)
	}
	host := u.Hostname()
	if strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn") {
		t.sign, t.region = true, mappingRegion
		// lambda.REGION.amazonaws.com, lambda-fips.REGION...,
		// vpce-....lambda.REGION.vpce.amazonaws.com
		labels := strings.Split(host, ".")
		for i, l := range labels[:len(labels)-1] {
			if l == "lambda" || l == "lambda-fips" {
				t.region = labels[i+1]
				break
			}
		}
	}
	return t, true, nil
}

// openInvokeAPI returns the Invoker of an Invoke API target, signing its
// requests with credentials of the default chain if it is AWS.
func openInvokeAPI(ctx context.Context, t invokeTarget) (invocation.Invoker, error) {
	if !t.sign {
		return invoke.InvokeAPI(t.url, t.function)
	}
	var opts []func(*config.LoadOptions) error
	if t.region != "" {
		opts = append(opts, config.WithRegion(t.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for Lambda Invoke: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("invoking on AWS needs a region: set Region in the mapping, or AWS_REGION")
	}
	if t.url == "" {
		t.url = "https://lambda." + cfg.Region + ".amazonaws.com"
		if strings.HasPrefix(cfg.Region, "cn-") {
			t.url += ".cn"
		}
	}
	return invoke.InvokeAPI(t.url, t.function, invoke.InvokeAPISigV4(cfg))
}
