package invoke

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// The test binary doubles as a Lambda function for the cases the
// conformance handler cannot produce (it honours its deadline and recovers
// panics): run with testFunctionEnv=<mode> it serves the Runtime API named
// by AWS_LAMBDA_RUNTIME_API instead of running tests.
const testFunctionEnv = "LOCALTEST_TEST_FUNCTION"

func init() {
	if mode := os.Getenv(testFunctionEnv); mode != "" {
		runTestFunction(mode)
		os.Exit(0)
	}
}

// envReport is what the "env" mode answers.
type envReport struct {
	Env         []string `json:"env"`
	RemainingMS int64    `json:"remainingMs"`
	RequestID   string   `json:"requestId"`
	ARN         string   `json:"arn"`
	PID         int      `json:"pid"`
	Dir         string   `json:"dir"`
	TraceID     string   `json:"traceId"`
}

type handlerFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// meet is the "meet:<dir>" payload: the process leaves a file named by
// its pid in dir, then waits (until its deadline) for a second process to
// do the same, and answers its pid: two invocations that both answer ran
// at the same time, in two processes.
func meet(ctx context.Context, dir string) ([]byte, error) {
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, pid), nil, 0o644); err != nil {
		return nil, err
	}
	for {
		if names, _ := os.ReadDir(dir); len(names) >= 2 {
			return []byte(pid), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pid %s met no other process: %w", pid, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// runTestFunction runs the test function. Payloads: "meet:<dir>" (see
// meet); "hang" starts a
// grandchild (printing its pid) and never returns, ignoring its deadline;
// "panic" panics; "exit" exits with status 3; "big" answers 7 MB; "env"
// answers an envReport; anything else is echoed. Mode "initerror" posts
// /runtime/init/error and waits to be killed; mode "sleep" only sleeps (the
// grandchild).
func runTestFunction(mode string) {
	switch mode {
	case "sleep":
		time.Sleep(time.Minute)
		return
	case "initerror":
		api := os.Getenv("AWS_LAMBDA_RUNTIME_API")
		req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error",
			strings.NewReader(`{"errorMessage":"cannot start","errorType":"Runtime.TestInitError"}`))
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.TestInitError")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			fmt.Println("init/error:", resp.Status)
			resp.Body.Close()
		}
		time.Sleep(time.Minute)
		return
	}
	lambda.Start(handlerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		if dir, ok := strings.CutPrefix(string(payload), "meet:"); ok {
			return meet(ctx, dir)
		}
		switch string(payload) {
		case "hang":
			self, _ := os.Executable()
			gc := exec.Command(self)
			gc.Env = []string{testFunctionEnv + "=sleep"}
			if err := gc.Start(); err != nil {
				return nil, err
			}
			fmt.Printf("grandchild %d\n", gc.Process.Pid)
			select {}
		case "panic":
			panic("asked to panic")
		case "exit":
			os.Exit(3)
		case "big":
			return []byte(`"` + strings.Repeat("x", 7<<20) + `"`), nil
		case "env":
			lc, _ := lambdacontext.FromContext(ctx)
			dl, _ := ctx.Deadline()
			dir, _ := os.Getwd()
			tr, _ := ctx.Value("x-amzn-trace-id").(string)
			return json.Marshal(envReport{Env: os.Environ(), RemainingMS: time.Until(dl).Milliseconds(),
				RequestID: lc.AwsRequestID, ARN: lc.InvokedFunctionArn, PID: os.Getpid(), Dir: dir, TraceID: tr})
		}
		return payload, nil
	}))
}
