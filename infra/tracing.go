package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// DefaultOTLPEndpoint is where a collector layer (the ADOT collector's)
// receives OTLP over HTTP, beside the function.
const DefaultOTLPEndpoint = "http://localhost:4318"

// TracingOptions turn on a consumer's traces (Consumer.Trace). The
// function must build its handler with the options of
// github.com/sluicehq/sluice/tracing's FromEnv, which reads what these set.
type TracingOptions struct {
	// CollectorLayerArn is a Lambda layer that runs an OpenTelemetry
	// collector beside the function, such as the AWS Distro for
	// OpenTelemetry collector layer (aws-otel-collector-<arch>-ver-...),
	// which receives OTLP on localhost:4318 and, in its default
	// configuration, exports to AWS X-Ray. Optional: without it, Endpoint
	// names a collector the function reaches over its network.
	CollectorLayerArn *string
	// CollectorConfig is the collector layer's configuration
	// (OPENTELEMETRY_COLLECTOR_CONFIG_URI: a file in the function's
	// package, or an s3:// URI); default the layer's own.
	CollectorConfig *string
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT: default DefaultOTLPEndpoint.
	Endpoint *string
	// ServiceName is OTEL_SERVICE_NAME: default the function's name.
	ServiceName *string
	// Sampler is OTEL_TRACES_SAMPLER (always_on, traceidratio, ...), with
	// SamplerArg as OTEL_TRACES_SAMPLER_ARG. When it is set it decides,
	// whatever Lambda's trace header says; when it is not, Lambda's
	// active tracing is turned on and its sampling decides.
	Sampler    *string
	SamplerArg *string
	// XRay grants the function's role what an X-Ray exporter needs
	// (xray:PutTraceSegments, xray:PutTelemetryRecords): default true,
	// as the ADOT collector's default configuration exports to X-Ray.
	XRay *bool
}

// Trace turns traces on for the consumer's function: OpenTelemetry's
// environment (OTLP over HTTP and protobuf to the endpoint, the service
// name, the sampler), the collector layer, and the permissions its
// exporter needs. See package tracing in the Sluice module for the spans.
func (c *Consumer) Trace(o *TracingOptions) {
	if o == nil {
		o = &TracingOptions{}
	}
	fn := c.Function
	set := func(k string, v *string, def string) {
		if v != nil && *v != "" {
			fn.AddEnvironment(jsii.String(k), v, nil)
		} else if def != "" {
			fn.AddEnvironment(jsii.String(k), jsii.String(def), nil)
		}
	}
	set("OTEL_EXPORTER_OTLP_ENDPOINT", o.Endpoint, DefaultOTLPEndpoint)
	set("OTEL_EXPORTER_OTLP_PROTOCOL", nil, "http/protobuf")
	set("OTEL_SERVICE_NAME", o.ServiceName, "")
	set("OTEL_TRACES_SAMPLER", o.Sampler, "")
	set("OTEL_TRACES_SAMPLER_ARG", o.SamplerArg, "")
	if o.CollectorLayerArn != nil && *o.CollectorLayerArn != "" {
		fn.AddLayers(awslambda.LayerVersion_FromLayerVersionArn(c.Construct, jsii.String("TracingCollector"), o.CollectorLayerArn))
		set("OPENTELEMETRY_COLLECTOR_CONFIG_URI", o.CollectorConfig, "")
	}
	active := o.Sampler == nil || *o.Sampler == ""
	if active {
		fn.Node().DefaultChild().(awslambda.CfnFunction).SetTracingConfig(&awslambda.CfnFunction_TracingConfigProperty{Mode: jsii.String("Active")})
	}
	if active || o.XRay == nil || *o.XRay {
		c.Role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("xray:PutTraceSegments", "xray:PutTelemetryRecords"),
			Resources: jsii.Strings("*"), // X-Ray has no resource-level permissions for these
		}))
	}
}
