// Package filter compiles and matches the patterns of an event source
// mapping's FilterCriteria as Lambda does (docs/localtest.md, "Event
// filtering"): Compile checks a pattern's syntax against Lambda's rules
// and says where it is wrong; a Set of patterns keeps a record when any
// matches the record as filters see it (View: its fields as Lambda
// delivers it, the payload decoded). The runner (package localtest) owns
// the FilterCriteria of a mapping, its validation errors and what happens
// to a dropped record.
package filter

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluicehq/sluice/events"
)

// MaxPatternLength is Lambda's limit on a pattern: 4,096 characters
// (CreateEventSourceMapping).
const MaxPatternLength = 4096

// ErrTooLong is wrapped by Compile's error for a pattern past
// MaxPatternLength: a length limit, not a pattern AWS cannot read.
var ErrTooLong = errors.New("too long")

// payloadKey is the field that holds a source's record payload, which
// filters match as JSON.
func payloadKey(source events.Source) string {
	switch source {
	case events.SourceKinesis:
		return "data"
	case events.SourceDynamoDB:
		return "dynamodb"
	case events.SourceKafka:
		return "value"
	}
	return "body"
}

// A Set is a mapping's compiled FilterCriteria: a record is delivered
// when it matches any of its patterns.
type Set struct {
	source   events.Source
	patterns []*Pattern
}

// NewSet is the set of patterns compiled for source.
func NewSet(source events.Source, patterns []*Pattern) *Set {
	return &Set{source: source, patterns: patterns}
}

// Keep reports whether Lambda delivers the record: it matches at least one
// filter. A record that cannot be read as its source's JSON is dropped.
func (fs *Set) Keep(event json.RawMessage) bool {
	if fs == nil {
		return true
	}
	view, err := View(fs.source, event)
	if err != nil {
		return false
	}
	for _, p := range fs.patterns {
		if p.Match(view) {
			return true
		}
	}
	return false
}

// payload is a record's payload as filters see it: JSON (value holds it)
// or a plain string (text).
type payload struct {
	isJSON bool
	value  any
	text   string
}

func newPayload(b []byte) payload {
	if v, err := DecodeJSON(b); err == nil {
		return payload{isJSON: true, value: v}
	}
	return payload{text: string(b)}
}

// DecodeJSON decodes one JSON value, keeping numbers as their text.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// View is the record as filters see it: its fields as Lambda
// delivers it, with the payload decoded (SQS body, Kinesis data and Kafka
// value from base64). A Kinesis record's fields under "kinesis"
// (partitionKey, sequenceNumber, data, ...) are lifted to the top level,
// where Lambda's patterns name them.
func View(source events.Source, event json.RawMessage) (map[string]any, error) {
	v, err := DecodeJSON(event)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the record is not a JSON object")
	}
	switch source {
	case events.SourceSQS, events.SourceSQSFIFO:
		if s, ok := m["body"].(string); ok {
			m["body"] = newPayload([]byte(s))
		}
	case events.SourceKinesis:
		if k, ok := m["kinesis"].(map[string]any); ok {
			delete(m, "kinesis")
			for name, x := range k {
				m[name] = x
			}
		}
		m["data"] = base64Payload(m["data"])
	case events.SourceKafka:
		if _, ok := m["value"]; ok {
			m["value"] = base64Payload(m["value"])
		}
	}
	return m, nil
}

func base64Payload(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return payload{text: s}
	}
	return newPayload(b)
}

// A Pattern is one compiled filter pattern: every field must match (AND),
// and each $or group needs one of its alternatives to match.
type Pattern struct {
	fields []fieldRule
	ors    [][]*Pattern
}

// fieldRule is a Pattern's rule for one field: a nested Pattern, or a list
// of values and operators of which any may match (OR).
type fieldRule struct {
	name string
	sub  *Pattern
	leaf []matcher
}

type matchKind int

const (
	mEquals matchKind = iota // a string, number, boolean or null
	mIgnoreCase
	mPrefix
	mSuffix
	mAnythingBut
	mNumeric
	mExists
)

type matcher struct {
	kind   matchKind
	value  any // mEquals: string, json.Number (compared by its text), bool or nil
	str    string
	fold   bool      // prefix/suffix with equals-ignore-case
	but    []any     // anything-but: strings and float64s
	ranges []numCond // numeric
	exists bool
}

type numCond struct {
	op string
	n  float64
}

// Compile parses a Pattern string and checks it against Lambda's
// syntax. The error says where in the Pattern it is wrong.
func Compile(source events.Source, text string) (*Pattern, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("is empty; a Pattern is a JSON object such as {\"" + payloadKey(source) + "\": {\"field\": [\"value\"]}}")
	}
	if n := utf8.RuneCountInString(text); n > MaxPatternLength {
		return nil, fmt.Errorf("%w: is %d characters long; Lambda allows at most %d", ErrTooLong, n, MaxPatternLength)
	}
	v, err := DecodeJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON object whose fields name the record's fields")
	}
	return compileObject(source, obj, "", true)
}

