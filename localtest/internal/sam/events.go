package sam

import (
	"fmt"
	"slices"
	"strings"
)

// The translation of a function's pull event into the
// AWS::Lambda::EventSourceMapping SAM generates for it follows
// aws/serverless-application-model samtranslator/model/eventsources/pull.py
// (PullEventSource.to_cloudformation and its subclasses) and the SAM
// specification's event pages (sam-property-function-kinesis, -dynamodb,
// -sqs, -msk, -selfmanagedkafka): each property SAM accepts, with the type
// it checks before CloudFormation resolves anything, what it renames and
// what it refuses.

// propertyKind is the check SAM makes of a property's literal value
// (samtranslator/model/types.py: IS_INT, IS_BOOL, IS_DICT, IS_LIST,
// IS_STR; pass-through properties are not checked). An intrinsic passes:
// CloudFormation checks what it resolves to.
type propertyKind int

const (
	passThrough propertyKind = iota
	isInt
	isBool
	isDict
	isList
	isStr
)

func (k propertyKind) String() string {
	return [...]string{"any value", "an integer", "a boolean", "a mapping", "a list", "a string"}[k]
}

// pullProperties are PullEventSource.property_types: the properties every
// pull event type accepts.
var pullProperties = map[string]propertyKind{
	"BatchSize": isInt, "StartingPosition": passThrough, "StartingPositionTimestamp": passThrough, "Enabled": isBool,
	"MaximumBatchingWindowInSeconds": isInt, "MaximumRetryAttempts": isInt, "BisectBatchOnFunctionError": isBool,
	"MaximumRecordAgeInSeconds": isInt, "DestinationConfig": isDict, "ParallelizationFactor": isInt, "Topics": isList,
	"Queues": isList, "SourceAccessConfigurations": isList, "SecretsManagerKmsKeyId": isStr, "TumblingWindowInSeconds": isInt,
	"FunctionResponseTypes": isList, "KafkaBootstrapServers": isList, "FilterCriteria": isDict, "KmsKeyArn": passThrough,
	"ConsumerGroupId": isStr, "ScalingConfig": isDict, "ProvisionedPollerConfig": isDict, "SchemaRegistryConfig": isDict,
	"MetricsConfig": isDict, "LoggingConfig": isDict,
}

// passedThrough are the properties to_cloudformation copies, under the
// same name, onto the mapping (when set).
var passedThrough = []string{"StartingPosition", "StartingPositionTimestamp", "BatchSize", "Enabled",
	"MaximumBatchingWindowInSeconds", "MaximumRetryAttempts", "BisectBatchOnFunctionError", "MaximumRecordAgeInSeconds",
	"ParallelizationFactor", "Topics", "Queues", "SourceAccessConfigurations", "TumblingWindowInSeconds",
	"FunctionResponseTypes", "FilterCriteria", "KmsKeyArn", "ScalingConfig", "ProvisionedPollerConfig", "MetricsConfig",
	"LoggingConfig"}

// eventTypes are the pull event types sluice runs: each one's own
// properties (beside pullProperties), and which are required.
var eventTypes = map[string]struct {
	source   string // the property that becomes EventSourceArn
	required []string
}{
	"Kinesis":          {source: "Stream", required: []string{"Stream", "StartingPosition"}},
	"DynamoDB":         {source: "Stream", required: []string{"Stream", "StartingPosition"}},
	"SQS":              {source: "Queue", required: []string{"Queue"}},
	"MSK":              {source: "Stream", required: []string{"Stream", "StartingPosition"}},
	"SelfManagedKafka": {},
}

// notEmulated are SAM's other pull event types: mappings, but of sources
// the runner does not emulate.
var notEmulated = []string{"MQ", "DocumentDB"}

// smkAuth are the SourceAccessConfigurations types SelfManagedKafka takes
// for authentication (pull.py SelfManagedKafka.AUTH_MECHANISM).
var smkAuth = []string{"SASL_SCRAM_256_AUTH", "SASL_SCRAM_512_AUTH", "BASIC_AUTH", "CLIENT_CERTIFICATE_TLS_AUTH"}

