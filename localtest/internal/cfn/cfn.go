// Package cfn reads an event source mapping out of a synthesized
// CloudFormation template (cdk synth, Sluice's infra constructs): which
// AWS::Lambda::EventSourceMapping a name designates, its settings as the
// fields of a localtest mapping file, and the function's timeout and
// environment. Package localtest turns the fields into its Mapping
// (MappingFromTemplate); this package knows templates, not the runner.
package cfn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/events"
)

// Mapping is what a template says of one event source mapping.
type Mapping struct {
	// Fields are the mapping file's fields (localtest.Mapping by its JSON
	// names) the template sets, each a value json.Marshal writes as the
	// mapping file would hold it.
	Fields map[string]any
	// LogicalID, FunctionLogicalID, FunctionTimeout, Environment,
	// Unresolved and Notes are localtest.TemplateMapping's.
	LogicalID         string
	FunctionLogicalID string
	FunctionTimeout   time.Duration
	Environment       map[string]string
	Unresolved        map[string]string
	Notes             []string
	// FunctionMemory is the function's MemorySize in MB (0: Lambda's
	// default, 128); Architectures its Architectures (none: x86_64).
	FunctionMemory int
	Architectures  []string
	// StartingPositionTimestamp is the mapping's, in seconds since the
	// epoch (AT_TIMESTAMP); zero when it has none.
	StartingPositionTimestamp float64
}

// ScalingConfig is the mapping file's ScalingConfig, named as the runner
// names it so that a decoding error reads the same.
type ScalingConfig struct {
	MaximumConcurrency *int `json:"MaximumConcurrency,omitempty"`
}

type cfnResource struct {
	Type       string                     `json:"Type"`
	Properties map[string]json.RawMessage `json:"Properties"`
}

type cfnTemplate struct {
	Resources map[string]cfnResource `json:"Resources"`
}

// templateProperty reports whether sluice run knows an
// AWS::Lambda::EventSourceMapping property: one the runner reproduces, or
// one that changes nothing in a local run (auth, logging, tags).
func templateProperty(k string) bool {
	switch k {
	case "EventSourceArn", "FunctionName", "BatchSize", "MaximumBatchingWindowInSeconds",
		"ParallelizationFactor", "BisectBatchOnFunctionError", "MaximumRetryAttempts", "MaximumRecordAgeInSeconds",
		"FunctionResponseTypes", "StartingPosition", "StartingPositionTimestamp", "DestinationConfig", "ScalingConfig", "FilterCriteria",
		"TumblingWindowInSeconds", "Topics", "ProvisionedPollerConfig", "SelfManagedEventSource",
		"Enabled", "SourceAccessConfigurations", "AmazonManagedKafkaEventSourceConfig",
		"SelfManagedKafkaEventSourceConfig", "Tags", "LoggingConfig", "MetricsConfig", "KmsKeyArn":
		return true
	}
	return false
}

