package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// onlyOrderUnchecked reports whether a summary fails for one reason only:
// a function that writes no effects (a test server standing in for an
// Invoke API) leaves order-per-key not evaluated, and the run never passes.
func onlyOrderUnchecked(out string) bool {
	return strings.Contains(out, "invariant order-per-key: NOT EVALUATED: no effects were given") &&
		strings.Contains(out, "  FAIL: order-per-key not evaluated\n")
}

func conformance(t *testing.T) string {
	return rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunKinesisFile(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":5,
		"BisectBatchOnFunctionError":true,"MaximumRetryAttempts":1,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"DestinationConfig":{"OnFailure":{"Destination":"file://`+filepath.Join(dir, "dlq.jsonl")+`"}}}`)
	var lines []string
	for i := 0; i < 20; i++ {
		action, expect := "ok", ""
		if i == 7 {
			action, expect = "fail", `,"expect":"on-failure"`
		}
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"pk-%d","data":{"id":"r%d","action":%q}%s}`, i%3, i, action, expect))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")
	trace, report, effects := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "report.json"), filepath.Join(dir, "effects.jsonl")
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin,
		"--trace", trace, "--report", report, "--effects", effects, "--env", "SLUICE_SOURCE=kinesis", "--timeout", "10s", "--function-name", "orders")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"kinesis mapping: 20 records", `"functionArn":"arn:aws:lambda:us-east-1:123456789012:function:orders"`, "not processed: line 8 (id r7): on-failure", "invariant no-record-lost: held", "invariant order-per-key: held", "invariant fate-as-expected: held",
		`"condition":"RetryAttemptsExhausted"`, "PASS: the run ended and every check held"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	var rep localtest.Report
	raw, _ := os.ReadFile(report)
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Records != 20 || rep.Totals.OnFailure != 1 || rep.Totals.Processed != 19 || len(rep.OnFailureRecords) != 1 {
		t.Fatalf("report totals %+v", rep.Totals)
	}
	tr, _ := os.ReadFile(trace)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(tr)), "\n") {
		var e localtest.TraceEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.N != n+1 || e.Shard == "" || len(e.IDs) == 0 || e.Result == "" {
			t.Fatalf("trace line %q: %v", line, err)
		}
		n++
	}
	if n != rep.Totals.Invocations {
		t.Fatalf("%d trace lines for %d invocations", n, rep.Totals.Invocations)
	}
	dlq, _ := os.ReadFile(filepath.Join(dir, "dlq.jsonl"))
	if !strings.Contains(string(dlq), `"KinesisBatchInfo"`) {
		t.Fatalf("destination file: %s", dlq)
	}
}

// TestRunReportsLossWhenReportBatchItemFailuresIsOff runs a function that
// reports partial failures although the mapping lacks
// ReportBatchItemFailures (--env overrides what sluice derives from the
// mapping): Lambda deletes the failed message, and the check says so.
func TestRunReportsLossWhenReportBatchItemFailuresIsOff(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"sqs","BatchSize":10}`)
	records := write(t, dir, "records.jsonl", `{"body":{"id":"a","action":"ok"}}
{"body":{"id":"b","action":"fail"}}
`)
	code, out, _ := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs", "--env", "SLUICE_REPORT_BATCH_ITEM_FAILURES=true")
	if code != 1 || !strings.Contains(out, "invariant no-record-lost: VIOLATED") || !strings.Contains(out, "record line 2 (id b)") {
		t.Fatalf("exit %d, want 1 and the lost record named:\n%s", code, out)
	}
	if !strings.Contains(out, "WARNING: Lambda ignored 1 partial batch responses") || !strings.Contains(out, "1 records the function reported as failed") {
		t.Fatalf("the summary must warn about the ignored response:\n%s", out)
	}
}

func TestRunRejectsInvalidMapping(t *testing.T) {
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","MaximumRecordAgeInSeconds":30}`)
	code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", write(t, dir, "r.jsonl", ""), "--handler", "/bin/true")
	if code != 1 || !strings.Contains(errs, "MaximumRecordAgeInSeconds") || !strings.Contains(errs, "AWS would reject") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, _, _ := runCLI(t, "run", "--mapping", mapping); code != 2 {
		t.Fatalf("missing --handler: exit %d", code)
	}
	if code, _, _ := runCLI(t, "bogus"); code != 2 {
		t.Fatal("unknown command must be a usage error")
	}
	if _, err := parseFaults("error=2"); err == nil {
		t.Fatal("a rate above 1 must be rejected")
	}
	if f, err := parseFaults("error=0.1,crash=0.2,timeout=0.3,duplicate=0.4"); err != nil || f.DuplicateRate != 0.4 || f.CrashRate != 0.2 {
		t.Fatalf("%+v %v", f, err)
	}
}

