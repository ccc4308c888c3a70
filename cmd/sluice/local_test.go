package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluicehq/sluice/internal/testsupport/rie"
)

// sluice local start runs the servers in the background on 127.0.0.1 and
// prints exports an SDK client works with; env prints them again; stop
// stops the process and its servers.
func TestLocalStartStop(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/cmd/sluice")
	state := filepath.Join(t.TempDir(), "local.json")
	run := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append(args, "--state", state)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, errs, err := run("local", "start", "--only", "sqs,kinesis")
	if err != nil {
		t.Fatalf("start: %v\n%s\n%s", err, out, errs)
	}
	st, ok := runningState(state)
	if !ok {
		t.Fatalf("no running state after start:\n%s", errs)
	}
	t.Cleanup(func() { _ = stopPID(st.PID, 10*time.Second) }) // if the test fails before stop
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kv, ok := strings.CutPrefix(line, "export ")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 {
			t.Fatalf("stdout line %q is not an export", line)
		}
		exports[k] = v
	}
	for _, k := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_KINESIS", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if exports[k] == "" {
			t.Errorf("no export of %s:\n%s", k, out)
		}
	}
	if ep := exports["AWS_ENDPOINT_URL_SQS"]; !strings.HasPrefix(ep, "http://127.0.0.1:") {
		t.Fatalf("SQS endpoint %q is not on 127.0.0.1", ep)
	}
	if _, ok := exports["AWS_ENDPOINT_URL_DYNAMODB"]; ok {
		t.Errorf("--only sqs,kinesis started DynamoDB:\n%s", out)
	}
	client := sqs.NewFromConfig(aws.Config{Region: exports["AWS_REGION"], BaseEndpoint: aws.String(exports["AWS_ENDPOINT_URL_SQS"]),
		Credentials: credentials.NewStaticCredentialsProvider(exports["AWS_ACCESS_KEY_ID"], exports["AWS_SECRET_ACCESS_KEY"], "")})
	if _, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("orders-dlq")}); err != nil {
		t.Fatalf("CreateQueue with the exports: %v", err)
	}

	again, errs, err := run("local", "env")
	if err != nil || again != out {
		t.Fatalf("env: %v\n%s\nwant the same exports as start:\n%s\n%s", err, again, out, errs)
	}
	if o, errs, err := run("local", "start"); err != nil || o != out || !strings.Contains(errs, "already running") {
		t.Fatalf("a second start: %v\n%s\n%s", err, o, errs)
	}

	if _, errs, err := run("local", "stop"); err != nil || !strings.Contains(errs, "stopped") {
		t.Fatalf("stop: %v\n%s", err, errs)
	}
	if alive(st.PID) {
		t.Fatalf("pid %d still runs after stop", st.PID)
	}
	if _, err := http.Get(exports["AWS_ENDPOINT_URL_SQS"]); err == nil {
		t.Fatal("the SQS server still answers after stop")
	}
	if _, errs, err := run("local", "env"); err == nil || !strings.Contains(errs, "sluice local start") {
		t.Fatalf("env after stop: %v\n%s", err, errs)
	}
}

// TestLocalKinds: sluice local runs the AWS API servers, by default all
// three; Redis (which internal/localaws also starts, for the Redis store's
// tests) is not one of them, so a machine without redis-server can start.
func TestLocalKinds(t *testing.T) {
	all, err := parseKinds("")
	if err != nil || fmt.Sprint(all) != "[dynamodb kinesis sqs]" {
		t.Fatalf("default kinds %v, %v; want [dynamodb kinesis sqs]", all, err)
	}
	if got, err := parseKinds("sqs, dynamodb"); err != nil || fmt.Sprint(got) != "[sqs dynamodb]" {
		t.Fatalf("--only sqs,dynamodb: %v, %v", got, err)
	}
	if _, err := parseKinds("redis"); err == nil || !strings.Contains(err.Error(), "not one of dynamodb, kinesis, sqs") {
		t.Fatalf("--only redis: %v, want it refused naming the servers", err)
	}
}

// sluice local -h (and sluice local alone) lists the flags with the
// subcommands; before, it printed "Flags:" and none.
func TestLocalHelpListsFlags(t *testing.T) {
	for _, args := range [][]string{{"local", "-h"}, {"local"}, {"local", "start", "-h"}} {
		code, _, errs := runCLI(t, args...)
		if code != 2 || !strings.Contains(errs, "-only string") || !strings.Contains(errs, "-state string") || !strings.Contains(errs, "AWS_ENDPOINT_URL") {
			t.Errorf("%v: exit %d\n%s", args, code, errs)
		}
	}
}

func TestLocalUsage(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"local"}}, {[]string{"local", "begin"}}, {[]string{"local", "start", "--only", "s3"}},
	} {
		if code, _, errs := runCLI(t, tc.args...); code != 2 || !strings.Contains(errs, "sluice local") {
			t.Errorf("%v: exit %d\n%s", tc.args, code, errs)
		}
	}
}

// An SDK error for lack of credentials or of an answering endpoint says
// what is missing and how to fix it; any other error is left alone.
func TestAWSHint(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1")
	for _, tc := range []struct {
		err  string
		want []string // "" wants the error unchanged
	}{
		{"operation error DynamoDB: CreateTable, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found",
			[]string{"No AWS credentials were found for DynamoDB at AWS", "AWS_ENDPOINT_URL_DYNAMODB", `eval "$(sluice local start)"`, "AWS_PROFILE"}},
		{`operation error SQS: ReceiveMessage, https response error StatusCode: 0, request send failed, Post "http://127.0.0.1:1/": dial tcp 127.0.0.1:1: connect: connection refused`,
			[]string{"Nothing answers at http://127.0.0.1:1 (AWS_ENDPOINT_URL_SQS)", "sluice local start"}},
		{"operation error DynamoDB: CreateTable, ResourceInUseException: table exists", nil},
	} {
		got := awsHint(errors.New(tc.err))
		if tc.want == nil {
			if got.Error() != tc.err {
				t.Errorf("%q became %q", tc.err, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("hint for %q lacks %q:\n%v", tc.err, w, got)
			}
		}
	}
	if awsHint(nil) != nil {
		t.Error("awsHint(nil) is not nil")
	}
}

// sluice tables create against an endpoint where nothing listens says so,
// and how to start the local servers.
func TestTablesCreateNoServer(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	code, _, errs := runCLI(t, "tables", "create", "--idempotency", "x", "--timeout", "20s")
	if code != 1 || !strings.Contains(errs, "Nothing answers at http://127.0.0.1:1") || !strings.Contains(errs, "sluice local start") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}
