package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func TestParseBucketURL(t *testing.T) {
	for in, want := range map[string][2]string{
		"s3://b": {"b", ""}, "s3://b/": {"b", ""}, "s3://b/aws/lambda/u/": {"b", "aws/lambda/u/"},
		"arn:aws:s3:::b": {"b", ""}, "arn:aws-cn:s3:::b": {"b", ""},
	} {
		b, p, err := parseBucketURL(in)
		if err != nil || b != want[0] || p != want[1] {
			t.Errorf("parseBucketURL(%q) = %q %q %v, want %q", in, b, p, err, want)
		}
	}
	for _, in := range []string{"b", "http://b", "s3://", "s3:///p", "arn:aws:s3:::"} {
		if _, _, err := parseBucketURL(in); err == nil {
			t.Errorf("parseBucketURL(%q): no error", in)
		}
	}
}

// The round trip through S3, as a deployed stream consumer with
// OnFailureToS3 makes it: sluice run gives up on a batch whose record
// outlives the function's timeout and puts the object Lambda would put,
// over the S3 API (gofakes3); fetch-failed --from-bucket turns it into
// envelopes from the object's payload alone (no stream is read: the run's
// stream was emulated and is gone); redrive replays them into the
// conformance function with idempotency on (DynamoDB Local), and every
// record takes effect exactly once across the run and the redrive.
func TestFetchFailedFromBucket(t *testing.T) {
	bin := conformance(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s3srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer s3srv.Close()
	c := s3.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(s3srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("failed")}); err != nil {
		t.Fatal(err)
	}
	ddb := servers.DynamoDB(t)
	env := append(awsEnv(ddb), "AWS_ENDPOINT_URL_S3="+s3srv.URL)
	table := createIdempotencyTable(t, env)

	dir := t.TempDir()
	const n = 6
	var lines []string
	for i := range n {
		action := "ok"
		if i == 2 {
			action = "sleep:4000" // outlives --timeout 1s
		}
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"p","data":{"id":"k%d","action":%q}}`, i, action))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":10,
		"MaximumRetryAttempts":0,"FunctionResponseTypes":["ReportBatchItemFailures"],"DestinationConfig":{"OnFailure":{"Destination":"s3://failed"}}}`)
	runEffects := filepath.Join(dir, "run-effects.jsonl")
	code, out, errs := runCLIEnv(t, env, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--timeout", "1s",
		"--effects", runEffects, "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_IDEMPOTENCY_TABLE="+table, "--allow", "on-failure")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	if got := objects(ctx, t, c); len(got) != 1 || !strings.HasPrefix(got[0], "aws/lambda/") {
		t.Fatalf("objects %v", got)
	}
	if e := effectsByID(t, runEffects); e["k2"] != 0 {
		t.Fatalf("the run's effects %v: k2 should have timed out", e)
	}

	envelopes := filepath.Join(dir, "envelopes.jsonl")
	code, out, errs = runCLIEnv(t, env, "fetch-failed", "--from-bucket", "s3://failed", "--to-file", envelopes, "--quiet")
	if code != 0 || !strings.Contains(out, "fetch-failed from s3://failed/aws/lambda/: 1 on-failure records read, 1 fetched (removed)") ||
		!strings.Contains(out, "0 left") {
		t.Fatalf("fetch-failed: exit %d\n%s\n%s", code, out, errs)
	}
	if got := objects(ctx, t, c); len(got) != 0 {
		t.Fatalf("objects left after fetch-failed: %v", got)
	}

	redriveEffects := filepath.Join(dir, "redrive-effects.jsonl")
	code, out, errs = runCLIEnv(t, env, "redrive", "--from-file", envelopes, "--batch-size", "10", "--handler", bin, "--quiet",
		"--timeout", "10s", "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_IDEMPOTENCY_TABLE="+table, "--env", "SLUICE_EFFECTS_FILE="+redriveEffects)
	if code != 0 || !strings.Contains(out, "left 0") {
		t.Fatalf("redrive: exit %d\n%s\n%s", code, out, errs)
	}
	want := map[string]int{}
	for i := range n {
		want[fmt.Sprint("k", i)] = 1
	}
	if got := effectsByID(t, runEffects, redriveEffects); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("effects after the redrive: %v, want each once", got)
	}
}

func objects(ctx context.Context, t *testing.T, c *s3.Client) []string {
	t.Helper()
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("failed")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}
