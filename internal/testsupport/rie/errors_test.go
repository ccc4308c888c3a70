package rie

import (
	"strings"
	"testing"
	"time"
)

func TestParseFunctionError(t *testing.T) {
	for _, tc := range []struct {
		status   int
		body     string
		wantType string // "" means not a function error
	}{
		{200, `{"errorMessage":"boom","errorType":"errorString"}`, "errorString"},
		{502, `{"errorType":"Runtime.ExitError","errorMessage":"RequestId: x Error: Runtime exited"}`, "Runtime.ExitError"},
		{502, `{"errorMessage":"a","errorType":"string","stackTrace":[]}`, "string"},
		{200, `Task timed out after 3.00 seconds`, ErrorTypeTimeout},
		{200, `{"errorMessage":"m","errorType":"t","other":1}`, ""},
		{200, `{"ok":true}`, ""},
		{200, `"errorMessage"`, ""},
		{502, `upstream failure`, ""},
	} {
		fe, ok := parseFunctionError(tc.status, []byte(tc.body))
		if ok {
			if fe.Type != tc.wantType || fe.StatusCode != tc.status {
				t.Errorf("parseFunctionError(%d, %s) = %+v, want type %q", tc.status, tc.body, fe, tc.wantType)
			}
		} else if tc.wantType != "" {
			t.Errorf("parseFunctionError(%d, %s): not recognised, want type %q", tc.status, tc.body, tc.wantType)
		}
	}
}

func TestOptions(t *testing.T) {
	cfg := config{env: map[string]string{}, timeout: defaultTimeout}
	for _, o := range []Option{Timeout(1500 * time.Millisecond), Timeout(0), Env("AWS_LAMBDA_FUNCTION_TIMEOUT", "3"), Env("AWS_LAMBDA_MAX_CONCURRENCY", "2"), Env("A", "1")} {
		o(&cfg)
	}
	if len(cfg.errs) != 4 {
		t.Errorf("errors = %q, want 4", cfg.errs)
	}
	env := strings.Join(cfg.environ(), "\n")
	for _, want := range []string{"A=1", "AWS_LAMBDA_FUNCTION_TIMEOUT=30", "AWS_REGION=us-east-1", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("environ lacks %s:\n%s", want, env)
		}
	}
}
