// Package lambdalog is the logger of a handler built without one: Lambda's
// advanced logging controls, as the environment gives them to the
// function, read into a slog.Logger. Imported by handlers only, whose
// EnvLogFormat and EnvLogLevel spell the same names.
package lambdalog

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// The environment variables of Lambda's advanced logging controls.
const (
	EnvFormat = "AWS_LAMBDA_LOG_FORMAT" // "JSON" or "Text" (the default)
	EnvLevel  = "AWS_LAMBDA_LOG_LEVEL"  // TRACE, DEBUG, INFO (the default), WARN, ERROR or FATAL
)

// New returns JSON or text on w, as AWS_LAMBDA_LOG_FORMAT says, at the
// level AWS_LAMBDA_LOG_LEVEL names; with an error, and at INFO, when that
// is not a level.
func New(lookupEnv func(string) (string, bool), w io.Writer) (*slog.Logger, error) {
	level := slog.LevelInfo
	var err error
	if v, ok := lookupEnv(EnvLevel); ok && v != "" {
		var known bool
		if level, known = Level(v); !known {
			level = slog.LevelInfo
			err = fmt.Errorf("%s=%q is not a Lambda log level: want TRACE, DEBUG, INFO, WARN, ERROR or FATAL", EnvLevel, v)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if v, _ := lookupEnv(EnvFormat); strings.EqualFold(v, "JSON") {
		return slog.New(slog.NewJSONHandler(w, opts)), err
	}
	return slog.New(slog.NewTextHandler(w, opts)), err
}

// Level maps Lambda's log level names, in any case, to slog levels.
func Level(name string) (slog.Level, bool) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "TRACE":
		return slog.LevelDebug - 4, true
	case "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN":
		return slog.LevelWarn, true
	case "ERROR":
		return slog.LevelError, true
	case "FATAL":
		return slog.LevelError + 4, true
	}
	return 0, false
}
