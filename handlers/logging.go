package handlers

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// The environment variables of Lambda's advanced logging controls, which the
// default logger follows.
const (
	// EnvLogFormat is "JSON" or "Text" (the default).
	EnvLogFormat = "AWS_LAMBDA_LOG_FORMAT"
	// EnvLogLevel is TRACE, DEBUG, INFO (the default), WARN, ERROR or FATAL.
	EnvLogLevel = "AWS_LAMBDA_LOG_LEVEL"
)

// defaultLogger is the logger of a handler built without WithLogger: JSON or
// text on w, as AWS_LAMBDA_LOG_FORMAT says, at the level
// AWS_LAMBDA_LOG_LEVEL names.
func defaultLogger(lookupEnv func(string) (string, bool), w io.Writer) (*slog.Logger, error) {
	level := slog.LevelInfo
	var err error
	if v, ok := lookupEnv(EnvLogLevel); ok && v != "" {
		var known bool
		if level, known = lambdaLogLevel(v); !known {
			level = slog.LevelInfo
			err = fmt.Errorf("%s=%q is not a Lambda log level: want TRACE, DEBUG, INFO, WARN, ERROR or FATAL", EnvLogLevel, v)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if v, _ := lookupEnv(EnvLogFormat); strings.EqualFold(v, "JSON") {
		return slog.New(slog.NewJSONHandler(w, opts)), err
	}
	return slog.New(slog.NewTextHandler(w, opts)), err
}

// lambdaLogLevel maps Lambda's log level names, in any case, to slog levels.
func lambdaLogLevel(name string) (slog.Level, bool) {
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
