package sam

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PseudoParameters are the values sam local gives CloudFormation's pseudo
// parameters (aws-sam-cli samcli/lib/intrinsic_resolver/
// intrinsics_symbol_table.py, DEFAULT_PSEUDO_PARAM_VALUES); a
// --parameter-overrides of the same name wins.
var PseudoParameters = map[string]string{
	"AWS::AccountId": "123456789012",
	"AWS::Partition": "aws",
	"AWS::Region":    "us-east-1",
	"AWS::StackName": "local",
	"AWS::StackId":   "arn:aws:cloudformation:us-east-1:123456789012:stack/local/51af3dc0-da77-11e4-872e-1234567db123",
	"AWS::URLSuffix": "amazonaws.com",
}

// noValue is what Ref AWS::NoValue resolves to: the property it stands
// for is left out.
type noValueT struct{}

var noValue = noValueT{}

// unresolvable is an intrinsic Sluice does not evaluate, or one whose
// value only a deploy knows (Fn::ImportValue). Where a local value can
// stand in (an environment variable, given with --env), the caller may
// accept it; elsewhere it is an error.
type unresolvable struct {
	fn, why string
}

func (u *unresolvable) Error() string { return u.why }

// resolver evaluates the intrinsic functions of a template against its
// parameters (their defaults, or the overrides), the pseudo parameters and
// its conditions. A reference to a resource stays a token ({"Ref": id},
// {"Fn::GetAtt": [id, attr]}): what it names is known, its value only
// once deployed.
type resolver struct {
	doc        *document
	resources  map[string]any
	params     map[string]any // a parameter's value: string, or []any of strings for a list type
	paramErrs  map[string]string
	conditions map[string]any
	condCache  map[string]bool
	condBusy   map[string]bool
	mappings   map[string]any
	generated  map[string]string // logical IDs SAM generates (a function's role), by what they are
	pseudoUsed map[string]bool
	overrides  map[string]string
	refBusy    map[string]bool
}

// Error is a template Sluice cannot read as it would deploy: where, what
// is wrong, and what to do.
type Error struct {
	Resource string // "" for the template's own sections
	Property string // dotted, from the resource's Properties
	Line     int
	Problem  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Resource != "" {
		fmt.Fprintf(&b, "resource %s", e.Resource)
		if e.Property != "" {
			fmt.Fprintf(&b, ", %s", e.Property)
		}
		b.WriteString(": ")
	} else if e.Property != "" {
		fmt.Fprintf(&b, "%s: ", e.Property)
	}
	b.WriteString(e.Problem)
	return b.String()
}