// TestRunSQSEndpoint reads a real SQS queue (fauxqs) with a redrive policy.
func TestRunSQSEndpoint(t *testing.T) {
	bin := conformance(t)
	srv := servers.SQS(t)
	ctx := context.Background()
	client := sqs.NewFromConfig(srv.AWSConfig())
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(servers.UniqueName(t, "q")), Attributes: map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"maxReceiveCount":"2","deadLetterTargetArn":%q}`, attrs.Attributes["QueueArn"]),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, action := range []string{"ok", "fail", "ok", "transient:1"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprintf(`{"id":"m%d","action":%q}`, i, action))}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"sqs","BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],
		"Endpoint":%q,"QueueUrl":%q}`, srv.Endpoint, *q.QueueUrl))
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "5s",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=sqs", "--allow", "dead-lettered")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "processed 3") || !strings.Contains(out, "dead-lettered 1") {
		t.Fatalf("want 3 processed and the failing message in the DLQ:\n%s", out)
	}
}

// TestRunKinesisEndpoint reads a real Kinesis stream (kinesalite).
func TestRunKinesisEndpoint(t *testing.T) {
	bin := conformance(t)
	srv := servers.Kinesis(t)
	ctx := context.Background()
	client := kinesis.NewFromConfig(srv.AWSConfig())
	name := servers.UniqueName(t, "orders")
	if _, err := client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && d.StreamDescriptionSummary.StreamStatus == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not active: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 30; i++ {
		data := fmt.Sprintf(`{"id":"k%d","action":"ok"}`, i)
		if _, err := client.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(name), PartitionKey: aws.String(fmt.Sprint("pk", i%4)), Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":7,
		"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":%q,"StreamName":%q}`, srv.Endpoint, name))
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "5s",
		"--effects", filepath.Join(dir, "effects.jsonl"), "--env", "SLUICE_SOURCE=kinesis")
	if code != 0 || !strings.Contains(out, "30 records") || !strings.Contains(out, "processed 30") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// sigV4Server is a Lambda Invoke endpoint that accepts only requests signed
// with creds for lambda in region; it answers an empty batch-item-failures
// list as AWS does.
func sigV4Server(t *testing.T, creds aws.Credentials, region string) (*httptest.Server, *int, *[]string) {
	t.Helper()
	calls := new(int)
	problems := new([]string)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		*calls++
		if err := checkSigV4(r, body, creds, region); err != nil {
			*problems = append(*problems, err.Error())
			w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"message":%q}`, err.Error())
			return
		}
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.Write([]byte(`{"batchItemFailures":[]}`))
	}))
	t.Cleanup(srv.Close)
	return srv, calls, problems
}

