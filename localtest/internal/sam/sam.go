// Package sam reads an AWS SAM template (YAML or JSON, short or long
// intrinsic forms) the way SAM and CloudFormation read it before a deploy:
// Globals merged into each function, the parameters (their defaults or
// --parameter-overrides) and conditions applied, the intrinsic functions
// evaluated, and a function's pull event translated into the
// AWS::Lambda::EventSourceMapping SAM generates for it. What it gives is
// a small CloudFormation template (JSON) holding that mapping, its
// function as an AWS::Lambda::Function and the resources they name, which
// package cfn reads as it reads a synthesized one. A plain CloudFormation
// template in YAML goes the same way, without the SAM steps.
//
// Nothing is guessed: a value only a deploy knows (a resource's generated
// name, an Fn::ImportValue) stays a reference that package cfn names, and
// what SAM would refuse is an error naming the resource and the property.
package sam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Transform is the transform that makes a template a SAM template.
const Transform = "AWS::Serverless-2016-10-31"

// Options are what a template is read with.
type Options struct {
	// Parameters are --parameter-overrides: a parameter's value over its
	// Default, or a pseudo parameter's (AWS::Region) over sam local's.
	Parameters map[string]string
}

// Function is what a template says of the function a mapping invokes, or
// of the function sluice invoke runs.
type Function struct {
	LogicalID   string
	Handler     string
	Runtime     string
	PackageType string
	// Serverless reports an AWS::Serverless::Function (sam build writes
	// it to .aws-sam/build/<LogicalID>/).
	Serverless bool
}

// Result is a template read for one mapping or one function.
type Result struct {
	// CloudFormation is the template package cfn reads: the mapping (when
	// one was asked for), the function as an AWS::Lambda::Function, and
	// the resources they name, every intrinsic evaluated but references
	// to resources.
	CloudFormation []byte
	// MappingLogicalID is the mapping's, as SAM generates it
	// (<Function><Event>); Event and EventType its event's.
	MappingLogicalID string
	Event            string
	EventType        string
	Function         Function
	// Notes say what a local read took that AWS would not (sam local's
	// pseudo parameter values) and what a run does instead.
	Notes []string
}

// candidate is one mapping a name may select.
type candidate struct {
	fn, event, typ, esm, fnName string
	sam                         bool
}

func (c candidate) String() string {
	if c.sam {
		s := fmt.Sprintf("%s.%s (%s, mapping %s", c.fn, c.event, c.typ, c.esm)
		if c.fnName != "" {
			s += ", function named " + c.fnName
		}
		return s + ")"
	}
	s := fmt.Sprintf("%s (function %s", c.esm, c.fn)
	if c.fnName != "" {
		s += ", named " + c.fnName
	}
	return s + ")"
}

type template struct {
	doc   *document
	res   map[string]any
	sam   bool
	r     *resolver
	fns   map[string]Function // the functions read, by logical ID
	notes []string
}

func load(data []byte, opts Options) (*template, error) {
	doc, err := parse(data)
	if err != nil {
		return nil, err
	}
	t := &template{doc: doc, fns: map[string]Function{}}
	t.res, _ = doc.root["Resources"].(map[string]any)
	switch tr := doc.root["Transform"].(type) {
	case string:
		t.sam = tr == Transform
	case []any:
		for _, x := range tr {
			t.sam = t.sam || x == Transform
		}
	}
	for _, id := range slices.Sorted(maps.Keys(t.res)) {
		if strings.HasPrefix(typeOf(t.res[id]), "AWS::Serverless::") {
			if !t.sam {
				return nil, &Error{Resource: id, Line: doc.line("Resources", id), Problem: fmt.Sprintf(
					"a %s in a template without \"Transform: %s\": add the transform (SAM deploys only with it)", typeOf(t.res[id]), Transform)}
			}
		}
	}
	if t.r, err = newResolver(doc, opts.Parameters); err != nil {
		return nil, err
	}
	if t.sam {
		if err := t.applyGlobals(); err != nil {
			return nil, err
		}
		for id, v := range t.res {
			if typeOf(v) != "AWS::Serverless::Function" {
				continue
			}
			if _, ok := props(v)["Role"]; !ok {
				t.r.generated[id+"Role"] = "AWS::IAM::Role"
			}
			for ev := range events(v) {
				t.r.generated[id+ev] = "event"
			}
		}
	}
	return t, nil
}