func newResolver(doc *document, overrides map[string]string) (*resolver, error) {
	r := &resolver{doc: doc, params: map[string]any{}, paramErrs: map[string]string{}, condCache: map[string]bool{},
		condBusy: map[string]bool{}, generated: map[string]string{}, pseudoUsed: map[string]bool{}, overrides: overrides,
		refBusy: map[string]bool{}}
	r.resources, _ = doc.root["Resources"].(map[string]any)
	r.conditions, _ = doc.root["Conditions"].(map[string]any)
	r.mappings, _ = doc.root["Mappings"].(map[string]any)
	params, _ := doc.root["Parameters"].(map[string]any)
	for k := range overrides {
		if _, ok := params[k]; !ok && PseudoParameters[k] == "" {
			names := slices.Sorted(mapKeys(params))
			return nil, &Error{Property: "--parameter-overrides " + k, Problem: fmt.Sprintf(
				"the template has no parameter %s (its parameters: %s); CloudFormation would refuse the deploy", k, orNone(names))}
		}
	}
	for _, name := range slices.Sorted(mapKeys(params)) {
		if err := r.parameter(name, params[name]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// parameter sets a parameter's value from its override or Default, checked
// as CloudFormation checks it at deploy.
func (r *resolver) parameter(name string, def any) error {
	p, ok := def.(map[string]any)
	bad := func(format string, a ...any) error {
		return &Error{Property: "Parameters." + name, Line: r.doc.line("Parameters", name), Problem: fmt.Sprintf(format, a...)}
	}
	if !ok {
		return bad("a parameter is a mapping with Type and, usually, Default")
	}
	typ, _ := p["Type"].(string)
	if typ == "" {
		return bad("no Type")
	}
	value, given := r.overrides[name]
	if !given {
		d, has := p["Default"]
		if !has {
			r.paramErrs[name] = fmt.Sprintf("the parameter %s has no Default: pass --parameter-overrides %s=VALUE", name, name)
			return nil
		}
		value = scalarString(d)
	}
	if strings.HasPrefix(typ, "AWS::SSM::Parameter::Value<") && !given {
		r.paramErrs[name] = fmt.Sprintf("the parameter %s (%s) is read from SSM Parameter Store at deploy: pass its value with --parameter-overrides %s=VALUE", name, typ, name)
		return nil
	}
	var values []string
	list := typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<") ||
		strings.HasPrefix(typ, "AWS::SSM::Parameter::Value<List<") || typ == "AWS::SSM::Parameter::Value<CommaDelimitedList>"
	if list {
		values = strings.Split(value, ",")
		if value == "" {
			values = nil
		}
	} else {
		values = []string{value}
	}
	if av, ok := p["AllowedValues"].([]any); ok {
		allowed := make([]string, len(av))
		for i, a := range av {
			allowed[i] = scalarString(a)
		}
		for _, v := range values {
			if !slices.Contains(allowed, v) {
				return bad("%q is not one of its AllowedValues (%s)", v, strings.Join(allowed, ", "))
			}
		}
	}
	if pat, ok := p["AllowedPattern"].(string); ok {
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			return bad("AllowedPattern %q: %v", pat, err)
		}
		for _, v := range values {
			if !re.MatchString(v) {
				return bad("%q does not match its AllowedPattern %s", v, pat)
			}
		}
	}
	if typ == "Number" || typ == "List<Number>" {
		for _, v := range values {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return bad("%q is not a number (Type %s)", v, typ)
			}
			if lo, ok := number(p["MinValue"]); ok && f < lo {
				return bad("%s is below its MinValue %v", v, lo)
			}
			if hi, ok := number(p["MaxValue"]); ok && f > hi {
				return bad("%s is above its MaxValue %v", v, hi)
			}
		}
	}
	for _, v := range values {
		if lo, ok := number(p["MinLength"]); ok && float64(len(v)) < lo {
			return bad("%q is shorter than its MinLength %v", v, lo)
		}
		if hi, ok := number(p["MaxLength"]); ok && float64(len(v)) > hi {
			return bad("%q is longer than its MaxLength %v", v, hi)
		}
	}
	if list {
		l := make([]any, len(values))
		for i, v := range values {
			l[i] = v
		}
		r.params[name] = l
	} else {
		r.params[name] = value
	}
	return nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case string:
		f, err := strconv.ParseFloat(n, 64)
		return f, err == nil
	}
	return 0, false
}

// scalarString is a scalar as CloudFormation writes it in a string.
func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// intrinsicName is the function a value calls ("Ref", "Fn::Sub",
// "Condition"), or "" when it is not a call.
func intrinsicName(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return ""
	}
	for k := range m {
		if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
			return k
		}
	}
	return ""
}

// isToken reports whether a resolved value still holds a reference that
// only a deploy resolves.
func isToken(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if intrinsicName(x) != "" {
			return true
		}
		for _, e := range x {
			if isToken(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if isToken(e) {
				return true
			}
		}
	}
	return false
}

// at says where a value is, for errors: the resource and the dotted
// property path inside its Properties.
type at struct {
	resource string
	prop     string
	path     []string // the template path, for the line
	inCall   bool     // inside an intrinsic's arguments: the property is the call's
}

