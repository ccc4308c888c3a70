package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/internal/lambdalog"
)

func envOf(vars map[string]string) Option {
	return withLookupEnv(func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	})
}

// logLines runs a two-record Kinesis batch whose second record fails once
// transiently and then for good, with the default logger configured by env.
func logLines(t *testing.T, env map[string]string) []string {
	t.Helper()
	raw, _ := kinesisTestEvent("ok", "fail")
	var buf bytes.Buffer
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		if r.Value.Action == "fail" {
			return batch.Transient(errors.New("busy"))
		}
		return nil
	}, envOf(env), withLogOutput(&buf),
		WithRetry(batch.RetryPolicy{Retries: 1, Backoff: batch.Exponential(time.Microsecond)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")
}

func TestDefaultLogFormat(t *testing.T) {
	for _, tt := range []struct {
		format string
		json   bool
	}{{"", false}, {"Text", false}, {"JSON", true}, {"json", true}} {
		t.Run("format="+tt.format, func(t *testing.T) {
			env := map[string]string{}
			if tt.format != "" {
				env[EnvLogFormat] = tt.format
			}
			lines := logLines(t, env)
			if len(lines) != 2 {
				t.Fatalf("want a failure line and a summary at INFO, got %q", lines)
			}
			for _, l := range lines {
				var m map[string]any
				isJSON := json.Unmarshal([]byte(l), &m) == nil
				if isJSON != tt.json {
					t.Fatalf("line %q: JSON %v, want %v", l, isJSON, tt.json)
				}
				if !tt.json && !strings.Contains(l, "level=") {
					t.Fatalf("text line without a level: %q", l)
				}
			}
		})
	}
}

func TestDefaultLogLevel(t *testing.T) {
	for _, tt := range []struct {
		level string
		want  []string // messages, in order
	}{
		{"", []string{"sluice: record failed", "sluice: batch done"}},
		{"INFO", []string{"sluice: record failed", "sluice: batch done"}},
		{"debug", []string{"sluice: record failed transiently, retrying", "sluice: record failed", "sluice: batch done"}},
		{"TRACE", []string{"sluice: record failed transiently, retrying", "sluice: record failed", "sluice: batch done"}},
		{"Warn", []string{"sluice: record failed", "sluice: batch done"}}, // a batch with a failure logs its summary at WARN
		{"ERROR", []string{"sluice: record failed"}},
		{"FATAL", nil},
	} {
		t.Run("level="+tt.level, func(t *testing.T) {
			env := map[string]string{EnvLogFormat: "JSON"}
			if tt.level != "" {
				env[EnvLogLevel] = tt.level
			}
			var got []string
			for _, l := range logLines(t, env) {
				if l == "" {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m["msg"].(string))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("logged %q, want %q", got, tt.want)
			}
		})
	}
	_, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil }, envOf(map[string]string{EnvLogLevel: "LOUD"}))
	if err == nil || !strings.Contains(err.Error(), EnvLogLevel) {
		t.Fatalf("an unknown level must be a construction error naming %s: %v", EnvLogLevel, err)
	}
	// WithLogger wins over the environment, even over a bad value.
	if _, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil },
		envOf(map[string]string{EnvLogLevel: "LOUD"}), WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}
}

func TestRetriesAreLoggedAndCounted(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "flaky", "ok")
	var buf bytes.Buffer
	calls := 0
	var rep BatchReport
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		if r.Value.Action == "flaky" {
			calls++
			if calls <= 2 {
				return batch.Transient(errors.New("throttled"))
			}
		}
		return nil
	}, withLookupEnv(noEnv), WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Millisecond)}),
		WithOnBatch(func(ctx context.Context, r BatchReport) { rep = r }))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
		t.Fatalf("%s %v", out, err)
	}
	var retries []map[string]any
	var sum map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		switch m["msg"] {
		case "sluice: record failed transiently, retrying":
			retries = append(retries, m)
		case "sluice: batch done":
			sum = m
		}
	}
	if len(retries) != 2 {
		t.Fatalf("want two retry lines, got:\n%s", buf.String())
	}
	for n, m := range retries {
		if m["level"] != "DEBUG" || m["record"] != seqs[1] || m["attempt"] != float64(n+1) || m["error"] != "throttled" ||
			m["wait"] != float64(time.Millisecond<<n) || m["source"] != "kinesis" {
			t.Fatalf("retry line %d: %v", n+1, m)
		}
	}
	if sum["retries"] != 2.0 {
		t.Fatalf("the summary should count 2 retries: %v", sum)
	}
	if len(rep.Records) != 3 || rep.Records[0].Attempts != 1 || rep.Records[1].Attempts != 3 || rep.Records[2].Attempts != 1 {
		t.Fatalf("attempts in the report: %+v", rep.Records)
	}
}

func TestUserOnRetryStillCalled(t *testing.T) {
	raw, _ := kinesisTestEvent("flaky")
	var seen []int
	var rep BatchReport
	calls := 0
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		if calls++; calls == 1 {
			return batch.Transient(errors.New("throttled"))
		}
		return nil
	}, opts(WithRetry(batch.RetryPolicy{Retries: 1, Backoff: batch.Exponential(time.Microsecond),
		OnRetry: func(ctx context.Context, attempt int, err error, wait time.Duration) { seen = append(seen, attempt) }}),
		WithOnBatch(func(ctx context.Context, r BatchReport) { rep = r }))...)
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != 1 || rep.Records[0].Attempts != 2 {
		t.Fatalf("user hook saw %v; attempts %d", seen, rep.Records[0].Attempts)
	}
}

// TestLogEnvSpelledOnce keeps the public names of Lambda's logging
// variables equal to those the default logger reads.
func TestLogEnvSpelledOnce(t *testing.T) {
	if EnvLogFormat != lambdalog.EnvFormat || EnvLogLevel != lambdalog.EnvLevel {
		t.Fatalf("handlers spells %q and %q, lambdalog %q and %q", EnvLogFormat, EnvLogLevel, lambdalog.EnvFormat, lambdalog.EnvLevel)
	}
}