// translateEvent turns one pull event of function fn (its Type and
// Properties, intrinsics not yet resolved) into the properties of the
// AWS::Lambda::EventSourceMapping SAM generates, or the problems SAM
// would report. The function is named by a Ref to fn.
func translateEvent(fn, name string, event map[string]any) (map[string]any, []problem) {
	var probs []problem
	bad := func(prop, format string, a ...any) {
		probs = append(probs, problem{prop: prop, msg: fmt.Sprintf(format, a...)})
	}
	typ, _ := event["Type"].(string)
	spec := eventTypes[typ]
	props := map[string]any{}
	if p, ok := event["Properties"]; ok && p != nil {
		m, ok := p.(map[string]any)
		if !ok {
			bad("Properties", "is not a mapping")
			return nil, probs
		}
		props = m
	}
	for _, k := range slices.Sorted(mapKeys(props)) {
		kind, common := pullProperties[k]
		switch {
		case k == spec.source && spec.source != "":
			continue
		case !common:
			bad(k, "SAM refuses it: property %s not defined for resource of type %s (its properties: %s)", k, typ, strings.Join(eventProperties(typ), ", "))
			continue
		}
		if v := props[k]; v != nil && intrinsicName(v) == "" && !kindOK(kind, v) {
			bad(k, "SAM refuses it: %s must be %s, not %s", k, kind, compact(v))
		}
	}
	for _, k := range spec.required {
		if props[k] == nil {
			bad(k, "SAM refuses the event: missing required property '%s'", k)
		}
	}
	esm := map[string]any{"FunctionName": map[string]any{"Ref": fn}}
	if spec.source != "" && props[spec.source] != nil {
		esm["EventSourceArn"] = props[spec.source]
	}
	for _, k := range passedThrough {
		if v, ok := props[k]; ok && v != nil {
			esm[k] = v
		}
	}
	if fc, ok := props["FilterCriteria"].(map[string]any); ok && intrinsicName(fc) == "" {
		// pull.py _validate_filter_criteria: empty, or only Filters.
		for k := range fc {
			if k != "Filters" {
				bad("FilterCriteria", "SAM refuses it: FilterCriteria field has a wrong format (it holds only Filters, not %s)", k)
			}
		}
	}
	if servers, ok := props["KafkaBootstrapServers"].([]any); ok && len(servers) > 0 {
		esm["SelfManagedEventSource"] = map[string]any{"Endpoints": map[string]any{"KafkaBootstrapServers": servers}}
	} else if v := props["KafkaBootstrapServers"]; intrinsicName(v) != "" {
		esm["SelfManagedEventSource"] = map[string]any{"Endpoints": map[string]any{"KafkaBootstrapServers": v}}
	}
	kafkaConfig := map[string]any{}
	if v := props["ConsumerGroupId"]; truthy(v) {
		if typ != "MSK" && typ != "SelfManagedKafka" {
			bad("ConsumerGroupId", "SAM refuses it: Property ConsumerGroupId not defined for resource of type %s (MSK and SelfManagedKafka only)", typ)
		}
		kafkaConfig["ConsumerGroupId"] = v
	}
	if v := props["SchemaRegistryConfig"]; truthy(v) {
		if typ == "MSK" || typ == "SelfManagedKafka" {
			kafkaConfig["SchemaRegistryConfig"] = v
			probs = append(probs, checkSchemaRegistry(v)...)
		}
	}
	if len(kafkaConfig) > 0 {
		switch typ {
		case "MSK":
			esm["AmazonManagedKafkaEventSourceConfig"] = kafkaConfig
		case "SelfManagedKafka":
			esm["SelfManagedKafkaEventSourceConfig"] = kafkaConfig
		}
	}
	if dc, ok := props["DestinationConfig"].(map[string]any); ok && len(dc) > 0 {
		out := map[string]any{}
		for k, v := range dc {
			out[k] = v
		}
		of, ok := dc["OnFailure"].(map[string]any)
		if !ok {
			bad("DestinationConfig.OnFailure", "SAM refuses it: DestinationConfig.OnFailure must be a mapping")
		} else {
			// Type tells SAM which policy to attach; SAM removes it.
			ofOut := map[string]any{}
			for k, v := range of {
				if k != "Type" {
					ofOut[k] = v
				}
			}
			if t, has := of["Type"]; has && truthy(t) {
				if s, _ := t.(string); !slices.Contains([]string{"SQS", "SNS", "S3", "Kafka"}, s) {
					bad("DestinationConfig.OnFailure.Type", "SAM refuses it: The only valid values for 'Type' are 'SQS', 'SNS', 'S3', and 'Kafka' (not %s)", compact(t))
				}
			}
			out["OnFailure"] = ofOut
		}
		esm["DestinationConfig"] = out
	}
	if typ == "SelfManagedKafka" {
		probs = append(probs, checkSelfManagedKafka(props)...)
	}
	return esm, probs
}