func compileObject(source events.Source, obj map[string]any, path string, top bool) (*Pattern, error) {
	p := &Pattern{}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := obj[name]
		at := join(path, name)
		if name == "$or" {
			alts, ok := v.([]any)
			if !ok || len(alts) < 2 {
				return nil, fmt.Errorf("%s: $or takes an array of at least two patterns", at)
			}
			var group []*Pattern
			for i, a := range alts {
				o, ok := a.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s[%d]: each $or alternative must be a JSON object (a Pattern)", at, i)
				}
				sub, err := compileObject(source, o, path, top)
				if err != nil {
					return nil, err
				}
				group = append(group, sub)
			}
			p.ors = append(p.ors, group)
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			sub, err := compileObject(source, x, at, false)
			if err != nil {
				return nil, err
			}
			p.fields = append(p.fields, fieldRule{name: name, sub: sub})
		case []any:
			if top && name == payloadKey(source) && (source == events.SourceKinesis || source == events.SourceDynamoDB) {
				return nil, fmt.Errorf("%s: the rule for the %s payload must be a JSON object naming its fields (Lambda rejects a non-JSON Pattern for a stream's data properties)", at, source)
			}
			if len(x) == 0 {
				return nil, fmt.Errorf("%s: an empty list matches nothing; list at least one value or operator", at)
			}
			var leaf []matcher
			for i, r := range x {
				m, err := compileRule(r)
				if err != nil {
					return nil, fmt.Errorf("%s[%d]: %v", at, i, err)
				}
				leaf = append(leaf, m)
			}
			p.fields = append(p.fields, fieldRule{name: name, leaf: leaf})
		default:
			return nil, fmt.Errorf("%s: must be a list of values or operators (e.g. [%s]) or a nested object, not %s", at, mustJSON(v), mustJSON(v))
		}
	}
	return p, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// compileRule compiles one element of a value list.
func compileRule(r any) (matcher, error) {
	switch x := r.(type) {
	case string, json.Number, bool, nil:
		return matcher{kind: mEquals, value: x}, nil
	case []any:
		return matcher{}, errors.New("a nested list is not a value; list the values side by side")
	case map[string]any:
		if len(x) != 1 {
			return matcher{}, fmt.Errorf("an operator object has exactly one operator, not %d", len(x))
		}
		for op, arg := range x {
			return compileOperator(op, arg)
		}
	}
	return matcher{}, fmt.Errorf("unexpected value %v", r)
}

func compileOperator(op string, arg any) (matcher, error) {
	switch op {
	case "prefix", "suffix":
		kind := mPrefix
		if op == "suffix" {
			kind = mSuffix
		}
		switch a := arg.(type) {
		case string:
			return matcher{kind: kind, str: a}, nil
		case map[string]any:
			if s, ok := a["equals-ignore-case"].(string); ok && len(a) == 1 {
				return matcher{kind: kind, str: s, fold: true}, nil
			}
		}
		return matcher{}, fmt.Errorf("%s takes a string, or {\"equals-ignore-case\": string}", op)
	case "equals-ignore-case":
		s, ok := arg.(string)
		if !ok {
			return matcher{}, errors.New("equals-ignore-case takes a string")
		}
		return matcher{kind: mIgnoreCase, str: s}, nil
	case "exists":
		b, ok := arg.(bool)
		if !ok {
			return matcher{}, errors.New("exists takes true or false")
		}
		return matcher{kind: mExists, exists: b}, nil
	case "anything-but":
		return compileAnythingBut(arg)
	case "numeric":
		return compileNumeric(arg)
	case "wildcard", "cidr":
		return matcher{}, fmt.Errorf("%s is an EventBridge operator that Lambda event filtering does not support", op)
	}
	return matcher{}, fmt.Errorf("unknown operator %q; Lambda supports prefix, suffix, equals-ignore-case, anything-but, numeric and exists", op)
}

func compileAnythingBut(arg any) (matcher, error) {
	var vals []any
	switch a := arg.(type) {
	case string, json.Number:
		vals = []any{a}
	case []any:
		if len(a) == 0 {
			return matcher{}, errors.New("anything-but takes a value or a non-empty list of values")
		}
		vals = a
	case map[string]any:
		return matcher{}, errors.New("anything-but with prefix, suffix, equals-ignore-case or wildcard is not supported by Lambda event filtering (EventBridge event buses only); list the values to exclude")
	default:
		return matcher{}, errors.New("anything-but takes a string, a number or a list of them")
	}
	m := matcher{kind: mAnythingBut}
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			m.but = append(m.but, x)
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return matcher{}, fmt.Errorf("anything-but: %v", err)
			}
			m.but = append(m.but, f)
		default:
			return matcher{}, errors.New("anything-but lists strings or numbers only")
		}
	}
	return m, nil
}