func typeOf(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["Type"].(string)
	return s
}

func props(v any) map[string]any {
	m, _ := v.(map[string]any)
	p, _ := m["Properties"].(map[string]any)
	return p
}

// events yields a function's events by name, each with its definition.
func events(fn any) iter.Seq2[string, map[string]any] {
	return func(yield func(string, map[string]any) bool) {
		evs, _ := props(fn)["Events"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(evs)) {
			ev, _ := evs[name].(map[string]any)
			if !yield(name, ev) {
				return
			}
		}
	}
}

// candidates lists the mappings of the template: each pull event of a
// SAM function, and each AWS::Lambda::EventSourceMapping written out.
func (t *template) candidates() []candidate {
	var out []candidate
	for _, id := range slices.Sorted(maps.Keys(t.res)) {
		v := t.res[id]
		switch typeOf(v) {
		case "AWS::Serverless::Function":
			name, _ := props(v)["FunctionName"].(string)
			for ev, def := range events(v) {
				typ, _ := def["Type"].(string)
				if _, ok := eventTypes[typ]; ok || slices.Contains(notEmulated, typ) {
					out = append(out, candidate{fn: id, event: ev, typ: typ, esm: id + ev, fnName: name, sam: true})
				}
			}
		case "AWS::Lambda::EventSourceMapping":
			c := candidate{esm: id}
			fn := props(v)["FunctionName"]
			if m, ok := fn.(map[string]any); ok {
				c.fn, _ = m["Ref"].(string)
			}
			if c.fn != "" {
				c.fnName, _ = props(t.res[c.fn])["FunctionName"].(string)
			} else {
				c.fnName, _ = fn.(string)
			}
			out = append(out, c)
		}
	}
	return out
}

