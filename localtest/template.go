package localtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest/internal/cfn"
	"github.com/sluicehq/sluice/localtest/internal/sam"
)

// TemplateMapping is an event source mapping read from a template: a
// synthesized CloudFormation template (cdk synth, Sluice's infra
// constructs), a CloudFormation template in YAML, or an AWS SAM template
// (a function's Kinesis, DynamoDB, SQS, MSK or SelfManagedKafka event),
// with what the function it invokes needs: its timeout, memory and
// environment.
type TemplateMapping struct {
	Mapping *Mapping
	// LogicalID is the AWS::Lambda::EventSourceMapping resource's (as SAM
	// generates it for an event: <Function><Event>); FunctionLogicalID the
	// function's it invokes.
	LogicalID         string
	FunctionLogicalID string
	// FunctionTimeout is the function's Timeout; 0 when the template
	// leaves it to Lambda's default (3 s).
	FunctionTimeout time.Duration
	// FunctionMemory is its MemorySize in MB; 0 when the template leaves
	// it to Lambda's default (128).
	FunctionMemory int
	// Architectures is the function's (x86_64 when empty).
	Architectures []string
	// Environment holds the function's variables whose values are
	// literals in the template, or evaluate to one.
	Environment map[string]string
	// Unresolved holds the variables CloudFormation resolves only at
	// deploy (a Ref to a queue or table it names itself), each with what
	// it refers to; a local run must be given their values.
	Unresolved map[string]string
	// StartingPositionTimestamp is the mapping's AT_TIMESTAMP time (zero
	// when it has none).
	StartingPositionTimestamp time.Time
	// Event and EventType are the SAM event the mapping comes from ("" for
	// a mapping written as a resource). Function is its function.
	Event, EventType string
	Function         TemplateFunctionCode
	// Notes say what a local run does instead of what AWS would (the
	// on-failure queue becomes a file) and what the read took that AWS
	// would not (sam local's pseudo parameter values).
	Notes []string
}

// TemplateFunctionCode says where a function's code is, as far as the
// template tells it.
type TemplateFunctionCode struct {
	LogicalID string
	// Serverless reports an AWS::Serverless::Function: sam build writes it
	// to .aws-sam/build/<LogicalID>/ (a Go function's binary is bootstrap).
	Serverless  bool
	Runtime     string
	Handler     string
	PackageType string
}

// TemplateOptions are how a template is read.
type TemplateOptions struct {
	// Parameters are the values of the template's parameters over their
	// defaults, as sam's --parameter-overrides gives them; a pseudo
	// parameter (AWS::Region) may be given too.
	Parameters map[string]string
}

// MappingFromTemplate reads the event source mapping that name designates
// from a template with its parameters' defaults: see ReadTemplateMapping.
func MappingFromTemplate(data []byte, name string) (*TemplateMapping, error) {
	return ReadTemplateMapping(data, name, TemplateOptions{})
}

// ReadTemplateMapping reads the event source mapping that name designates
// from a template (JSON or YAML): the mapping's logical ID; a SAM
// function's event as FUNCTION.EVENT; or the function (its logical ID or
// FunctionName) when it has one mapping. Parameters take their defaults
// or opts' values, conditions and intrinsic functions are evaluated, and
// a SAM event becomes the mapping SAM generates for it. A value only a
// deploy knows (a resource's generated name, an Fn::ImportValue) is an
// error naming it, since the run would not be what deploys; so is a
// property the runner does not know, and one SAM would refuse.
func ReadTemplateMapping(data []byte, name string, opts TemplateOptions) (*TemplateMapping, error) {
	res, err := sam.ReadMapping(data, name, sam.Options{Parameters: opts.Parameters})
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	cm, err := cfn.Read(res.CloudFormation, res.MappingLogicalID, func(raw json.RawMessage) error {
		var fc *FilterCriteria
		return json.Unmarshal(raw, &fc)
	})
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(cm.Fields)
	if err != nil {
		return nil, fmt.Errorf("template: event source mapping %s: %w", cm.LogicalID, err)
	}
	var m Mapping
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("template: event source mapping %s: %w", cm.LogicalID, err)
	}
	tm := &TemplateMapping{Mapping: &m, LogicalID: cm.LogicalID, FunctionLogicalID: cm.FunctionLogicalID,
		FunctionTimeout: cm.FunctionTimeout, FunctionMemory: cm.FunctionMemory, Architectures: cm.Architectures,
		Environment: cm.Environment, Unresolved: cm.Unresolved, Event: res.Event, EventType: res.EventType,
		Function: codeOf(res.Function), Notes: append(res.Notes, cm.Notes...)}
	if want, ok := eventSources[res.EventType]; ok && (!slices.Contains(want, m.EventSource) || m.SelfManaged != (res.EventType == "SelfManagedKafka")) {
		what := string(m.EventSource)
		if what == "" {
			what = "no source"
		}
		return nil, fmt.Errorf("template: resource %s, Events.%s: an event of type %s whose source is a %s: name a source of its type",
			tm.FunctionLogicalID, res.Event, res.EventType, what)
	}
	if ts := cm.StartingPositionTimestamp; ts != 0 {
		tm.StartingPositionTimestamp = time.UnixMilli(int64(ts * 1000)).UTC()
	}
	return tm, nil
}

func codeOf(f sam.Function) TemplateFunctionCode {
	return TemplateFunctionCode{LogicalID: f.LogicalID, Serverless: f.Serverless, Runtime: f.Runtime, Handler: f.Handler, PackageType: f.PackageType}
}

// TemplateFunction is a function read from a template, for invoking it
// as sam local invoke does.
type TemplateFunction struct {
	Function TemplateFunctionCode
	// FunctionName is the function's FunctionName, or its logical ID when
	// the template leaves the name to CloudFormation.
	FunctionName  string
	Timeout       time.Duration
	Memory        int
	Architectures []string
	Environment   map[string]string
	Unresolved    map[string]string
	Notes         []string
}

// ReadTemplateFunction reads the function name designates (its logical ID
// or FunctionName) from a template, as ReadTemplateMapping reads a
// mapping's function.
func ReadTemplateFunction(data []byte, name string, opts TemplateOptions) (*TemplateFunction, error) {
	res, err := sam.ReadFunction(data, name, sam.Options{Parameters: opts.Parameters})
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	cm, err := cfn.ReadFunction(res.CloudFormation, res.Function.LogicalID)
	if err != nil {
		return nil, err
	}
	fn, _ := cm.Fields["FunctionName"].(string)
	return &TemplateFunction{Function: codeOf(res.Function), FunctionName: fn, Timeout: cm.FunctionTimeout, Memory: cm.FunctionMemory,
		Architectures: cm.Architectures, Environment: cm.Environment, Unresolved: cm.Unresolved, Notes: res.Notes}, nil
}

// ParseParameterOverrides reads --parameter-overrides values as sam takes
// them: "KEY=VALUE KEY2=VALUE2", "ParameterKey=KEY,ParameterValue=VALUE
// ...", or file://FILE (a JSON or YAML mapping); a later one wins.
func ParseParameterOverrides(values []string) (map[string]string, error) {
	return sam.ParseOverrides(values)
}

// eventSources are the sources each SAM pull event type reads.
var eventSources = map[string][]events.Source{
	"Kinesis": {events.SourceKinesis}, "DynamoDB": {events.SourceDynamoDB}, "SQS": {events.SourceSQS, events.SourceSQSFIFO},
	"MSK": {events.SourceKafka}, "SelfManagedKafka": {events.SourceKafka},
}