func compileNumeric(arg any) (matcher, error) {
	a, ok := arg.([]any)
	if !ok || (len(a) != 2 && len(a) != 4) {
		return matcher{}, errors.New(`numeric takes [op, number] or [op, number, op, number], e.g. [">", 0, "<=", 5]`)
	}
	m := matcher{kind: mNumeric}
	lower, upper := false, false
	for i := 0; i < len(a); i += 2 {
		op, ok := a[i].(string)
		if !ok {
			return matcher{}, fmt.Errorf("numeric: %v is not an operator (=, <, <=, >, >=)", a[i])
		}
		num, ok := a[i+1].(json.Number)
		if !ok {
			return matcher{}, fmt.Errorf("numeric: %s must be followed by a number, not %s", op, mustJSON(a[i+1]))
		}
		f, err := num.Float64()
		if err != nil || math.IsInf(f, 0) {
			return matcher{}, fmt.Errorf("numeric: %s is out of range", num)
		}
		switch op {
		case "=":
			if len(a) != 2 {
				return matcher{}, errors.New(`numeric: "=" stands alone; it cannot be combined with a range`)
			}
		case ">", ">=":
			if lower {
				return matcher{}, errors.New("numeric: a range has at most one lower bound (> or >=)")
			}
			lower = true
		case "<", "<=":
			if upper {
				return matcher{}, errors.New("numeric: a range has at most one upper bound (< or <=)")
			}
			upper = true
		default:
			return matcher{}, fmt.Errorf("numeric: %q is not one of =, <, <=, >, >=", op)
		}
		m.ranges = append(m.ranges, numCond{op: op, n: f})
	}
	return m, nil
}

// match reports whether the object (a record view, or a value inside one)
// satisfies the Pattern.
func (p *Pattern) Match(obj any) bool {
	m, _ := obj.(map[string]any)
	for _, f := range p.fields {
		v, present := m[f.name]
		if !f.matches(v, present) {
			return false
		}
	}
	for _, group := range p.ors {
		ok := false
		for _, alt := range group {
			if alt.Match(obj) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (f fieldRule) matches(v any, present bool) bool {
	if pl, ok := v.(payload); ok {
		// A payload matches a nested Pattern only as JSON, and a list of
		// values only as a plain string (Lambda drops the record on a
		// mismatch).
		if f.sub != nil {
			return pl.isJSON && f.sub.Match(pl.value)
		}
		if pl.isJSON {
			return false
		}
		return matchLeaf(f.leaf, []any{pl.text})
	}
	if f.sub != nil {
		if arr, ok := v.([]any); ok {
			objects := false
			for _, e := range arr {
				if _, isObj := e.(map[string]any); isObj {
					objects = true
					if f.sub.Match(e) {
						return true
					}
				}
			}
			if objects {
				return false
			}
		}
		return f.sub.Match(v)
	}
	var vals []any
	if present {
		vals = leaves(v, vals)
	}
	return matchLeaf(f.leaf, vals)
}

// leaves appends the scalar values a field holds: itself, or the elements
// of an array (flattened). An object holds none.
func leaves(v any, out []any) []any {
	switch x := v.(type) {
	case map[string]any:
		return out
	case []any:
		for _, e := range x {
			out = leaves(e, out)
		}
		return out
	}
	return append(out, v)
}

func matchLeaf(rules []matcher, vals []any) bool {
	for _, r := range rules {
		if r.kind == mExists {
			if r.exists == (len(vals) > 0) {
				return true
			}
			continue
		}
		for _, v := range vals {
			if r.matchValue(v) {
				return true
			}
		}
	}
	return false
}

func (r matcher) matchValue(v any) bool {
	switch r.kind {
	case mEquals:
		switch want := r.value.(type) {
		case nil:
			return v == nil
		case string:
			s, ok := v.(string)
			return ok && s == want
		case json.Number:
			// Lambda compares numbers by their text: 300, 300.0 and
			// 3.0e2 are not equal (use numeric for a numeric match).
			n, ok := v.(json.Number)
			return ok && n.String() == want.String()
		case bool:
			b, ok := v.(bool)
			return ok && b == want
		}
	case mIgnoreCase:
		s, ok := v.(string)
		return ok && strings.EqualFold(s, r.str)
	case mPrefix, mSuffix:
		s, ok := v.(string)
		if !ok {
			return false
		}
		if r.fold {
			s, want := strings.ToLower(s), strings.ToLower(r.str)
			if r.kind == mSuffix {
				return strings.HasSuffix(s, want)
			}
			return strings.HasPrefix(s, want)
		}
		if r.kind == mSuffix {
			return strings.HasSuffix(s, r.str)
		}
		return strings.HasPrefix(s, r.str)
	case mAnythingBut:
		for _, b := range r.but {
			switch x := b.(type) {
			case string:
				if s, ok := v.(string); ok && s == x {
					return false
				}
			case float64:
				if n, ok := v.(json.Number); ok {
					if f, err := n.Float64(); err == nil && f == x {
						return false
					}
				}
			}
		}
		return true
	case mNumeric:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil {
			return false
		}
		for _, c := range r.ranges {
			var ok bool
			switch c.op {
			case "=":
				ok = f == c.n
			case "<":
				ok = f < c.n
			case "<=":
				ok = f <= c.n
			case ">":
				ok = f > c.n
			case ">=":
				ok = f >= c.n
			}
			if !ok {
				return false
			}
		}
		return true
	}
	return false
}