// ReadMapping reads the mapping name selects: a function's logical ID (or
// FunctionName) when it has one pull event, FUNCTION.EVENT, or the
// mapping's logical ID (as SAM generates it, <Function><Event>).
func ReadMapping(data []byte, name string, opts Options) (*Result, error) {
	t, err := load(data, opts)
	if err != nil {
		return nil, err
	}
	all := t.candidates()
	var hits []candidate
	for _, c := range all {
		if name == c.esm || (c.sam && name == c.fn+"."+c.event) {
			hits = append(hits, c)
		}
	}
	if len(hits) == 0 {
		for _, c := range all {
			if name != "" && (name == c.fn || name == c.fnName) {
				hits = append(hits, c)
			}
		}
	}
	list := func() string {
		var b strings.Builder
		for _, c := range all {
			b.WriteString("\n  " + c.String())
		}
		return b.String()
	}
	switch {
	case len(all) == 0:
		why := "no AWS::Serverless::Function has an event of type Kinesis, DynamoDB, SQS, MSK or SelfManagedKafka"
		if !t.sam {
			why = "no AWS::Lambda::EventSourceMapping resource"
		}
		return nil, &Error{Problem: "the template has no event source mapping: " + why}
	case len(hits) == 0:
		if _, ok := t.res[name]; ok && typeOf(t.res[name]) == "AWS::Serverless::Function" {
			return nil, &Error{Resource: name, Property: "Events", Problem: "the function has no event of type Kinesis, DynamoDB, SQS, MSK or SelfManagedKafka; the template's mappings:" + list()}
		}
		return nil, &Error{Problem: fmt.Sprintf("no event source mapping is %q; name one as FUNCTION.EVENT, by its logical ID, or by its function when it has one:%s", name, list())}
	case len(hits) > 1:
		return nil, &Error{Problem: fmt.Sprintf("%q names %d event source mappings; name one as FUNCTION.EVENT or by its logical ID:%s", name, len(hits), list())}
	}
	c := hits[0]
	if slices.Contains(notEmulated, c.typ) {
		return nil, &Error{Resource: c.fn, Property: "Events." + c.event, Problem: fmt.Sprintf(
			"an event of type %s: sluice run emulates Kinesis, DynamoDB, SQS, MSK and SelfManagedKafka mappings, not %s", c.typ, c.typ)}
	}
	out := map[string]any{}
	res := &Result{MappingLogicalID: c.esm, Event: c.event, EventType: c.typ}
	var esm map[string]any
	if c.sam {
		fn := t.res[c.fn]
		if err := t.deployed(c.fn); err != nil {
			return nil, err
		}
		var def map[string]any
		for ev, d := range events(fn) {
			if ev == c.event {
				def = d
			}
		}
		base := at{resource: c.fn, prop: "Events." + c.event, path: []string{"Resources", c.fn, "Properties", "Events", c.event}}
		if _, ok := props(fn)["TenancyConfig"]; ok {
			return nil, t.r.errAt(base, "SAM refuses it: Event source '%s' is not supported for functions enabled with tenancy configuration (TenancyConfig): only Api and HttpApi event sources are", c.typ)
		}
		if !alnum(c.event) {
			return nil, t.r.errAt(base, "SAM refuses it: the event's name is part of the mapping's logical ID, which must be alphanumeric")
		}
		// SAM checks the event as written, then CloudFormation resolves
		// what SAM generated: the checks see the intrinsics, the mapping
		// gets their values. Resolving the event's own properties names
		// each by the template's name for it (Stream, not EventSourceArn).
		if _, probs := translateEvent(c.fn, c.event, def); len(probs) > 0 {
			var msgs []string
			for _, p := range probs {
				e := t.r.errAt(base.child("Properties").child(p.prop), "%s", p.msg)
				msgs = append(msgs, e.Error())
			}
			return nil, errors.New(strings.Join(msgs, "\n"))
		}
		resolved, err := t.resolveProps(props(def), base.child("Properties"))
		if err != nil {
			return nil, err
		}
		esm, _ = translateEvent(c.fn, c.event, map[string]any{"Type": c.typ, "Properties": resolved})
		if fa, ok := props(fn)["AutoPublishAlias"]; ok {
			t.notes = append(t.notes, fmt.Sprintf("the mapping invokes the alias %s of %s (AutoPublishAlias); locally, the function itself", scalarString(fa), c.fn))
		}
	} else {
		if err := t.deployed(c.esm); err != nil {
			return nil, err
		}
		esm, err = t.resolveProps(props(t.res[c.esm]), at{resource: c.esm, path: []string{"Resources", c.esm, "Properties"}})
		if err != nil {
			return nil, err
		}
	}
	if e, ok := esm["Enabled"]; ok && (e == false || e == "false") {
		t.notes = append(t.notes, "the mapping has Enabled false: deployed, it would not poll; sluice runs it as if enabled")
	}
	out[c.esm] = map[string]any{"Type": "AWS::Lambda::EventSourceMapping", "Properties": esm}
	if err := t.addReferenced(out, esm); err != nil {
		return nil, err
	}
	if ref, ok := esm["FunctionName"].(map[string]any); ok {
		id, _ := ref["Ref"].(string)
		res.Function = t.fns[id]
	}
	return t.finish(res, out)
}

// ReadFunction reads the function name selects (its logical ID or
// FunctionName), for sluice invoke.
func ReadFunction(data []byte, name string, opts Options) (*Result, error) {
	t, err := load(data, opts)
	if err != nil {
		return nil, err
	}
	var fns []string
	id := ""
	for _, k := range slices.Sorted(maps.Keys(t.res)) {
		typ := typeOf(t.res[k])
		if typ != "AWS::Serverless::Function" && typ != "AWS::Lambda::Function" {
			continue
		}
		fns = append(fns, k)
		if n, _ := props(t.res[k])["FunctionName"].(string); k == name || (n != "" && n == name) {
			id = k
		}
	}
	if id == "" {
		return nil, &Error{Problem: fmt.Sprintf("no function is %q; the template's functions: %s", name, orNone(fns))}
	}
	if err := t.deployed(id); err != nil {
		return nil, err
	}
	out := map[string]any{}
	f, err := t.function(id, out)
	if err != nil {
		return nil, err
	}
	return t.finish(&Result{Function: f}, out)
}

func (t *template) finish(res *Result, out map[string]any) (*Result, error) {
	b, err := json.Marshal(map[string]any{"Resources": out})
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	res.CloudFormation = b
	for _, p := range slices.Sorted(maps.Keys(t.r.pseudoUsed)) {
		t.notes = append(t.notes, fmt.Sprintf("%s is %s, as sam local has it (--parameter-overrides %s=VALUE to change it)", p, PseudoParameters[p], p))
	}
	res.Notes = t.notes
	return res, nil
}

