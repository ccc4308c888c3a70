package handlers

// The environment variables of Lambda's advanced logging controls, which the
// default logger follows.
const (
	// EnvLogFormat is "JSON" or "Text" (the default).
	EnvLogFormat = "AWS_LAMBDA_LOG_FORMAT"
	// EnvLogLevel is TRACE, DEBUG, INFO (the default), WARN, ERROR or FATAL.
	EnvLogLevel = "AWS_LAMBDA_LOG_LEVEL"
)
