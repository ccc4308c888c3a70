package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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

func TestS3Bucket(t *testing.T) {
	for in, want := range map[string]string{
		"s3://b": "b", "s3://b/": "b", "arn:aws:s3:::b": "b", "arn:aws-cn:s3:::b": "b",
		"http://127.0.0.1/q": "", "file://x/": "", "kafka://t": "", "arn:aws:sqs:us-east-1:1:q": "",
		// Not a bucket: the mapping's validation refuses them before.
		"s3://b/key": "", "s3://": "", "arn:aws:s3:::": "",
	} {
		if got := s3Bucket(in); got != want {
			t.Errorf("s3Bucket(%q) = %q, want %q", in, got, want)
		}
	}
}

// sluice run with an s3:// destination puts the on-failure object through
// the S3 API at AWS_ENDPOINT_URL_S3 (gofakes3 over HTTP), under the
// mapping's UUID.
func TestRunS3DestinationEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s3srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer s3srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", s3srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	c := s3.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(s3srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("failed")}); err != nil {
		t.Fatal(err)
	}
	fn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		w.Write([]byte(`{"errorType":"Boom","errorMessage":"boom"}`))
	}))
	defer fn.Close()

	dir := t.TempDir()
	const uuid = "f89f8514-cdd9-4602-9e1f-01a5b77d449b"
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","UUID":"`+uuid+`","StartingPosition":"TRIM_HORIZON",
		"MaximumRetryAttempts":0,"DestinationConfig":{"OnFailure":{"Destination":"s3://failed"}}}`)
	records := write(t, dir, "records.jsonl", `{"partitionKey":"k","data":{"id":"a"}}`+"\n")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", fn.URL, "--quiet")
	if code == 2 || !strings.Contains(out, "on-failure") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("failed")})
	if err != nil || len(list.Contents) != 1 {
		t.Fatalf("ListObjectsV2: %v, %d objects", err, len(list.Contents))
	}
	key := aws.ToString(list.Contents[0].Key)
	if !strings.HasPrefix(key, "aws/lambda/"+uuid+"/shardId-000000000000/") {
		t.Fatalf("key %s", key)
	}
	obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("failed"), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	var rec sevents.OnFailureRecord
	if err := json.NewDecoder(obj.Body).Decode(&rec); err != nil || !strings.Contains(rec.Payload, `"partitionKey":"k"`) ||
		rec.KinesisBatchInfo == nil || rec.KinesisBatchInfo.BatchSize != 1 {
		t.Fatalf("object: %v %+v", err, rec)
	}
}

// A Kafka mapping whose records come from a file gets a producer for a
// kafka://host:port/topic destination; every other mapping is left to the
// runner (a topic of the source's cluster, or an error it explains).
func TestSetKafkaDestination(t *testing.T) {
	kafka := func(dest string) *localtest.Mapping {
		return &localtest.Mapping{EventSource: sevents.SourceKafka,
			DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: dest}}}
	}
	kinesis := kafka("kafka://127.0.0.1:9092/dlt")
	kinesis.EventSource = sevents.SourceKinesis
	for name, tc := range map[string]struct {
		m    *localtest.Mapping
		want bool
	}{
		"brokers and topic":   {kafka("kafka://127.0.0.1:9092,127.0.0.1:9093/dlt"), true},
		"topic only":          {kafka("kafka://dlt"), false},
		"no brokers":          {kafka("kafka:///dlt"), false},
		"no topic":            {kafka("kafka://127.0.0.1:9092/"), false},
		"not a topic":         {kafka("kafka://127.0.0.1:9092/a/b"), false},
		"file":                {kafka("file://x.jsonl"), false},
		"no destination":      {&localtest.Mapping{EventSource: sevents.SourceKafka}, false},
		"not a Kafka mapping": {kinesis, false},
	} {
		t.Run(name, func(t *testing.T) {
			var opts localtest.Options
			closeDest, err := setKafkaDestination(tc.m, &opts)
			if err != nil {
				t.Fatal(err)
			}
			if closeDest != nil {
				defer closeDest()
			}
			_, isKafka := opts.Destination.(*destination.KafkaTopic)
			if isKafka != tc.want || (closeDest != nil) != tc.want {
				t.Fatalf("destination %T, closer %v; want a Kafka topic: %v", opts.Destination, closeDest != nil, tc.want)
			}
		})
	}
}