// deployed refuses a resource whose Condition is false: it would not be
// in the stack.
func (t *template) deployed(id string) error {
	m, _ := t.res[id].(map[string]any)
	c, ok := m["Condition"]
	if !ok {
		return nil
	}
	name, _ := c.(string)
	b, err := t.r.condition(name, at{resource: id, prop: "Condition", path: []string{"Resources", id, "Condition"}})
	if err != nil {
		return err
	}
	if !b {
		return &Error{Resource: id, Line: t.doc.line("Resources", id, "Condition"), Problem: fmt.Sprintf(
			"its Condition %s is false with these parameters, so the stack would not have it: pass --parameter-overrides that make it true", name)}
	}
	return nil
}

// resolveProps evaluates every property, strictly: a value that cannot be
// evaluated is an error, and every such property is named at once.
func (t *template) resolveProps(p map[string]any, base at) (map[string]any, error) {
	out := map[string]any{}
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		v, err := t.r.resolve(p[k], base.child(k))
		var u *unresolvable
		switch {
		case errors.As(err, &u):
			errs = append(errs, u.why)
		case err != nil:
			errs = append(errs, err.Error())
		case v != noValue:
			out[k] = v
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return out, nil
}

// sourceProperties are the properties package cfn reads of each kind of
// resource a mapping names; the others are left out, so a value the run
// does not need cannot stop it.
var sourceProperties = map[string][]string{
	"AWS::Kinesis::Stream":            {"Name", "ShardCount"},
	"AWS::DynamoDB::Table":            {"TableName"},
	"AWS::SQS::Queue":                 {"QueueName", "FifoQueue", "VisibilityTimeout", "RedrivePolicy"},
	"AWS::Lambda::Function":           nil, // read by function
	"AWS::Serverless::Function":       nil,
	"AWS::S3::Bucket":                 {"BucketName"},
	"AWS::SNS::Topic":                 {"TopicName"},
	"AWS::MSK::Cluster":               {"ClusterName"},
	"AWS::MSK::ServerlessCluster":     {"ClusterName"},
	"AWS::Kinesis::StreamConsumer":    {"StreamARN", "ConsumerName"},
	"AWS::Serverless::SimpleTable":    {"TableName"},
	"AWS::DynamoDB::GlobalTable":      {"TableName"},
	"AWS::Kafka::Cluster":             nil,
	"AWS::Lambda::EventSourceMapping": nil,
}

// addReferenced adds to out each resource that v refers to (a Ref or
// Fn::GetAtt left by the resolver), with the properties cfn reads.
func (t *template) addReferenced(out map[string]any, v any) error {
	for _, id := range referencedIDs(v) {
		if _, done := out[id]; done {
			continue
		}
		r, ok := t.res[id]
		if !ok {
			continue // a resource SAM generates: its value is known only once deployed
		}
		typ := typeOf(r)
		if typ == "AWS::Serverless::Function" || typ == "AWS::Lambda::Function" {
			if _, err := t.function(id, out); err != nil {
				return err
			}
			continue
		}
		if err := t.deployed(id); err != nil {
			return err
		}
		p := map[string]any{}
		for _, k := range sourceProperties[typ] {
			raw, ok := props(r)[k]
			if !ok {
				continue
			}
			rv, err := t.r.resolve(raw, at{resource: id, prop: k, path: []string{"Resources", id, "Properties", k}})
			if err != nil {
				var u *unresolvable
				if errors.As(err, &u) {
					return errors.New(u.why)
				}
				return err
			}
			if rv != noValue {
				p[k] = rv
			}
		}
		out[id] = map[string]any{"Type": typ, "Properties": p}
		if err := t.addReferenced(out, p); err != nil {
			return err
		}
	}
	return nil
}

// referencedIDs lists the resources a resolved value refers to.
func referencedIDs(v any) []string {
	var ids []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["Ref"].(string); ok && len(x) == 1 {
				ids = append(ids, r)
				return
			}
			if g, ok := x["Fn::GetAtt"].([]any); ok && len(x) == 1 && len(g) == 2 {
				if s, ok := g[0].(string); ok {
					ids = append(ids, s)
				}
				return
			}
			if s, ok := x["Fn::Sub"]; ok && len(x) == 1 {
				str, _ := s.(string)
				if l, ok := s.([]any); ok && len(l) == 2 {
					str, _ = l[0].(string)
					walk(l[1])
				}
				for _, m := range subVar.FindAllStringSubmatch(str, -1) {
					name, _, _ := strings.Cut(m[1], ".")
					if !strings.HasPrefix(name, "!") {
						ids = append(ids, name)
					}
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return ids
}

// function adds the function id as an AWS::Lambda::Function with the
// properties a run needs, evaluated: its name, timeout, memory,
// architectures and environment.
func (t *template) function(id string, out map[string]any) (Function, error) {
	v := t.res[id]
	f := Function{LogicalID: id, Serverless: typeOf(v) == "AWS::Serverless::Function"}
	p := props(v)
	base := at{resource: id, path: []string{"Resources", id, "Properties"}}
	lp := map[string]any{}
	for _, k := range []string{"FunctionName", "Timeout", "MemorySize", "Architectures", "Handler", "Runtime", "PackageType"} {
		raw, ok := p[k]
		if !ok {
			continue
		}
		rv, err := t.r.resolve(raw, base.child(k))
		if err != nil {
			var u *unresolvable
			if errors.As(err, &u) {
				return f, errors.New(u.why)
			}
			return f, err
		}
		if rv == noValue {
			continue
		}
		switch k {
		case "Timeout", "MemorySize":
			n, ok := integer(rv)
			if !ok {
				return f, t.r.errAt(base.child(k), "%s is not a whole number; CloudFormation would refuse it", compact(rv))
			}
			rv = n
		case "Architectures":
			l, ok := rv.([]any)
			if !ok || len(l) != 1 || (l[0] != "x86_64" && l[0] != "arm64") {
				why := ""
				if ok && len(l) > 1 {
					why = " (SAM appends a function's Architectures to those of Globals: set it in one place)"
				}
				return f, t.r.errAt(base.child(k), "%s: Lambda takes one architecture, x86_64 or arm64%s", compact(rv), why)
			}
		case "Handler":
			f.Handler, _ = rv.(string)
		case "Runtime":
			f.Runtime, _ = rv.(string)
		case "PackageType":
			f.PackageType, _ = rv.(string)
		}
		lp[k] = rv
	}
	if env, ok := p["Environment"]; ok {
		envMap, _ := env.(map[string]any)
		if envMap == nil {
			if e, err := t.r.resolve(env, base.child("Environment")); err == nil {
				envMap, _ = e.(map[string]any)
			}
		}
		vars, _ := envMap["Variables"].(map[string]any)
		if vars == nil && envMap["Variables"] != nil {
			rv, err := t.r.resolve(envMap["Variables"], base.child("Environment").child("Variables"))
			if err != nil {
				return f, err
			}
			vars, _ = rv.(map[string]any)
		}
		outVars := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			a := base.child("Environment").child("Variables").child(k)
			rv, err := t.r.resolve(vars[k], a)
			var u *unresolvable
			switch {
			case errors.As(err, &u):
				// Given with --env, or named as missing: the original
				// stays, which package cfn reports.
				outVars[k] = vars[k]
				continue
			case err != nil:
				return f, err
			case rv == noValue:
				continue
			}
			switch rv.(type) {
			case []any:
				return f, t.r.errAt(a, "%s is a list; an environment variable is a string", compact(rv))
			case map[string]any:
				if !isToken(rv) {
					return f, t.r.errAt(a, "%s is a mapping; an environment variable is a string", compact(rv))
				}
			case nil:
				rv = ""
			case string:
			default:
				rv = scalarString(rv) // Lambda's variables are strings
			}
			outVars[k] = rv
		}
		lp["Environment"] = map[string]any{"Variables": outVars}
		// What a variable refers to is named, not read: its value is known
		// only once deployed.
		for _, ref := range referencedIDs(outVars) {
			if _, done := out[ref]; !done && t.res[ref] != nil {
				out[ref] = map[string]any{"Type": typeOf(t.res[ref]), "Properties": map[string]any{}}
			}
		}
	}
	out[id] = map[string]any{"Type": "AWS::Lambda::Function", "Properties": lp}
	t.fns[id] = f
	return f, nil
}

// integer reads a whole number as CloudFormation does, a string of digits
// included (a parameter's value is a string).
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func alnum(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func mapKeys[V any](m map[string]V) iter.Seq[string] { return maps.Keys(m) }

// compact is a value as compact JSON, for messages.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) == nil {
		return buf.String()
	}
	return string(b)
}
