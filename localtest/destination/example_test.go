package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/destination"
)

// A Kinesis batch that always fails ends, once its one try is spent, as one
// object in an S3 bucket (here gofakes3, an S3 API server in memory), under
// the key Lambda gives it.
func ExampleS3() {
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	ctx := context.Background()
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("failed")}); err != nil {
		fmt.Println(err)
		return
	}

	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON",
		MaximumRetryAttempts: aws.Int(0), Shards: aws.Int(1),
		DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "s3://failed"}}}
	fail := bytesFunc(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
	_, err := localtest.Run(ctx, localtest.Options{Mapping: m, Invoker: localtest.InProcess(fail),
		Records:     []localtest.InputRecord{{PartitionKey: "k", Data: json.RawMessage(`{"id":1}`)}},
		Destination: destination.S3(cfg, "failed", "")})
	if err != nil {
		fmt.Println(err)
		return
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("failed")})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range list.Contents {
		parts := strings.Split(*o.Key, "/")
		fmt.Println(strings.Join(parts[:4], "/"), "...")
	}
	// Output: aws/lambda/5e1ce000-0000-4000-8000-000000000001/shardId-000000000000 ...
}
