package sam

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// globalSections are the resource types a Globals section may name, and
// globalFunction the properties its Function section may set
// (samtranslator/plugins/globals/globals.py, Globals.supported_properties).
var globalSections = []string{"Api", "CapacityProvider", "Function", "HttpApi", "LayerVersion", "SimpleTable", "StateMachine", "WebSocketApi"}

var globalFunction = []string{"Handler", "Runtime", "CodeUri", "DeadLetterQueue", "Description", "MemorySize", "Timeout",
	"VpcConfig", "Environment", "Tags", "PropagateTags", "Tracing", "KmsKeyArn", "AutoPublishAlias",
	"AutoPublishAliasAllProperties", "Layers", "DeploymentPreference", "RolePath", "PermissionsBoundary",
	"ReservedConcurrentExecutions", "ProvisionedConcurrencyConfig", "AssumeRolePolicyDocument", "EventInvokeConfig",
	"FileSystemConfigs", "CodeSigningConfigArn", "Architectures", "SnapStart", "EphemeralStorage", "FunctionUrlConfig",
	"RuntimeManagementConfig", "LoggingConfig", "RecursiveLoop", "SourceKMSKeyArn", "TenancyConfig", "DurableConfig",
	"CapacityProviderConfig", "FunctionScalingConfig", "PublishToLatestPublished", "VersionDeletionPolicy"}

// applyGlobals merges Globals.Function into every AWS::Serverless::Function
// as SAM's globals plugin does before it translates anything: checked as
// SAM checks the section, and honouring each function's IgnoreGlobals.
func (t *template) applyGlobals() error {
	g, ok := t.doc.root["Globals"]
	if !ok {
		return nil
	}
	bad := func(path []string, format string, a ...any) error {
		return &Error{Property: strings.Join(path, "."), Line: t.doc.line(path...), Problem: "SAM refuses it: " + fmt.Sprintf(format, a...)}
	}
	sections, ok := g.(map[string]any)
	if !ok {
		return bad([]string{"Globals"}, "'Globals' section is invalid. It must be a non-empty dictionary")
	}
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		if !slices.Contains(globalSections, name) {
			return bad([]string{"Globals", name}, "'%s' is not supported. Must be one of the following values - %s", name, strings.Join(globalSections, ", "))
		}
		if _, ok := sections[name].(map[string]any); !ok {
			return bad([]string{"Globals", name}, "Value of %s must be a dictionary", name)
		}
	}
	fn, _ := sections["Function"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(fn)) {
		if !slices.Contains(globalFunction, k) {
			return bad([]string{"Globals", "Function", k}, "'%s' is not a supported property of 'Function'. Must be one of the following values - %s",
				k, strings.Join(globalFunction, ", "))
		}
	}
	if len(fn) == 0 {
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(t.res)) {
		r, _ := t.res[id].(map[string]any)
		if typeOf(r) != "AWS::Serverless::Function" {
			continue
		}
		global := fn
		switch ig := r["IgnoreGlobals"].(type) {
		case nil:
		case string:
			if ig != "*" {
				return &Error{Resource: id, Property: "IgnoreGlobals", Problem: fmt.Sprintf("SAM refuses it: Resource %s has invalid resource attribute 'IgnoreGlobals'.", id)}
			}
			global = nil
		case []any:
			global = maps.Clone(fn)
			for _, k := range ig {
				s, _ := k.(string)
				if _, ok := global[s]; !ok {
					return &Error{Resource: id, Property: "IgnoreGlobals", Problem: fmt.Sprintf("SAM refuses it: Resource %s has invalid resource attribute 'IgnoreGlobals' on item '%v'.", id, k)}
				}
				delete(global, s)
			}
		default:
			return &Error{Resource: id, Property: "IgnoreGlobals", Problem: fmt.Sprintf("SAM refuses it: Resource %s has invalid resource attribute 'IgnoreGlobals'.", id)}
		}
		local, _ := r["Properties"].(map[string]any)
		if local == nil {
			local = map[string]any{}
		}
		merged, _ := mergeGlobal(global, local).(map[string]any)
		r["Properties"] = merged
	}
	return nil
}

// mergeGlobal is GlobalProperties._do_merge: a mapping merges key by key,
// lists concatenate (global first), anything else (an intrinsic counts as
// a scalar) is the local value.
func mergeGlobal(global, local any) any {
	kind := func(v any) int {
		switch x := v.(type) {
		case map[string]any:
			if intrinsicName(x) != "" {
				return 0
			}
			return 1
		case []any:
			return 2
		}
		return 0
	}
	kg, kl := kind(global), kind(local)
	switch {
	case kg != kl || kg == 0:
		return local
	case kg == 2:
		return append(slices.Clone(global.([]any)), local.([]any)...)
	}
	g, l := global.(map[string]any), local.(map[string]any)
	out := maps.Clone(g)
	for k, lv := range l {
		if gv, ok := out[k]; ok {
			out[k] = mergeGlobal(gv, lv)
		} else {
			out[k] = lv
		}
	}
	return out
}