// checkSelfManagedKafka makes SelfManagedKafka.get_policy_statements'
// checks, which SAM runs on every such event.
func checkSelfManagedKafka(props map[string]any) []problem {
	var probs []problem
	bad := func(prop, format string, a ...any) {
		probs = append(probs, problem{prop: prop, msg: "SAM refuses it: " + fmt.Sprintf(format, a...)})
	}
	// validate_secrets_manager_kms_key_id: a string, not an intrinsic.
	if v, ok := props["SecretsManagerKmsKeyId"]; ok && truthy(v) {
		if _, isStr := v.(string); !isStr {
			bad("SecretsManagerKmsKeyId", "Property 'SecretsManagerKmsKeyId' should be a string (not %s)", compact(v))
		}
	}
	if !truthy(props["KafkaBootstrapServers"]) {
		bad("KafkaBootstrapServers", "No KafkaBootstrapServers provided for self managed kafka as an event source")
	}
	if !truthy(props["Topics"]) {
		bad("Topics", "No Topics provided for self managed kafka as an event source")
	} else if l, ok := props["Topics"].([]any); ok && len(l) != 1 {
		bad("Topics", "Topics for self managed kafka only supports single configuration entry (it has %d)", len(l))
	}
	sac := props["SourceAccessConfigurations"]
	if !truthy(sac) {
		bad("SourceAccessConfigurations", "No SourceAccessConfigurations for self managed kafka event provided")
		return probs
	}
	list, ok := sac.([]any)
	if !ok {
		return probs // an intrinsic: CloudFormation checks it
	}
	auth, subnet, group := 0, false, false
	for i, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			bad(fmt.Sprintf("SourceAccessConfigurations.%d", i), "each entry is a mapping with Type and URI")
			continue
		}
		t, _ := m["Type"].(string)
		switch {
		case t == "VPC_SUBNET":
			subnet = true
		case t == "VPC_SECURITY_GROUP":
			group = true
		case slices.Contains(smkAuth, t):
			auth++
			if auth > 1 {
				bad("SourceAccessConfigurations", "Multiple auth mechanism properties specified in SourceAccessConfigurations for self managed kafka event")
			}
		case t == "SERVER_ROOT_CA_CERTIFICATE":
		default:
			bad(fmt.Sprintf("SourceAccessConfigurations.%d.Type", i), "Invalid SourceAccessConfigurations Type provided for self managed kafka event (%s)", compact(m["Type"]))
			continue
		}
		if uri := m["URI"]; !truthy(uri) {
			bad(fmt.Sprintf("SourceAccessConfigurations.%d.URI", i), "No URI property specified in SourceAccessConfigurations for self managed kafka event (Type %s)", t)
		} else if _, s := uri.(string); !s && intrinsicName(uri) == "" {
			bad(fmt.Sprintf("SourceAccessConfigurations.%d.URI", i), "Wrong Type for URI property specified in SourceAccessConfigurations for self managed kafka event")
		}
	}
	if subnet != group {
		bad("SourceAccessConfigurations", "VPC_SUBNET and VPC_SECURITY_GROUP in SourceAccessConfigurations for SelfManagedKafka must be both provided")
	}
	return probs
}

// checkSchemaRegistry makes validate_schema_registry_config's checks.
func checkSchemaRegistry(v any) []problem {
	m, ok := v.(map[string]any)
	if !ok {
		return nil // an intrinsic
	}
	var probs []problem
	bad := func(format string, a ...any) {
		probs = append(probs, problem{prop: "SchemaRegistryConfig", msg: "SAM refuses it: " + fmt.Sprintf(format, a...)})
	}
	for _, f := range []string{"SchemaRegistryURI", "EventRecordFormat", "SchemaValidationConfigs"} {
		if _, ok := m[f]; !ok {
			bad("Missing required field %s in SchemaRegistryConfig", f)
		}
	}
	if f, ok := m["EventRecordFormat"]; ok && f != "JSON" && f != "SOURCE" {
		bad("EventRecordFormat in SchemaRegistryConfig must be either 'JSON' or 'SOURCE' (not %s)", compact(f))
	}
	if c, ok := m["SchemaValidationConfigs"]; ok {
		if _, isList := c.([]any); !isList {
			bad("SchemaValidationConfigs must be a list")
		}
	}
	if ac, ok := m["AccessConfigs"]; ok && truthy(ac) {
		l, isList := ac.([]any)
		if !isList {
			bad("AccessConfigs in SchemaRegistryConfig must be a list")
		}
		for _, c := range l {
			cm, ok := c.(map[string]any)
			if !ok || cm["Type"] == nil || cm["URI"] == nil {
				bad("Each AccessConfig must be a dict with 'Type' and 'URI' fields")
			}
		}
	}
	return probs
}

// eventProperties lists the properties an event type takes.
func eventProperties(typ string) []string {
	var out []string
	for k := range pullProperties {
		out = append(out, k)
	}
	if s := eventTypes[typ].source; s != "" {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func kindOK(k propertyKind, v any) bool {
	switch k {
	case isInt:
		_, ok := v.(int64)
		if b, isBool := v.(bool); isBool {
			_ = b
			return true // Python's bool is an int: SAM lets it through
		}
		return ok
	case isBool:
		_, ok := v.(bool)
		return ok
	case isDict:
		_, ok := v.(map[string]any)
		return ok
	case isList:
		_, ok := v.([]any)
		return ok
	case isStr:
		_, ok := v.(string)
		return ok
	}
	return true
}

// truthy is Python's truth of a value, as SAM's "if self.X:" reads it.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int64:
		return x != 0
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// problem is one thing SAM would refuse in an event, by its property.
type problem struct {
	prop, msg string
}
