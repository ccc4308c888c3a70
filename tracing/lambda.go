package tracing

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The environment Lambda and OpenTelemetry set.
const (
	// EnvTraceHeader is Lambda's trace header of the current invocation,
	// in X-Ray's format (Root=...;Parent=...;Sampled=0|1).
	EnvTraceHeader = "_X_AMZN_TRACE_ID"
	// EnvSampler is OpenTelemetry's sampler setting. When it is set, the
	// sampler decides: Lambda's Sampled=0 (active tracing off) does not
	// silence the invocation.
	EnvSampler = "OTEL_TRACES_SAMPLER"
	// EnvFunctionName is the function's name, the invocation span's name.
	EnvFunctionName = "AWS_LAMBDA_FUNCTION_NAME"
)

// traceHeaderKey is the context key aws-lambda-go keeps the invocation's
// trace header under (lambda/invoke_loop.go); the environment variable
// holds it only while the runtime runs one invocation at a time.
const traceHeaderKey = "x-amzn-trace-id"

// lambdaParent returns the span context of Lambda's trace header for the
// invocation of ctx, or an invalid one. An unsampled header (active
// tracing off) is no parent when EnvSampler is set, so the sampler
// decides as for a root span.
func (t *Tracer) lambdaParent(ctx context.Context) trace.SpanContext {
	h, _ := ctx.Value(traceHeaderKey).(string)
	if h == "" {
		h, _ = t.lookupEnv(EnvTraceHeader)
	}
	if h == "" {
		return trace.SpanContext{}
	}
	sc := trace.SpanContextFromContext(xray.Propagator{}.Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": h}))
	if !sc.IsSampled() {
		if v, ok := t.lookupEnv(EnvSampler); ok && strings.TrimSpace(v) != "" {
			return trace.SpanContext{}
		}
	}
	return sc
}

// startInvocation starts the invocation's SERVER span, under Lambda's
// trace header, as the semantic conventions for AWS Lambda describe it.
func (t *Tracer) startInvocation(ctx context.Context, src source, cold bool) (context.Context, trace.Span) {
	name, _ := t.lookupEnv(EnvFunctionName)
	if name == "" {
		name = "lambda"
	}
	attrs := []attribute.KeyValue{src.trigger, semconv.FaaSColdstart(cold), semconv.CloudProviderAWS, semconv.CloudPlatformAWSLambda}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		if lc.AwsRequestID != "" {
			attrs = append(attrs, semconv.FaaSInvocationID(lc.AwsRequestID))
		}
		if arn := lc.InvokedFunctionArn; arn != "" {
			attrs = append(attrs, semconv.AWSLambdaInvokedARN(arn))
			if parts := strings.Split(arn, ":"); len(parts) > 4 && parts[4] != "" {
				attrs = append(attrs, semconv.CloudAccountID(parts[4]))
			}
		}
	}
	pctx := ctx
	if sc := t.lambdaParent(ctx); sc.IsValid() {
		pctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return t.tracer.Start(pctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}
