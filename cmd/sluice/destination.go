package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/desturl"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/destination"
)

// s3Bucket is the bucket an on-failure destination names (s3://bucket or
// arn:aws:s3:::bucket), or "".
func s3Bucket(dest string) string {
	if t := desturl.Parse(dest); t.Kind == desturl.S3 {
		return t.Bucket
	}
	return ""
}

// setS3Destination sends on-failure records to the S3 bucket a mapping
// names. The S3 API is AWS_ENDPOINT_URL_S3 if set, else the mapping's AWS
// Endpoint (LocalStack serves S3 beside the rest), else AWS itself with the
// default credential chain. A local endpoint gets the environment's
// credentials if it has any, else fake ones.
func setS3Destination(ctx context.Context, m *localtest.Mapping, opts *localtest.Options, bucket string) error {
	region := orDefault(m.Region, "us-east-1")
	lopts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3") // the SDK reads it itself
	if endpoint == "" && m.Endpoint != "" && m.Endpoint != "aws" && !strings.HasPrefix(m.Endpoint, "kafka://") {
		endpoint = m.Endpoint
		lopts = append(lopts, config.WithBaseEndpoint(endpoint))
	}
	if endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		lopts = append(lopts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lopts...)
	if err != nil {
		return fmt.Errorf("AWS configuration for the on-failure bucket %s: %w", bucket, err)
	}
	opts.Destination = destination.S3(cfg, bucket, m.UUID)
	return nil
}

// setKafkaDestination sends on-failure records of a Kafka mapping whose
// records come from a file to the topic its kafka://host:port/topic
// destination names. (A source on a cluster opens its destination itself,
// through the runner.) close, if not nil, closes the producer.
func setKafkaDestination(m *localtest.Mapping, opts *localtest.Options) (close func(), err error) {
	d := m.DestinationConfig
	if m.EventSource != events.SourceKafka || d == nil || d.OnFailure == nil {
		return nil, nil
	}
	t := desturl.Parse(d.OnFailure.Destination)
	if t.Kind != desturl.Kafka || t.Seeds == nil {
		return nil, nil // no brokers named, or not a topic: the runner says what is wrong
	}
	kd, err := destination.Kafka(t.Seeds, t.Topic)
	if err != nil {
		return nil, err
	}
	opts.Destination = kd
	return kd.Close, nil
}
