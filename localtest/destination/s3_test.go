package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/destination"
)

// bytesFunc adapts a function to localtest.BytesHandler.
type bytesFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f bytesFunc) Invoke(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }

// s3Server starts gofakes3, an S3 API server, on 127.0.0.1 and returns an
// SDK configuration for it.
func s3Server(t *testing.T) aws.Config {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(srv.URL),
	}
}

// An always failing Kinesis batch ends as one object in the bucket, put
// through the S3 API over HTTP: the on-failure record plus the event as
// payload, under aws/lambda/<mapping uuid>/<shard>/YYYY/MM/DD/...
func TestS3Destination(t *testing.T) {
	t.Parallel()
	ctx := awsCtx(t, 30*time.Second)
	cfg := s3Server(t)
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	bucket := "failed-batches"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}

	const uuid = "f89f8514-cdd9-4602-9e1f-01a5b77d449b"
	var last []byte
	h := bytesFunc(func(_ context.Context, p []byte) ([]byte, error) {
		last = p
		return nil, errors.New("boom")
	})
	m := &localtest.Mapping{EventSource: sevents.SourceKinesis, UUID: uuid, StartingPosition: "TRIM_HORIZON",
		BatchSize: aws.Int(2), MaximumRetryAttempts: aws.Int(0), Shards: aws.Int(1),
		DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "arn:aws:s3:::" + bucket}}}
	var recs []localtest.InputRecord
	for i := range 2 {
		recs = append(recs, localtest.InputRecord{PartitionKey: "k", Data: json.RawMessage(fmt.Sprintf(`{"id":%d}`, i))})
	}
	rep, err := localtest.Run(ctx, localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h),
		Destination: destination.S3(cfg, bucket, m.UUID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.OnFailureRecords) != 1 {
		t.Fatalf("on-failure records %+v", rep.OnFailureRecords)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatalf("ListObjectsV2: %v", err)
	}
	if len(list.Contents) != 1 {
		t.Fatalf("%d objects, want 1", len(list.Contents))
	}
	key := aws.ToString(list.Contents[0].Key)
	rec := rep.OnFailureRecords[0]
	at, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
	prefix := "aws/lambda/" + uuid + "/shardId-000000000000/" + at.UTC().Format("2006/01/02/2006-01-02T15.04.05") + "-"
	if !strings.HasPrefix(key, prefix) || len(key) != len(prefix)+36 {
		t.Fatalf("key %s, want %s<uuid>", key, prefix)
	}
	obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	body, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got sevents.OnFailureRecord
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("object %s: %v", body, err)
	}
	if got.Payload != string(last) || got.KinesisBatchInfo == nil || got.KinesisBatchInfo.BatchSize != 2 ||
		got.RequestContext.Condition != rec.RequestContext.Condition {
		t.Errorf("object %s\nwant the report's record with payload %s", body, last)
	}
	var ev struct{ Records []json.RawMessage }
	if err := json.Unmarshal([]byte(got.Payload), &ev); err != nil || len(ev.Records) != 2 {
		t.Errorf("payload is not the batch's Kinesis event: %v", err)
	}

	// A bucket that does not exist: the run fails, naming the bucket.
	_, err = localtest.Run(ctx, localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h),
		Destination: destination.S3(cfg, "missing", m.UUID)})
	if err == nil || !strings.Contains(err.Error(), "S3 bucket missing: PutObject aws/lambda/"+uuid) {
		t.Errorf("Run into a missing bucket: %v", err)
	}
}