func (a at) child(key string) at {
	p := a.prop
	if !a.inCall {
		if p != "" {
			p += "."
		}
		p += key
	}
	return at{resource: a.resource, prop: p, path: append(a.path[:len(a.path):len(a.path)], key), inCall: a.inCall}
}

// into is a for the arguments of a call: the same property, a deeper line.
func (a at) into(fn string) at {
	return at{resource: a.resource, prop: a.prop, path: append(a.path[:len(a.path):len(a.path)], fn), inCall: true}
}

func (r *resolver) errAt(a at, format string, args ...any) *Error {
	return &Error{Resource: a.resource, Property: a.prop, Line: r.lineOf(a.path), Problem: fmt.Sprintf(format, args...)}
}

// lineOf is the line of the nearest value on path the template holds.
func (r *resolver) lineOf(path []string) int {
	for n := len(path); n > 0; n-- {
		if l := r.doc.line(path[:n]...); l > 0 {
			return l
		}
	}
	return 0
}

// resolve evaluates v's intrinsics. An *unresolvable error is returned
// bare (errors.As finds it) so a caller can accept a local value instead.
func (r *resolver) resolve(v any, a at) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if fn := intrinsicName(x); fn != "" {
			return r.call(fn, x[fn], a.into(fn))
		}
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(mapKeys(x)) {
			e, err := r.resolve(x[k], a.child(k))
			if err != nil {
				return nil, err
			}
			if e != noValue {
				out[k] = e
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for i, e := range x {
			e, err := r.resolve(e, a.child(strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			if e != noValue {
				out = append(out, e)
			}
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) call(fn string, arg any, a at) (any, error) {
	args := func(n int) ([]any, error) {
		l, ok := arg.([]any)
		if !ok || len(l) != n {
			return nil, r.errAt(a, "%s takes a list of %d", fn, n)
		}
		return l, nil
	}
	switch fn {
	case "Ref":
		name, ok := arg.(string)
		if !ok {
			return nil, r.errAt(a, "Ref takes a name")
		}
		return r.ref(name, a)
	case "Fn::GetAtt":
		var l []any
		switch g := arg.(type) {
		case string:
			res, attr, _ := strings.Cut(g, ".")
			l = []any{res, attr}
		case []any:
			l = g
		}
		if len(l) != 2 {
			return nil, r.errAt(a, "Fn::GetAtt takes [Resource, Attribute]")
		}
		res, _ := l[0].(string)
		attr, err := r.resolve(l[1], a)
		if err != nil {
			return nil, err
		}
		attrS, ok := attr.(string)
		if res == "" || !ok || attrS == "" {
			return nil, r.errAt(a, "Fn::GetAtt takes [Resource, Attribute], both names")
		}
		if !r.isResource(res) {
			return nil, r.errAt(a, "Fn::GetAtt %s.%s: the template has no resource %s%s", res, attrS, res, r.didYouMean(res))
		}
		return map[string]any{"Fn::GetAtt": []any{res, attrS}}, nil
	case "Fn::Sub":
		return r.sub(arg, a)
	case "Fn::Join":
		l, err := args(2)
		if err != nil {
			return nil, err
		}
		delim, ok := l[0].(string)
		if !ok {
			return nil, r.errAt(a, "Fn::Join's delimiter is a string")
		}
		items, err := r.resolve(l[1], a.child("1"))
		if err != nil {
			return nil, err
		}
		list, ok := items.([]any)
		if !ok {
			if isToken(items) {
				return map[string]any{"Fn::Join": []any{delim, items}}, nil
			}
			return nil, r.errAt(a, "Fn::Join's second argument is a list")
		}
		parts := make([]string, len(list))
		for i, e := range list {
			if isToken(e) {
				return map[string]any{"Fn::Join": []any{delim, list}}, nil
			}
			if _, isMap := e.(map[string]any); isMap {
				return nil, r.errAt(a, "Fn::Join joins strings, not a mapping (item %d)", i)
			}
			if _, isList := e.([]any); isList {
				return nil, r.errAt(a, "Fn::Join joins strings, not a list (item %d)", i)
			}
			parts[i] = scalarString(e)
		}
		return strings.Join(parts, delim), nil
	case "Fn::Select":
		l, err := args(2)
		if err != nil {
			return nil, err
		}
		idx, err := r.resolve(l[0], a.child("0"))
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(scalarString(idx))
		if err != nil {
			return nil, r.errAt(a, "Fn::Select's index %v is not a number", idx)
		}
		items, err := r.resolve(l[1], a.child("1"))
		if err != nil {
			return nil, err
		}
		list, ok := items.([]any)
		if !ok {
			if isToken(items) {
				return nil, &unresolvable{fn: fn, why: r.errAt(a, "Fn::Select from %s, a list known only once deployed", compact(items)).Error()}
			}
			return nil, r.errAt(a, "Fn::Select's second argument is a list")
		}
		if i < 0 || i >= len(list) {
			return nil, r.errAt(a, "Fn::Select index %d is outside the list of %d", i, len(list))
		}
		return list[i], nil
	case "Fn::Split":
		l, err := args(2)
		if err != nil {
			return nil, err
		}
		delim, ok := l[0].(string)
		if !ok || delim == "" {
			return nil, r.errAt(a, "Fn::Split's delimiter is a string")
		}
		s, err := r.resolve(l[1], a.child("1"))
		if err != nil {
			return nil, err
		}
		if isToken(s) {
			return map[string]any{"Fn::Split": []any{delim, s}}, nil
		}
		str, ok := s.(string)
		if !ok {
			return nil, r.errAt(a, "Fn::Split splits a string")
		}
		var out []any
		for _, p := range strings.Split(str, delim) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::If":
		l, err := args(3)
		if err != nil {
			return nil, err
		}
		name, ok := l[0].(string)
		if !ok {
			return nil, r.errAt(a, "Fn::If's first argument is a condition's name")
		}
		c, err := r.condition(name, a)
		if err != nil {
			return nil, err
		}
		if c {
			return r.resolve(l[1], a.child("1"))
		}
		return r.resolve(l[2], a.child("2"))
	case "Fn::Equals":
		l, err := args(2)
		if err != nil {
			return nil, err
		}
		x, err := r.resolve(l[0], a.child("0"))
		if err != nil {
			return nil, err
		}
		y, err := r.resolve(l[1], a.child("1"))
		if err != nil {
			return nil, err
		}
		if isToken(x) || isToken(y) {
			return nil, r.errAt(a, "Fn::Equals compares %s and %s: a condition may use parameters, not resources", compact(x), compact(y))
		}
		return scalarString(x) == scalarString(y), nil
	case "Fn::And", "Fn::Or":
		l, ok := arg.([]any)
		if !ok || len(l) < 2 || len(l) > 10 {
			return nil, r.errAt(a, "%s takes a list of 2 to 10 conditions", fn)
		}
		and := fn == "Fn::And"
		for i, e := range l {
			b, err := r.boolOf(e, a.child(strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			if b != and {
				return !and, nil
			}
		}
		return and, nil
	case "Fn::Not":
		l, err := args(1)
		if err != nil {
			return nil, err
		}
		b, err := r.boolOf(l[0], a.child("0"))
		return !b, err
	case "Condition":
		name, ok := arg.(string)
		if !ok {
			return nil, r.errAt(a, "Condition takes a condition's name")
		}
		return r.condition(name, a)
	case "Fn::FindInMap":
		l, err := args(3)
		if err != nil {
			return nil, err
		}
		var keys [3]string
		for i := range l {
			k, err := r.resolve(l[i], a.child(strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			if s, ok := k.(string); ok {
				keys[i] = s
			} else {
				return nil, r.errAt(a, "Fn::FindInMap's keys are names (argument %d is %s)", i+1, compact(k))
			}
		}
		m, _ := r.mappings[keys[0]].(map[string]any)
		top, _ := m[keys[1]].(map[string]any)
		v, ok := top[keys[2]]
		if !ok {
			return nil, r.errAt(a, "Fn::FindInMap [%s, %s, %s]: Mappings has no such entry", keys[0], keys[1], keys[2])
		}
		return v, nil
	case "Fn::Base64":
		s, err := r.resolve(arg, a)
		if err != nil {
			return nil, err
		}
		if isToken(s) {
			return map[string]any{"Fn::Base64": s}, nil
		}
		str, ok := s.(string)
		if !ok {
			return nil, r.errAt(a, "Fn::Base64 encodes a string")
		}
		return base64.StdEncoding.EncodeToString([]byte(str)), nil
	case "Fn::ImportValue":
		return nil, &unresolvable{fn: fn, why: r.errAt(a, "Fn::ImportValue %s: the value another stack exports is known only once both are deployed; "+
			"sluice reads one template: make it a parameter and pass --parameter-overrides NAME=VALUE", compact(arg)).Error()}
	}
	return nil, &unresolvable{fn: fn, why: r.errAt(a, "%s is not an intrinsic function sluice evaluates "+
		"(it does Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::If, Fn::Equals, Fn::And, Fn::Or, Fn::Not, Fn::Select, Fn::Split, Fn::FindInMap, Fn::Base64): "+
		"write the value, or make it a parameter and pass --parameter-overrides NAME=VALUE", fn).Error()}
}

func (r *resolver) boolOf(v any, a at) (bool, error) {
	x, err := r.resolve(v, a)
	if err != nil {
		return false, err
	}
	b, ok := x.(bool)
	if !ok {
		return false, r.errAt(a, "%s is not a condition (Fn::Equals, Fn::And, Fn::Or, Fn::Not or Condition)", compact(v))
	}
	return b, nil
}

func (r *resolver) condition(name string, a at) (bool, error) {
	if b, ok := r.condCache[name]; ok {
		return b, nil
	}
	def, ok := r.conditions[name]
	if !ok {
		return false, r.errAt(a, "the template has no condition %s (Conditions: %s)", name, orNone(slices.Sorted(mapKeys(r.conditions))))
	}
	if r.condBusy[name] {
		return false, r.errAt(a, "the condition %s depends on itself", name)
	}
	r.condBusy[name] = true
	defer delete(r.condBusy, name)
	b, err := r.boolOf(def, at{prop: "Conditions." + name, path: []string{"Conditions", name}})
	if err != nil {
		return false, err
	}
	r.condCache[name] = b
	return b, nil
}

func (r *resolver) isResource(id string) bool {
	_, ok := r.resources[id]
	_, gen := r.generated[id]
	return ok || gen
}

func (r *resolver) didYouMean(id string) string {
	for k := range r.resources {
		if strings.EqualFold(k, id) {
			return " (did you mean " + k + "?)"
		}
	}
	return ""
}

func (r *resolver) ref(name string, a at) (any, error) {
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if msg, ok := r.paramErrs[name]; ok {
		return nil, r.errAt(a, "%s", msg)
	}
	if name == "AWS::NoValue" {
		return noValue, nil
	}
	if v, ok := r.overrides[name]; ok && PseudoParameters[name] != "" {
		return v, nil
	}
	if v, ok := PseudoParameters[name]; ok {
		r.pseudoUsed[name] = true
		return v, nil
	}
	if name == "AWS::NotificationARNs" {
		return []any{}, nil
	}
	if r.isResource(name) {
		if v, ok := r.refName(name, a); ok {
			return v, nil
		}
		return map[string]any{"Ref": name}, nil
	}
	return nil, r.errAt(a, "Ref %s: the template has no parameter or resource %s%s", name, name, r.didYouMean(name))
}

// refNames are the resources whose Ref is a name the template may set
// itself (CloudFormation's return values for Ref): then the Ref is that
// name, known before any deploy. A function's is left a reference: the
// mapping's FunctionName names the function, not a string.
var refNames = map[string]string{
	"AWS::DynamoDB::Table": "TableName",
	"AWS::Kinesis::Stream": "Name",
	"AWS::S3::Bucket":      "BucketName",
}

// refName is the Ref of resource id when its name is a literal of the
// template (after its own intrinsics).
func (r *resolver) refName(id string, a at) (any, bool) {
	res, _ := r.resources[id].(map[string]any)
	prop, ok := refNames[typeOf(res)]
	if !ok || r.refBusy[id] {
		return nil, false
	}
	p, _ := res["Properties"].(map[string]any)
	raw, ok := p[prop]
	if !ok {
		return nil, false
	}
	r.refBusy[id] = true
	defer delete(r.refBusy, id)
	v, err := r.resolve(raw, at{resource: id, prop: prop, path: []string{"Resources", id, "Properties", prop}})
	s, isStr := v.(string)
	if err != nil || !isStr || s == "" {
		return nil, false
	}
	return s, true
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// sub evaluates Fn::Sub. A ${Resource} or ${Resource.Attribute} stays in
// the string, and the result is then a token: {"Fn::Sub": "...${Queue.Arn}..."}.
func (r *resolver) sub(arg any, a at) (any, error) {
	var tmpl string
	vars := map[string]any{}
	switch x := arg.(type) {
	case string:
		tmpl = x
	case []any:
		if len(x) != 2 {
			return nil, r.errAt(a, "Fn::Sub takes a string, or [string, {variables}]")
		}
		s, ok := x[0].(string)
		m, ok2 := x[1].(map[string]any)
		if !ok || !ok2 {
			return nil, r.errAt(a, "Fn::Sub takes a string, or [string, {variables}]")
		}
		tmpl = s
		for k, v := range m {
			rv, err := r.resolve(v, a.child(k))
			if err != nil {
				return nil, err
			}
			vars[k] = rv
		}
	default:
		return nil, r.errAt(a, "Fn::Sub takes a string, or [string, {variables}]")
	}
	// "${Queue.Arn}" alone is that attribute: a reference, not text.
	if m := subVar.FindStringSubmatch(tmpl); m != nil && m[0] == tmpl && !strings.HasPrefix(m[1], "!") {
		name := strings.TrimSpace(m[1])
		if _, isVar := vars[name]; !isVar {
			if res, attr, dotted := strings.Cut(name, "."); dotted && r.isResource(res) {
				return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
			} else if !dotted && r.isResource(name) {
				return map[string]any{"Ref": name}, nil
			}
		}
	}
	token := false
	tokenVars := map[string]any{}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}" // ${!Literal} is the text ${Literal}
		}
		name = strings.TrimSpace(name)
		var v any
		if val, ok := vars[name]; ok {
			v = val
		} else if res, attr, dotted := strings.Cut(name, "."); dotted {
			if !r.isResource(res) {
				if firstErr == nil {
					firstErr = r.errAt(a, "Fn::Sub ${%s}: the template has no resource %s%s", name, res, r.didYouMean(res))
				}
				return m
			}
			v = map[string]any{"Fn::GetAtt": []any{res, attr}}
		} else {
			rv, err := r.ref(name, a)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return m
			}
			v = rv
		}
		if isToken(v) {
			token = true
			if _, ok := vars[name]; ok {
				tokenVars[name] = v
			}
			return m
		}
		switch v.(type) {
		case []any, map[string]any:
			if firstErr == nil {
				firstErr = r.errAt(a, "Fn::Sub ${%s} is a list, not a string", name)
			}
			return m
		}
		return scalarString(v)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if token {
		if len(tokenVars) > 0 {
			return map[string]any{"Fn::Sub": []any{out, tokenVars}}, nil
		}
		return map[string]any{"Fn::Sub": out}, nil
	}
	return out, nil
}
