package localtest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/localtest/internal/cfn"
)

// TemplateMapping is an event source mapping read from a synthesized
// CloudFormation template (cdk synth, Sluice's infra constructs), with what
// the function it invokes needs: its timeout and environment.
type TemplateMapping struct {
	Mapping *Mapping
	// LogicalID is the AWS::Lambda::EventSourceMapping resource's;
	// FunctionLogicalID the AWS::Lambda::Function's it invokes.
	LogicalID         string
	FunctionLogicalID string
	// FunctionTimeout is the function's Timeout; 0 when the template
	// leaves it to Lambda's default (3 s).
	FunctionTimeout time.Duration
	// Environment holds the function's variables whose values are
	// literals in the template.
	Environment map[string]string
	// Unresolved holds the variables CloudFormation resolves only at
	// deploy (a Ref to a queue or table it names itself), each with what
	// it refers to; a local run must be given their values.
	Unresolved map[string]string
	// Notes say what a local run does instead of what AWS would (the
	// on-failure queue becomes a file).
	Notes []string
}

// MappingFromTemplate reads the event source mapping that name designates
// from a CloudFormation template: the mapping's logical ID, or the
// function's (its logical ID or its FunctionName). A property whose value
// CloudFormation computes at deploy time (a Ref or Fn:: to a parameter, an
// Fn::ImportValue) is an error naming it, since the run would not be
// what deploys; so is a property the runner does not know.
func MappingFromTemplate(data []byte, name string) (*TemplateMapping, error) {
	cm, err := cfn.Read(data, name, func(raw json.RawMessage) error {
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
	return &TemplateMapping{Mapping: &m, LogicalID: cm.LogicalID, FunctionLogicalID: cm.FunctionLogicalID,
		FunctionTimeout: cm.FunctionTimeout, Environment: cm.Environment, Unresolved: cm.Unresolved, Notes: cm.Notes}, nil
}
