package main

import (
	"bytes"
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/tracing"
)

// With tracing on, each of the demo's batches is a batch span with a span
// per record, and its output is the same.
func TestDemoTraced(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var plain, traced bytes.Buffer
	if err := run(&plain, "all", ""); err != nil {
		t.Fatal(err)
	}
	if err := run(&traced, "all", "", tracing.On(tracing.WithTracerProvider(tp))); err != nil {
		t.Fatal(err)
	}
	if plain.String() != traced.String() {
		t.Errorf("tracing changed the demo's output:\n%s\nvs\n%s", plain.String(), traced.String())
	}
	batches, records := 0, 0
	for _, s := range sr.Ended() {
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "messaging.batch.message_count":
				batches++
			case "messaging.message.id":
				records++
			}
		}
	}
	// Kinesis, SQS, and the SQS batch twice; eight orders each.
	if batches != 4 || records != 32 {
		t.Errorf("%d batch spans and %d record spans, want 4 and 32", batches, records)
	}
}