// checkSigV4 recomputes the signature from the signed headers and the body.
func checkSigV4(r *http.Request, body []byte, creds aws.Credentials, region string) error {
	if r.URL.Path != "/2015-03-31/functions/my-fn/invocations" || r.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" {
		return fmt.Errorf("unexpected request %s %s", r.URL.Path, r.Header)
	}
	auth := r.Header.Get("Authorization")
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ", ") {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	if want := creds.AccessKeyID + "/" + date.Format("20060102") + "/" + region + "/lambda/aws4_request"; fields["Credential"] != want {
		return fmt.Errorf("Credential %q, want %q", fields["Credential"], want)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, h := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !slices.Contains(signed, h) {
			return fmt.Errorf("SignedHeaders %v lacks %s", signed, h)
		}
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			req.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "lambda", region, date); err != nil {
		return err
	}
	if req.Header.Get("Authorization") != auth {
		return fmt.Errorf("signature mismatch: got %s, want %s", auth, req.Header.Get("Authorization"))
	}
	return nil
}

// TestRunInvokeOnAWS runs --handler aws:NAME against a test server standing
// in for the Lambda endpoint, with credentials from the environment.
func TestRunInvokeOnAWS(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret/key", SessionToken: "session"}
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", creds.SessionToken)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", "")

	var lines []string
	for i := 0; i < 12; i++ {
		lines = append(lines, fmt.Sprintf(`{"partitionKey":"pk-%d","data":{"id":"r%d"}}`, i%3, i))
	}
	records := write(t, dir, "records.jsonl", strings.Join(lines, "\n")+"\n")

	// The mapping's Region wins over AWS_REGION; the endpoint is the flag.
	srv, calls, problems := sigV4Server(t, creds, "us-east-1")
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":5,
		"FunctionResponseTypes":["ReportBatchItemFailures"],"Region":"us-east-1"}`)
	code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", "aws:my-fn",
		"--invoke-endpoint", srv.URL, "--quiet")
	if code != 1 || !onlyOrderUnchecked(out) || !strings.Contains(out, "processed 12") || *calls == 0 || len(*problems) > 0 {
		t.Fatalf("exit %d, %d calls, problems %v\n%s\n%s", code, *calls, *problems, out, errs)
	}

	// Without a Region in the mapping: AWS_REGION, and AWS_ENDPOINT_URL_LAMBDA.
	srv2, calls2, problems2 := sigV4Server(t, creds, "eu-west-1")
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", srv2.URL)
	mapping2 := write(t, dir, "mapping2.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":5}`)
	code, out, errs = runCLI(t, "run", "--mapping", mapping2, "--records", records, "--handler", "aws:", "--function-name", "my-fn", "--quiet")
	if code != 1 || !onlyOrderUnchecked(out) || !strings.Contains(out, "processed 12") || *calls2 == 0 || len(*problems2) > 0 {
		t.Fatalf("exit %d, %d calls, problems %v\n%s\n%s", code, *calls2, *problems2, out, errs)
	}

	// Wrong credentials: the endpoint refuses, and the run fails.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	code, out, errs = runCLI(t, "run", "--mapping", mapping2, "--records", records, "--handler", "aws:my-fn", "--quiet")
	if code == 0 || !strings.Contains(errs, "InvalidSignatureException") {
		t.Fatalf("wrong key: exit %d\n%s\n%s", code, out, errs)
	}
}

