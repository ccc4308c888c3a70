package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/sluicehq/sluice/handlers"
)

// OpenTelemetry's standard environment, as FromEnv reads it.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvServiceName    = "OTEL_SERVICE_NAME"
)

// Setup is tracing set up from the environment (FromEnv).
type Setup struct {
	provider *sdktrace.TracerProvider // nil: tracing is off
	tracer   *Tracer
}

// FromEnv sets tracing up as OpenTelemetry's environment variables say,
// for a function's main. Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; spans go over OTLP with
// HTTP and protobuf (the only OTEL_EXPORTER_OTLP_PROTOCOL accepted:
// http/protobuf, the default), to a collector such as the ADOT Lambda
// layer's on localhost. The exporter reads the rest of OTEL_EXPORTER_OTLP_*
// (headers, timeout, compression); the SDK reads OTEL_TRACES_SAMPLER and
// OTEL_BSP_*; the resource has OTEL_SERVICE_NAME (default: the function's
// name), OTEL_RESOURCE_ATTRIBUTES and the function's faas.* and cloud.*
// attributes. When OTEL_TRACES_SAMPLER is set it decides even when
// Lambda's trace header says Sampled=0 (active tracing off).
//
// Spans are batched and flushed at the end of each invocation; the
// batcher blocks rather than drop a span when its queue is full.
func FromEnv(ctx context.Context) (*Setup, error) {
	return fromEnv(ctx, os.LookupEnv)
}

func fromEnv(ctx context.Context, lookupEnv func(string) (string, bool)) (*Setup, error) {
	get := func(k string) string { v, _ := lookupEnv(k); return strings.TrimSpace(v) }
	if get(EnvEndpoint) == "" && get(EnvTracesEndpoint) == "" {
		return &Setup{}, nil
	}
	for _, k := range []string{EnvTracesProtocol, EnvProtocol} {
		if p := get(k); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("tracing: %s=%q: Sluice exports traces over OTLP with http/protobuf only; set %s=http/protobuf "+
					"(the ADOT collector and Jaeger accept it on port 4318)", k, p, k)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := lambdaResource(ctx, get)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBlocking()),
		sdktrace.WithResource(res),
	)
	return &Setup{provider: tp, tracer: New(WithTracerProvider(tp), withLookupEnv(lookupEnv))}, nil
}

// lambdaResource is the function's resource: what Lambda's environment
// says of it, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func lambdaResource(ctx context.Context, get func(string) string) (*resource.Resource, error) {
	fn := get(EnvFunctionName)
	service := fn
	if service == "" {
		service = "sluice"
	}
	attrs := append(make([]attribute.KeyValue, 0, 8), semconv.ServiceName(service), semconv.CloudProviderAWS, semconv.CloudPlatformAWSLambda)
	if fn != "" {
		attrs = append(attrs, semconv.FaaSName(fn))
	}
	if v := get("AWS_LAMBDA_FUNCTION_VERSION"); v != "" {
		attrs = append(attrs, semconv.FaaSVersion(v))
	}
	if v := get("AWS_REGION"); v != "" {
		attrs = append(attrs, semconv.CloudRegion(v))
	}
	if v := get("AWS_LAMBDA_LOG_STREAM_NAME"); v != "" {
		attrs = append(attrs, semconv.FaaSInstance(v))
	}
	// Later detectors win: the environment's service name over the
	// function's.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	return res, nil
}

// Enabled reports whether the environment turned tracing on.
func (s *Setup) Enabled() bool { return s.provider != nil }

// Options returns the handler options that trace (tracing.On with the
// environment's provider), or none when tracing is off.
func (s *Setup) Options() []handlers.Option {
	if s.provider == nil {
		return nil
	}
	return []handlers.Option{handlers.WithTracer(s.tracer)}
}

// Provider returns the tracer provider, for spans of the function's own
// (nil when tracing is off).
func (s *Setup) Provider() *sdktrace.TracerProvider { return s.provider }

// Shutdown flushes and stops the exporter.
func (s *Setup) Shutdown(ctx context.Context) error {
	if s.provider == nil {
		return nil
	}
	return errors.Join(s.provider.Shutdown(ctx))
}
