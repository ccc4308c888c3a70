package infra

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// Consumer.Trace sets OpenTelemetry's environment, the collector layer, the
// X-Ray permissions, and active tracing when no sampler decides.
func TestTrace(t *testing.T) {
	app := awscdk.NewApp(nil)
	s := awscdk.NewStack(app, jsii.String("Tracing"), nil)
	const layer = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
	c := NewQueueConsumer(s, jsii.String("Jobs"), &QueueConsumerProps{Function: fn()})
	c.Trace(&TracingOptions{CollectorLayerArn: jsii.String(layer), ServiceName: jsii.String("jobs")})
	d := NewQueueConsumer(s, jsii.String("Sampled"), &QueueConsumerProps{Function: fn()})
	d.Trace(&TracingOptions{Endpoint: jsii.String("http://collector.internal:4318"), Sampler: jsii.String("always_on"), XRay: jsii.Bool(false)})
	tmpl := assertions.Template_FromStack(s, nil)
	check := func(what string, f func()) {
		t.Helper()
		if err := catch(f); err != "" {
			t.Errorf("%s: %s", what, err)
		}
	}
	check("collector layer, environment, active tracing", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Layers": []any{layer},
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				"OTEL_EXPORTER_OTLP_ENDPOINT": DefaultOTLPEndpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				"OTEL_SERVICE_NAME":           "jobs",
			})},
			"TracingConfig": map[string]any{"Mode": "Active"},
		})
	})
	check("a sampler instead of active tracing", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Layers": assertions.Match_Absent(),
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector.internal:4318",
				"OTEL_TRACES_SAMPLER":         "always_on",
			})},
			"TracingConfig": assertions.Match_Absent(),
		})
	})
	check("X-Ray permissions", func() {
		tmpl.ResourcePropertiesCountIs(jsii.String("AWS::IAM::Policy"), map[string]any{
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Action": []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}})})},
		}, jsii.Number(1))
	})
}