func TestRunNamesOneFunction(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap") // never started: the runs fail before the first invoke
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	records := write(t, dir, "records.jsonl", `{"partitionKey":"k","data":{"id":"r1"}}`+"\n")
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","FunctionName":"billing"}`)
	code, _, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--function-name", "orders", "--quiet")
	if code != 2 || !strings.Contains(errs, "billing") || !strings.Contains(errs, "orders") {
		t.Fatalf("the mapping's FunctionName and --function-name differ: exit %d\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--env", "AWS_LAMBDA_FUNCTION_NAME=orders", "--quiet")
	if code != 1 || !strings.Contains(errs, "billing") || !strings.Contains(errs, "function:orders") {
		t.Fatalf("the mapping's FunctionName and the bootstrap's AWS_LAMBDA_FUNCTION_NAME differ: exit %d\n%s", code, errs)
	}
}

func TestResolveInvokeTarget(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", "")
	for _, c := range []struct {
		handler, fn string
		fnSet       bool
		endpoint    string
		region      string
		want        invokeTarget
		api         bool
		err         string
	}{
		{handler: "./bootstrap", fn: "function"},
		{handler: "./bootstrap", endpoint: "http://x", err: "goes with"},
		{handler: "http://127.0.0.1:3001", fn: "function", api: true, want: invokeTarget{url: "http://127.0.0.1:3001", function: "function"}},
		{handler: "https://lambda.us-east-1.amazonaws.com", fn: "my-fn", region: "eu-west-1", api: true,
			want: invokeTarget{url: "https://lambda.us-east-1.amazonaws.com", function: "my-fn", sign: true, region: "us-east-1"}},
		{handler: "https://vpce-1-a.lambda.eu-central-1.vpce.amazonaws.com/", fn: "my-fn", api: true,
			want: invokeTarget{url: "https://vpce-1-a.lambda.eu-central-1.vpce.amazonaws.com/", function: "my-fn", sign: true, region: "eu-central-1"}},
		{handler: "https://lambda.us-east-1.amazonaws.com", endpoint: "http://x", api: true, err: "goes with"},
		{handler: "aws:my-fn", fn: "function", region: "eu-west-1", api: true, want: invokeTarget{function: "my-fn", sign: true, region: "eu-west-1"}},
		{handler: "aws:my-fn:live", fn: "function", endpoint: "http://127.0.0.1:1", api: true,
			want: invokeTarget{url: "http://127.0.0.1:1", function: "my-fn:live", sign: true}},
		{handler: "aws:arn:aws:lambda:ap-south-1:123456789012:function:f", fn: "function", region: "eu-west-1", api: true,
			want: invokeTarget{function: "arn:aws:lambda:ap-south-1:123456789012:function:f", sign: true, region: "ap-south-1"}},
		{handler: "aws:", fn: "f", fnSet: true, api: true, want: invokeTarget{function: "f", sign: true}},
		{handler: "aws:", fn: "function", api: true, err: "needs the function"},
		{handler: "aws:a", fn: "b", fnSet: true, api: true, err: "different functions"},
	} {
		got, api, err := resolveInvokeTarget(c.handler, c.fn, c.fnSet, c.endpoint, c.region)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || api != c.api {
				t.Errorf("%s: %v %v, want error %q", c.handler, api, err, c.err)
			}
			continue
		}
		if err != nil || api != c.api || got != c.want {
			t.Errorf("%s: %+v %v %v, want %+v %v", c.handler, got, api, err, c.want, c.api)
		}
	}
}

// TestRunKafkaLatest reads a Kafka cluster (kfake) from TRIM_HORIZON and
// from LATEST: a LATEST run started after the records were produced has
// nothing to read.
func TestRunKafkaLatest(t *testing.T) {
	ctx := context.Background()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := 0; i < 5; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf(`{"id":"o%d"}`, i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var offsets []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Records map[string][]struct{ Offset int64 }
		}
		json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		for _, rs := range ev.Records {
			for _, rec := range rs {
				offsets = append(offsets, rec.Offset)
			}
		}
		mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		position string
		want     int
	}{{"TRIM_HORIZON", 5}, {"LATEST", 0}} {
		offsets = nil
		mapping := write(t, dir, c.position+".json", fmt.Sprintf(`{"EventSource":"kafka","StartingPosition":%q,"SelfManaged":true,
			"BatchSize":2,"Endpoint":"kafka://%s","Topic":"orders"}`, c.position, strings.Join(cluster.ListenAddrs(), ",")))
		code, out, errs := runCLI(t, "run", "--mapping", mapping, "--handler", srv.URL, "--quiet")
		if code != 1 || !onlyOrderUnchecked(out) || !strings.Contains(out, fmt.Sprintf("%d records", c.want)) || len(offsets) != c.want {
			t.Fatalf("%s: exit %d, offsets %v\n%s\n%s", c.position, code, offsets, out, errs)
		}
	}
}