// Read reads the event source mapping that name designates
// from a CloudFormation template: the mapping's logical ID, or the
// function's (its logical ID or its FunctionName). A property whose value
// CloudFormation computes at deploy time (a Ref or Fn:: to a parameter, an
// Fn::ImportValue) is an error naming it, since the run would not be
// what deploys; so is a property the runner does not know.
func Read(data []byte, name string, checkFilters func(raw json.RawMessage) error) (*Mapping, error) {
	var t cfnTemplate
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	type candidate struct{ id, fn, fnName string }
	var all, hits []candidate
	for id, r := range t.Resources {
		if r.Type != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		c := candidate{id: id}
		if ref, ok := refOf(r.Properties["FunctionName"]); ok {
			c.fn = ref
			if f, ok := t.Resources[ref]; ok {
				c.fnName, _ = literalString(f.Properties["FunctionName"])
			}
		} else {
			c.fnName, _ = literalString(r.Properties["FunctionName"])
		}
		all = append(all, c)
		if name == id || (name != "" && (name == c.fn || name == c.fnName)) {
			hits = append(hits, c)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	list := func() string {
		var b strings.Builder
		for _, c := range all {
			fmt.Fprintf(&b, "\n  %s (function %s", c.id, c.fn)
			if c.fnName != "" {
				fmt.Fprintf(&b, ", named %s", c.fnName)
			}
			b.WriteString(")")
		}
		return b.String()
	}
	switch {
	case len(all) == 0:
		return nil, fmt.Errorf("template: no AWS::Lambda::EventSourceMapping resource")
	case len(hits) == 0:
		return nil, fmt.Errorf("template: no event source mapping is %q; name one by its logical ID, or its function's logical ID or name:%s", name, list())
	case len(hits) > 1:
		return nil, fmt.Errorf("template: %q names %d event source mappings; name one by its logical ID:%s", name, len(hits), list())
	}
	return readMapping(&t, hits[0].id, checkFilters)
}

func readMapping(t *cfnTemplate, id string, checkFilters func(raw json.RawMessage) error) (*Mapping, error) {
	r := t.Resources[id]
	tm := &Mapping{Fields: map[string]any{}, LogicalID: id, Environment: map[string]string{}, Unresolved: map[string]string{}}
	m := tm.Fields
	var errs []string
	bad := func(prop, format string, a ...any) {
		errs = append(errs, fmt.Sprintf("%s: %s", prop, fmt.Sprintf(format, a...)))
	}
	for _, k := range sortedKeys(r.Properties) {
		if !templateProperty(k) {
			bad(k, "sluice run does not know this property; run the mapping from a mapping file instead, or remove it")
		}
	}
	// Settings: literals only.
	intProp := func(name string) {
		raw, ok := r.Properties[name]
		if !ok {
			return
		}
		v, ok := intValue(raw)
		if !ok {
			bad(name, "%s", unresolvable(raw))
			return
		}
		m[name] = v
	}
	intProp("BatchSize")
	intProp("MaximumBatchingWindowInSeconds")
	intProp("ParallelizationFactor")
	intProp("MaximumRetryAttempts")
	intProp("MaximumRecordAgeInSeconds")
	intProp("TumblingWindowInSeconds")
	if raw, ok := r.Properties["BisectBatchOnFunctionError"]; ok {
		if v, ok := boolValue(raw); !ok {
			bad("BisectBatchOnFunctionError", "%s", unresolvable(raw))
		} else {
			m["BisectBatchOnFunctionError"] = v
		}
	}
	if raw, ok := r.Properties["StartingPositionTimestamp"]; ok {
		var ts float64
		if err := json.Unmarshal(raw, &ts); err != nil {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				bad("StartingPositionTimestamp", "%s", unresolvable(raw))
			} else if ts, err = strconv.ParseFloat(s, 64); err != nil {
				bad("StartingPositionTimestamp", "%q is not a number of seconds since the epoch", s)
			}
		}
		tm.StartingPositionTimestamp = ts
		if ts != 0 {
			m["StartingPositionTimestamp"] = ts
		}
	}
	if raw, ok := r.Properties["StartingPosition"]; ok {
		if s, ok := literalString(raw); ok {
			m["StartingPosition"] = s
		} else {
			bad("StartingPosition", "%s", unresolvable(raw))
		}
	}
	if raw, ok := r.Properties["Enabled"]; ok {
		if enabled, ok := boolValue(raw); ok && !enabled {
			tm.Notes = append(tm.Notes, "the mapping is deployed disabled (Enabled false): AWS polls nothing until it is enabled; this run delivers the records anyway")
		}
	}
	literal := func(name string, dst any) bool {
		if raw, ok := r.Properties[name]; ok {
			if hasToken(raw) {
				bad(name, "%s", unresolvable(raw))
			} else if err := json.Unmarshal(raw, dst); err != nil {
				bad(name, "%v", err)
			} else {
				return true
			}
		}
		return false
	}
	var responseTypes []string
	if literal("FunctionResponseTypes", &responseTypes) {
		m["FunctionResponseTypes"] = responseTypes
	}
	var scaling map[string]json.RawMessage
	if literal("ScalingConfig", &scaling) {
		sc := &ScalingConfig{}
		if raw, ok := scaling["MaximumConcurrency"]; ok {
			if n, ok := intValue(raw); ok {
				sc.MaximumConcurrency = &n
			} else {
				bad("ScalingConfig.MaximumConcurrency", "%s", unresolvable(raw))
			}
		}
		m["ScalingConfig"] = sc
	}
	if raw, ok := r.Properties["FilterCriteria"]; ok {
		if hasToken(raw) {
			bad("FilterCriteria", "%s", unresolvable(raw))
		} else if err := checkFilters(raw); err != nil {
			bad("FilterCriteria", "%v", err)
		} else {
			m["FilterCriteria"] = raw
		}
	}

	// The source, from what EventSourceArn points at.
	if _, ok := r.Properties["Topics"]; ok {
		m["EventSource"] = events.SourceKafka
		var topics []string
		literal("Topics", &topics)
		if len(topics) != 1 {
			bad("Topics", "sluice run reads one topic; the mapping has %d", len(topics))
		} else {
			m["Topic"] = topics[0]
		}
		if _, ok := r.Properties["SelfManagedEventSource"]; ok {
			m["SelfManaged"] = true
		}
		// Read only the mode: the rest (a consumer group id, a schema
		// registry's secret) may be tokens resolved at deploy.
		var sm struct{ ConsumptionMode json.RawMessage }
		_ = json.Unmarshal(r.Properties["SelfManagedKafkaEventSourceConfig"], &sm)
		if mode, _ := literalString(sm.ConsumptionMode); mode == "Queue" {
			// Share groups: no per-partition order, records acknowledged one
			// by one. The runner emulates Stream mode only, so its
			// order-per-key check would hold an order Lambda does not keep.
			bad("SelfManagedKafkaEventSourceConfig.ConsumptionMode", "Queue (a Kafka share group) is not emulated: sluice run "+
				"reproduces Stream mode (a consumer group, order per partition), whose checks would not hold for a share group")
		}
		if _, ok := r.Properties["ProvisionedPollerConfig"]; ok {
			m["Mode"] = "provisioned" // localtest.KafkaProvisioned
		}
	} else if raw, ok := r.Properties["EventSourceArn"]; !ok {
		bad("EventSourceArn", "missing")
	} else {
		sourceFromTemplate(t, raw, m, bad)
	}

	// The on-failure destination: records go to a local file.
	if raw, ok := r.Properties["DestinationConfig"]; ok {
		var dc struct {
			OnFailure struct{ Destination json.RawMessage }
		}
		if err := json.Unmarshal(raw, &dc); err != nil || dc.OnFailure.Destination == nil {
			bad("DestinationConfig", "want {\"OnFailure\":{\"Destination\":...}}")
		} else {
			what := strings.Trim(string(dc.OnFailure.Destination), `"`)
			local := "file://onfailure.jsonl"
			ref, attr, ok := getAtt(dc.OnFailure.Destination)
			if r, isRef := refOf(dc.OnFailure.Destination); isRef && t.Resources[r].Type == "AWS::SNS::Topic" {
				ref, attr, ok = r, "Arn", true // a topic's Ref is its ARN
			} else if ok && attr == "TopicArn" && t.Resources[ref].Type == "AWS::SNS::Topic" {
				attr = "Arn"
			}
			if ok && attr == "Arn" {
				what = ref
				local = "file://" + ref + ".onfailure.jsonl"
				if res, ok := t.Resources[ref]; ok && res.Type == "AWS::S3::Bucket" {
					local = "file://" + ref + "/"
				}
			} else if hasToken(dc.OnFailure.Destination) {
				bad("DestinationConfig.OnFailure.Destination", "%s", unresolvable(dc.OnFailure.Destination))
			}
			m["DestinationConfig"] = map[string]any{"OnFailure": map[string]string{"Destination": local}}
			tm.Notes = append(tm.Notes, fmt.Sprintf("on-failure records, which AWS sends to %s, go to %s", what, local))
		}
	}

	// The function: its name, timeout and environment.
	if ref, ok := refOf(r.Properties["FunctionName"]); ok {
		tm.FunctionLogicalID = ref
		f, ok := t.Resources[ref]
		if !ok || f.Type != "AWS::Lambda::Function" {
			bad("FunctionName", "refers to %s, which is not an AWS::Lambda::Function of this template", ref)
		} else {
			readFunction(t, tm, f, bad)
			if name, _ := m["FunctionName"].(string); name == "" {
				m["FunctionName"] = ref
			}
		}
	} else if s, ok := literalString(r.Properties["FunctionName"]); ok {
		m["FunctionName"] = s
		tm.Notes = append(tm.Notes, fmt.Sprintf("the function %s is not in the template: its timeout and environment come from the flags", s))
	} else {
		bad("FunctionName", "%s", unresolvable(r.Properties["FunctionName"]))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("template: event source mapping %s:\n  %s", id, strings.Join(errs, "\n  "))
	}
	return tm, nil
}

// sourceFromTemplate sets the event source and the source's own settings
// from the resource EventSourceArn names.
func sourceFromTemplate(t *cfnTemplate, raw json.RawMessage, m map[string]any, bad func(string, string, ...any)) {
	if s, ok := literalString(raw); ok {
		switch {
		case strings.HasPrefix(s, "arn:") && strings.Contains(s, ":kinesis:"):
			m["EventSource"], m["StreamName"] = events.SourceKinesis, s[strings.LastIndex(s, "/")+1:]
		case strings.HasPrefix(s, "arn:") && strings.Contains(s, ":dynamodb:") && strings.Contains(s, "/stream/"):
			m["EventSource"] = events.SourceDynamoDB
		case strings.HasPrefix(s, "arn:") && strings.Contains(s, ":sqs:"):
			m["EventSource"], m["QueueName"] = events.SourceSQS, s[strings.LastIndex(s, ":")+1:]
			if strings.HasSuffix(s, ".fifo") {
				m["EventSource"] = events.SourceSQSFIFO
			}
		default:
			bad("EventSourceArn", "%q is not a Kinesis stream, DynamoDB stream or SQS queue ARN", s)
		}
		return
	}
	ref, attr, ok := getAtt(raw)
	res, found := t.Resources[ref]
	if !ok || !found {
		bad("EventSourceArn", "%s", unresolvable(raw))
		return
	}
	intOf := func(prop string) (int, bool) { return intValue(res.Properties[prop]) }
	switch {
	case res.Type == "AWS::Kinesis::Stream" && attr == "Arn":
		m["EventSource"], m["StreamName"] = events.SourceKinesis, ref
		if n, ok := literalString(res.Properties["Name"]); ok {
			m["StreamName"] = n
		}
		if n, ok := intOf("ShardCount"); ok {
			m["Shards"] = n
		}
	case res.Type == "AWS::DynamoDB::Table" && attr == "StreamArn":
		m["EventSource"], m["TableName"] = events.SourceDynamoDB, ref
		if n, ok := literalString(res.Properties["TableName"]); ok {
			m["TableName"] = n
		}
	case res.Type == "AWS::SQS::Queue" && attr == "Arn":
		m["EventSource"], m["QueueName"] = events.SourceSQS, ref
		if fifo, _ := boolValue(res.Properties["FifoQueue"]); fifo {
			m["EventSource"] = events.SourceSQSFIFO
		}
		if n, ok := literalString(res.Properties["QueueName"]); ok {
			m["QueueName"] = n
		}
		if raw, ok := res.Properties["VisibilityTimeout"]; ok {
			if v, ok := intOf("VisibilityTimeout"); ok {
				m["VisibilityTimeout"] = v
			} else {
				bad("EventSourceArn", "queue %s: VisibilityTimeout %s", ref, unresolvable(raw))
			}
		}
		if raw, ok := res.Properties["RedrivePolicy"]; ok {
			var rp struct {
				MaxReceiveCount json.RawMessage `json:"maxReceiveCount"`
			}
			n, isInt := 0, false
			if json.Unmarshal(raw, &rp) == nil {
				n, isInt = intValue(rp.MaxReceiveCount)
			}
			if !isInt {
				bad("EventSourceArn", "queue %s: RedrivePolicy.maxReceiveCount %s", ref, unresolvable(rp.MaxReceiveCount))
			} else {
				m["RedrivePolicy"] = map[string]int{"maxReceiveCount": n}
			}
		}
	default:
		bad("EventSourceArn", "names %s.%s, a %s: not a source sluice run reads (a Kinesis stream's Arn, a DynamoDB table's StreamArn, an SQS queue's Arn)",
			ref, attr, res.Type)
	}
}

// readFunction takes the function's name, timeout and environment.
func readFunction(t *cfnTemplate, tm *Mapping, f cfnResource, bad func(string, string, ...any)) {
	if s, ok := literalString(f.Properties["FunctionName"]); ok {
		tm.Fields["FunctionName"] = s
	}
	if raw, ok := f.Properties["Timeout"]; ok {
		if s, ok := intValue(raw); !ok {
			bad("function "+tm.FunctionLogicalID+" Timeout", "%s", unresolvable(raw))
		} else {
			tm.FunctionTimeout = time.Duration(s) * time.Second
		}
	}
	if raw, ok := f.Properties["MemorySize"]; ok {
		if n, ok := intValue(raw); !ok {
			bad("function "+tm.FunctionLogicalID+" MemorySize", "%s", unresolvable(raw))
		} else {
			tm.FunctionMemory = n
		}
	}
	if raw, ok := f.Properties["Architectures"]; ok {
		if err := json.Unmarshal(raw, &tm.Architectures); err != nil || hasToken(raw) {
			bad("function "+tm.FunctionLogicalID+" Architectures", "%s", unresolvable(raw))
		}
	}
	var env struct {
		Variables map[string]json.RawMessage
	}
	if raw, ok := f.Properties["Environment"]; ok {
		if err := json.Unmarshal(raw, &env); err != nil {
			bad("function "+tm.FunctionLogicalID+" Environment", "%s", unresolvable(raw))
		}
	}
	for k, raw := range env.Variables {
		if s, ok := literalString(raw); ok {
			tm.Environment[k] = s
			continue
		}
		what := unresolvable(raw)
		if ref, ok := refOf(raw); ok {
			if res, ok := t.Resources[ref]; ok {
				what = fmt.Sprintf("a Ref to the %s %s, which CloudFormation names at deploy", res.Type, ref)
			}
		}
		tm.Unresolved[k] = what
	}
}

// unresolvable says why a value is not a literal a local run can use.
func unresolvable(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		raw = b.Bytes()
	}
	s := string(raw)
	switch {
	case raw == nil:
		return "missing"
	case strings.Contains(s, `"Fn::ImportValue"`):
		return fmt.Sprintf("%s is imported from another stack (Fn::ImportValue), known only at deploy", s)
	case strings.Contains(s, `"Ref"`) || strings.Contains(s, `"Fn::`):
		return fmt.Sprintf("%s is a token CloudFormation resolves at deploy (a parameter, a reference or a function); sluice run needs a literal", s)
	}
	return fmt.Sprintf("%s is not a value sluice run understands here", s)
}

