package tracing

// WithLookupEnv replaces os.LookupEnv (tests).
var WithLookupEnv = withLookupEnv

// FromEnvWith is FromEnv with lookupEnv for os.LookupEnv (tests).
var FromEnvWith = fromEnv
