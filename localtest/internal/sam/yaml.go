package sam

import (
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"
)

// document is a template read into plain values (map[string]any, []any,
// string, int64, float64, bool, nil), with the short intrinsic tags
// (!Ref X) rewritten to their long forms ({"Ref": "X"}), as CloudFormation
// reads them, and the line of each value by its path.
type document struct {
	root  map[string]any
	lines map[string]int
	nodes int // values read, aliases expanded: bounded against alias bombs
}

// maxNodes bounds the values a template expands to (a template of
// CloudFormation's 1 MB limit holds far fewer; nested aliases could
// otherwise expand exponentially).
const maxNodes = 1 << 18

// line is the line of the value at path ("" when unknown: a value made here).
func (d *document) line(path ...string) int {
	return d.lines[strings.Join(path, "/")]
}

// shortTags are the YAML tags CloudFormation accepts for its intrinsic
// functions, each with its long name.
var shortTags = map[string]string{
	"!Ref": "Ref", "!Condition": "Condition",
	"!Base64": "Fn::Base64", "!Cidr": "Fn::Cidr", "!FindInMap": "Fn::FindInMap", "!GetAtt": "Fn::GetAtt",
	"!GetAZs": "Fn::GetAZs", "!ImportValue": "Fn::ImportValue", "!Join": "Fn::Join", "!Select": "Fn::Select",
	"!Split": "Fn::Split", "!Sub": "Fn::Sub", "!Transform": "Fn::Transform", "!And": "Fn::And",
	"!Equals": "Fn::Equals", "!If": "Fn::If", "!Not": "Fn::Not", "!Or": "Fn::Or",
	"!Length": "Fn::Length", "!ToJsonString": "Fn::ToJsonString",
}

// parse reads a template in YAML or JSON (JSON is YAML). go.yaml.in/yaml/v3
// (the YAML organisation's maintained continuation of gopkg.in/yaml.v3)
// gives the node tree with each node's tag and line, which is what short
// intrinsic tags need; decoding into maps would lose both.
func parse(data []byte) (*document, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("template: not YAML or JSON: %w", err)
	}
	if n.Kind == 0 {
		return nil, fmt.Errorf("template: empty")
	}
	d := &document{lines: map[string]int{}}
	v, err := d.value(&n, nil)
	if err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template: the document is not a mapping (a template has Resources at its top)")
	}
	d.root = root
	return d, nil
}

func (d *document) value(n *yaml.Node, path []string) (any, error) {
	where := func() string { return fmt.Sprintf("template line %d", n.Line) }
	if d.nodes++; d.nodes > maxNodes {
		return nil, fmt.Errorf("%s: the template expands to more than %d values (nested aliases?)", where(), maxNodes)
	}
	if _, seen := d.lines[strings.Join(path, "/")]; !seen || n.Kind != yaml.AliasNode {
		d.lines[strings.Join(path, "/")] = n.Line
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0], path)
	case yaml.AliasNode:
		return d.value(n.Alias, path)
	}
	if long, ok := shortTags[n.Tag]; ok {
		return d.shortForm(n, long, path)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return nil, fmt.Errorf("%s: the tag %s is not an intrinsic function CloudFormation knows (!Ref, !GetAtt, !Sub, !Join, !If, ...)", where(), n.Tag)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s: a mapping key is not a scalar", where())
			}
			if k.Tag == "!!merge" {
				return nil, fmt.Errorf("%s: the YAML merge key << is not something CloudFormation reads: write the keys out", where())
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("template line %d: the key %q appears twice in one mapping", k.Line, k.Value)
			}
			v, err := d.value(n.Content[i+1], append(path, k.Value))
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := d.value(c, append(path, fmt.Sprint(i)))
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		var v any
		switch n.Tag {
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, fmt.Errorf("%s: %w", where(), err)
			}
			v = i
		default:
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("%s: %w", where(), err)
			}
		}
		// Timestamps, and numbers JSON cannot hold (.nan, .inf), stay the
		// text the template wrote: CloudFormation has neither.
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v = n.Value
		}
		if n.Tag == "!!timestamp" || n.Tag == "!!binary" {
			v = n.Value
		}
		return v, nil
	}
	return nil, fmt.Errorf("%s: a YAML node of kind %d", where(), n.Kind)
}

// shortForm reads !Tag value into {"Long": value}. !GetAtt a.b is
// ["a", "b"] (the attribute may hold dots: a.b.c is ["a", "b.c"]).
func (d *document) shortForm(n *yaml.Node, long string, path []string) (any, error) {
	inner := *n
	inner.Tag = ""
	switch n.Kind {
	case yaml.ScalarNode:
		if long == "Fn::GetAtt" {
			res, attr, ok := strings.Cut(n.Value, ".")
			if !ok || res == "" || attr == "" {
				return nil, fmt.Errorf("template line %d: !GetAtt %s: want !GetAtt Resource.Attribute", n.Line, n.Value)
			}
			return map[string]any{long: []any{res, attr}}, nil
		}
		return map[string]any{long: n.Value}, nil
	case yaml.SequenceNode:
		inner.Tag = "!!seq"
	case yaml.MappingNode:
		inner.Tag = "!!map"
	}
	v, err := d.value(&inner, append(path, long))
	if err != nil {
		return nil, err
	}
	return map[string]any{long: v}, nil
}
