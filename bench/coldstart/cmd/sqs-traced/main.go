// Command sqs-traced is the sqs bootstrap with tracing on (package
// tracing, an OpenTelemetry SDK provider exporting over OTLP/HTTP), for the
// cold start guard and benchmark in bench/coldstart: what linking and
// setting up OpenTelemetry adds to a cold start.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/tracing"
)

type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
}

func main() {
	// As tracing.FromEnv builds it; the exporter connects on its first
	// export, not here.
	exp, err := otlptracehttp.New(context.Background())
	if err != nil {
		panic(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()))
	lambda.Start(handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[order]) error { return nil },
		tracing.On(tracing.WithTracerProvider(tp))))
}
