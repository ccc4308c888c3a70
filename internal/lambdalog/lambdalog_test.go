package lambdalog

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestLevel(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  slog.Level
		known bool
	}{
		{"TRACE", slog.LevelDebug - 4, true}, {"debug", slog.LevelDebug, true}, {" Info ", slog.LevelInfo, true},
		{"WARN", slog.LevelWarn, true}, {"error", slog.LevelError, true}, {"FATAL", slog.LevelError + 4, true},
		{"WARNING", 0, false}, {"", 0, false}, {"LOUD", 0, false},
	} {
		if got, known := Level(c.name); got != c.want || known != c.known {
			t.Errorf("Level(%q) = %v, %v; want %v, %v", c.name, got, known, c.want, c.known)
		}
	}
}

func TestNew(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		json     bool
		level    slog.Level
		errNames string // the variable a construction error names, "" for none
	}{
		{"defaults", nil, false, slog.LevelInfo, ""},
		{"json at debug", map[string]string{EnvFormat: "json", EnvLevel: "DEBUG"}, true, slog.LevelDebug, ""},
		{"text at error", map[string]string{EnvFormat: "Text", EnvLevel: "ERROR"}, false, slog.LevelError, ""},
		{"an empty level is the default", map[string]string{EnvLevel: ""}, false, slog.LevelInfo, ""},
		{"an unknown level: INFO and an error", map[string]string{EnvFormat: "JSON", EnvLevel: "LOUD"}, true, slog.LevelInfo, EnvLevel},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := New(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }, &buf)
			if (err != nil) != (c.errNames != "") || err != nil && !strings.Contains(err.Error(), c.errNames) {
				t.Fatalf("error %v, want one naming %q", err, c.errNames)
			}
			if l.Enabled(context.Background(), c.level-1) || !l.Enabled(context.Background(), c.level) {
				t.Fatalf("the logger does not start at %v", c.level)
			}
			l.Info("x")
			if json := strings.HasPrefix(buf.String(), "{"); json != c.json && c.level <= slog.LevelInfo {
				t.Fatalf("wrote %q, want JSON %v", buf.String(), c.json)
			}
		})
	}
}
