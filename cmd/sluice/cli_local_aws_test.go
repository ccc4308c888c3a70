package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// localExports runs `sluice local start` with the built binary and
// returns its exports; the servers are stopped when the test ends.
func localExports(t *testing.T, bin string, only string) map[string]string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "local.json")
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "local", "start", "--only", only, "--state", state)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice local start: %v\n%s", err, errb.String())
	}
	t.Cleanup(func() {
		stop := exec.Command(bin, "local", "stop", "--state", state)
		if b, err := stop.CombinedOutput(); err != nil {
			t.Errorf("sluice local stop: %v\n%s", err, b)
		}
	})
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 {
			t.Fatalf("stdout line %q is not an export", line)
		}
		exports[k] = v
	}
	return exports
}

// sluiceWith runs the built sluice with the exports in its environment, as
// after eval "$(sluice local start)".
func sluiceWith(t *testing.T, bin string, exports map[string]string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	for k, v := range exports {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func readEffects(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("effects line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// sluice local start serves S3 and SNS (fauxqs) beside SQS and exports
// their endpoints, so that the two walk-throughs of docs/localtest.md
// ("Local AWS servers") run as written: a queue whose large orders the
// SQS Extended Client offloaded to S3 (package largemessage), and an SNS
// topic feeding a queue that feeds a function. Before, the exports named
// no S3 or SNS endpoint and the SDKs went to AWS.
func TestLocalServesLargeMessagesAndSNS(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/cmd/sluice")
	exports := localExports(t, bin, "sqs")
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SNS"} {
		if exports[k] == "" || exports[k] != exports["AWS_ENDPOINT_URL_SQS"] {
			t.Fatalf("%s=%q, want fauxqs's endpoint %q", k, exports[k], exports["AWS_ENDPOINT_URL_SQS"])
		}
	}
	ctx := context.Background()
	cfg := func(endpoint string) aws.Config {
		return aws.Config{Region: exports["AWS_REGION"], BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider(exports["AWS_ACCESS_KEY_ID"], exports["AWS_SECRET_ACCESS_KEY"], "")}
	}
	// Clients built as the SDK's own loader builds them from the exports:
	// no path-style setting, which an IP-address endpoint does not need.
	s3c := s3.NewFromConfig(cfg(exports["AWS_ENDPOINT_URL_S3"]))
	sqsc := sqs.NewFromConfig(cfg(exports["AWS_ENDPOINT_URL_SQS"]))
	snsc := sns.NewFromConfig(cfg(exports["AWS_ENDPOINT_URL_SNS"]))
	queue := func(name string) (url, arn string) {
		q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(q.QueueUrl), a.Attributes["QueueArn"]
	}
	mapping := func(dir, url string) string {
		return write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"sqs","Endpoint":%q,"QueueUrl":%q,"BatchSize":10,
			"FunctionResponseTypes":["ReportBatchItemFailures"]}`, exports["AWS_ENDPOINT_URL_SQS"], url))
	}

	t.Run("large messages", func(t *testing.T) {
		fn := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/large-orders")
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("orders-large")}); err != nil {
			t.Fatal(err)
		}
		lines := make([]string, 20000) // 300 KB: more than SQS takes in a message
		for i := range lines {
			lines[i] = fmt.Sprintf("line %05d of the order", i)
		}
		big, _ := json.Marshal(map[string]any{"id": "o-big", "lines": lines})
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("orders-large"), Key: aws.String("o-big"), Body: bytes.NewReader(big)}); err != nil {
			t.Fatal(err)
		}
		url, _ := queue("orders")
		if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(`{"id":"o-small","lines":["a"]}`)}); err != nil {
			t.Fatal(err)
		}
		_, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url,
			MessageBody:       aws.String(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"orders-large","s3Key":"o-big"}]`),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"ExtendedPayloadSize": {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(len(big)))}}})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		effects := filepath.Join(dir, "effects.jsonl")
		code, out, errs := sluiceWith(t, bin, exports, "run", "--mapping", mapping(dir, url), "--handler", fn, "--effects", effects, "--quiet", "--timeout", "10s")
		if code != 0 || !strings.Contains(out, "processed 2 ") || !strings.Contains(out, "PASS") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		got := map[string]float64{}
		for _, e := range readEffects(t, effects) {
			got[e["id"].(string)] = e["lines"].(float64)
		}
		if got["o-small"] != 1 || got["o-big"] != 20000 || len(got) != 2 {
			t.Fatalf("orders processed %v, want o-small with 1 line and o-big with 20000 read from S3", got)
		}
	})

	t.Run("sns to sqs", func(t *testing.T) {
		fn := conformance(t)
		topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("order-events")})
		if err != nil {
			t.Fatal(err)
		}
		url, arn := queue("order-events")
		if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn)}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			msg := string(command(fmt.Sprintf("n%d", i+1), "ok"))
			if _, err := snsc.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(msg)}); err != nil {
				t.Fatal(err)
			}
		}
		dir := t.TempDir()
		effects := filepath.Join(dir, "effects.jsonl")
		var code int
		var out, errs string
		// SNS delivers to the queue on its own time: wait for the three.
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			a, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
			if err == nil && a.Attributes["ApproximateNumberOfMessages"] == "3" || time.Now().After(end) {
				break
			}
		}
		code, out, errs = sluiceWith(t, bin, exports, "run", "--mapping", mapping(dir, url), "--handler", fn, "--effects", effects, "--quiet",
			"--env", "SLUICE_SOURCE=sqs-sns")
		if code != 0 || !strings.Contains(out, "processed 3 ") || !strings.Contains(out, "PASS") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		var ids []string
		for _, e := range readEffects(t, effects) {
			ids = append(ids, e["id"].(string))
			if e["key"] != aws.ToString(topic.TopicArn) {
				t.Errorf("effect %v: the key is not the topic the notification came from", e)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"n1", "n2", "n3"}) {
			t.Fatalf("messages processed %v, want n1, n2, n3 out of the SNS envelopes", ids)
		}
	})
}

// sluice tables create against DynamoDB Local, on tables that exist
// already (as before every local run): no SDK warning that a response "did
// not match expected checksum". DynamoDB Local's error answers carry no
// X-Amz-Crc32, which the SDK compared with 0 (internal/ddbchecksum).
func TestTablesCreateDoesNotWarnOnDynamoDBLocal(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/cmd/sluice")
	srv := servers.DynamoDB(t)
	idem, attempts := servers.UniqueName(t, "idem"), servers.UniqueName(t, "attempts")
	for i := range 2 {
		cmd := exec.Command(bin, "tables", "create", "--idempotency", idem, "--attempts", attempts)
		cmd.Env = append(os.Environ(), awsEnv(srv)...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "checksum") || strings.Contains(string(out), "WARN") {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
	}
}