// intValue reads a whole number as CloudFormation takes it for an
// Integer property: a number, or a string of digits (a parameter's value
// is a string).
func intValue(raw json.RawMessage) (int, bool) {
	var v int
	if raw == nil {
		return 0, false
	}
	if json.Unmarshal(raw, &v) == nil {
		return v, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	return v, err == nil
}

// boolValue reads a Boolean property: true or false, or the strings
// "true" and "false".
func boolValue(raw json.RawMessage) (bool, bool) {
	var v bool
	if raw == nil {
		return false, false
	}
	if json.Unmarshal(raw, &v) == nil {
		return v, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false, false
	}
	switch strings.ToLower(s) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func hasToken(raw json.RawMessage) bool {
	s := string(raw)
	return strings.Contains(s, `"Ref"`) || strings.Contains(s, `"Fn::`)
}

func literalString(raw json.RawMessage) (string, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func refOf(raw json.RawMessage) (string, bool) {
	var r struct {
		Ref string `json:"Ref"`
	}
	if raw == nil || json.Unmarshal(raw, &r) != nil || r.Ref == "" {
		return "", false
	}
	return r.Ref, true
}

func getAtt(raw json.RawMessage) (ref, attr string, ok bool) {
	var g struct {
		GetAtt []string `json:"Fn::GetAtt"`
	}
	if raw == nil || json.Unmarshal(raw, &g) != nil || len(g.GetAtt) != 2 {
		return "", "", false
	}
	return g.GetAtt[0], g.GetAtt[1], true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ReadFunction reads the AWS::Lambda::Function id of a template: its
// name, timeout, memory, architectures and environment, in a Mapping
// whose Fields hold only FunctionName (as sluice invoke needs them).
func ReadFunction(data []byte, id string) (*Mapping, error) {
	var t cfnTemplate
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	f, ok := t.Resources[id]
	if !ok || f.Type != "AWS::Lambda::Function" {
		return nil, fmt.Errorf("template: %s is not an AWS::Lambda::Function of the template", id)
	}
	tm := &Mapping{Fields: map[string]any{"FunctionName": id}, FunctionLogicalID: id, Environment: map[string]string{}, Unresolved: map[string]string{}}
	var errs []string
	readFunction(&t, tm, f, func(prop, format string, a ...any) {
		errs = append(errs, fmt.Sprintf("%s: %s", prop, fmt.Sprintf(format, a...)))
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("template: function %s:\n  %s", id, strings.Join(errs, "\n  "))
	}
	return tm, nil
}
