// Package jsonplan decodes JSON into Go values by encoding/json's rules,
// from a plan made once per type by reflection: field names matched
// exactly, then case-insensitively (the first field in declaration order
// wins), `json` tags with "-" and the "string" option, null leaving
// strings and numbers alone and setting pointers, slices and maps to nil.
//
// The plan decodes the common shapes itself (structs without embedded
// fields, strings, bools, integers, floats, slices, pointers, maps with
// string keys) and hands each value of any other type (interfaces, arrays,
// []byte, json.Number, types with UnmarshalJSON or UnmarshalText, structs
// with embedded fields) to encoding/json, or to the type's UnmarshalJSON,
// as encoding/json would. Anything it does not expect in the input (a
// syntax error, a type mismatch, a key given twice, invalid UTF-8, a lone
// surrogate) makes it give up, and Unmarshal then decodes the whole value
// with encoding/json, which settles the value and the error. Fuzz tests
// keep the two equal.
package jsonplan

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Plan decodes JSON into values of one type.
type Plan struct {
	typ  reflect.Type
	root *node
}

// Cache holds one plan per type. The zero value is ready to use.
type Cache struct {
	m    sync.Map
	last atomic.Pointer[Plan] // the plan returned last
}

// Plan returns the plan for t, making it on first use.
func (c *Cache) Plan(t reflect.Type) *Plan {
	if p := c.last.Load(); p != nil && p.typ == t {
		return p // a handler decodes one type: no map lookup per record
	}
	v, ok := c.m.Load(t)
	if !ok {
		v, _ = c.m.LoadOrStore(t, For(t))
	}
	p := v.(*Plan)
	c.last.Store(p)
	return p
}

// Unmarshal is json.Unmarshal(data, v), through the plan of v's type when v
// points to a zero value (a non-zero one gets encoding/json's merging
// rules from encoding/json). Strings are copied.
func (c *Cache) Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return json.Unmarshal(data, v)
	}
	return c.Plan(rv.Type().Elem()).Unmarshal(data, rv.UnsafePointer(), false)
}

// For makes the plan for t.
func For(t reflect.Type) *Plan {
	return &Plan{typ: t, root: build(t, map[reflect.Type]*node{})}
}

// Unmarshal decodes data into the value of the plan's type at p, which must
// be zero, with the result and error of json.Unmarshal. With share, strings
// may point into data, which must then never change.
func (p *Plan) Unmarshal(data []byte, ptr unsafe.Pointer, share bool) error {
	if p.Decode(data, ptr, share) {
		return nil
	}
	v := reflect.NewAt(p.typ, ptr)
	v.Elem().SetZero()
	return json.Unmarshal(data, v.Interface())
}

// Decode decodes data into the zero value at p and reports whether it
// could; if not, the value is partly written and the caller decodes it
// again with encoding/json (as Unmarshal does).
func (p *Plan) Decode(data []byte, ptr unsafe.Pointer, share bool) bool {
	d := decoder{b: data, share: share}
	if !d.value(p.root, ptr) {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// A Decoder decodes JSON into values of type T by the plan for T.
type Decoder[T any] struct{ p *Plan }

// New makes the decoder for T. Making its plan takes reflection: keep it.
func New[T any]() Decoder[T] { return Decoder[T]{For(reflect.TypeFor[T]())} }

// DecoderOf returns the decoder for T with c's plan for T, made on first use.
func DecoderOf[T any](c *Cache) Decoder[T] { return Decoder[T]{c.Plan(reflect.TypeFor[T]())} }

// Unmarshal decodes data into *v, which must be zero, with the result and
// error of json.Unmarshal. With share, strings may point into data, which
// must then never change.
func (d Decoder[T]) Unmarshal(data []byte, v *T, share bool) error {
	return d.p.Unmarshal(data, unsafe.Pointer(v), share)
}

// Decode decodes data into *v, which must be zero, and reports whether it
// could; if not, *v is partly written and the caller decodes it again with
// encoding/json (as Unmarshal does).
func (d Decoder[T]) Decode(data []byte, v *T, share bool) bool {
	return d.p.Decode(data, unsafe.Pointer(v), share)
}

// Bytes returns the bytes of s without copying them, for a decoder that
// never writes to its input (the plan decoder, encoding/json): nothing may
// write to them.
func Bytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Node kinds.
const (
	kString uint8 = iota + 1
	kBool
	kInt
	kInt8
	kInt16
	kInt32
	kInt64
	kUint
	kUint8
	kUint16
	kUint32
	kUint64
	kUintptr
	kFloat32
	kFloat64
	kStruct
	kSlice
	kPtr
	kMap
	kUnmarshaler // calls the type's UnmarshalJSON
	kFallback    // encoding/json decodes the value
	kNever       // encoding/json decodes the whole document
)

type node struct {
	kind   uint8
	typ    reflect.Type
	elem   *node        // kSlice, kPtr, kMap
	fields []field      // kStruct, in declaration order
	hint   atomic.Int32 // kSlice: the length of the last slice decoded
}

type field struct {
	name   string
	fold   string // the name folded as encoding/json folds it
	off    uintptr
	quoted bool // the "string" option
	n      *node
	// The name in quotes, matched a word at a time.
	qname Lit
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

func build(t reflect.Type, seen map[reflect.Type]*node) *node {
	if n, ok := seen[t]; ok {
		return n
	}
	n := &node{typ: t}
	seen[t] = n
	if t.Kind() == reflect.Pointer {
		// An unnamed pointer's methods are its element's: they are the
		// element node's business. encoding/json looks for none behind a
		// named pointer type: leave those to it.
		n.kind = kNever
		if t.Name() == "" {
			n.kind, n.elem = kPtr, build(t.Elem(), seen)
		}
		return n
	}
	if pt := reflect.PointerTo(t); pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType) {
		switch {
		case t.Name() == "":
			// Methods promoted from an embedded field: encoding/json uses
			// them behind a pointer only, so decoding this value alone
			// would differ from decoding it in place.
			n.kind = kNever
		case pt.Implements(unmarshalerType):
			n.kind = kUnmarshaler
		default:
			n.kind = kFallback
		}
		return n
	}
	switch t.Kind() {
	case reflect.String:
		n.kind = kString
		if t == numberType {
			n.kind = kFallback
		}
	case reflect.Bool:
		n.kind = kBool
	case reflect.Int:
		n.kind = kInt
	case reflect.Int8:
		n.kind = kInt8
	case reflect.Int16:
		n.kind = kInt16
	case reflect.Int32:
		n.kind = kInt32
	case reflect.Int64:
		n.kind = kInt64
	case reflect.Uint:
		n.kind = kUint
	case reflect.Uint8:
		n.kind = kUint8
	case reflect.Uint16:
		n.kind = kUint16
	case reflect.Uint32:
		n.kind = kUint32
	case reflect.Uint64:
		n.kind = kUint64
	case reflect.Uintptr:
		n.kind = kUintptr
	case reflect.Float32:
		n.kind = kFloat32
	case reflect.Float64:
		n.kind = kFloat64
	case reflect.Slice:
		n.kind = kFallback // []byte is base64; []T of another T below
		if t.Elem().Kind() != reflect.Uint8 {
			n.kind, n.elem = kSlice, build(t.Elem(), seen)
		}
	case reflect.Map:
		n.kind = kFallback // integer and text-unmarshaled keys
		if k := t.Key(); k.Kind() == reflect.String && !reflect.PointerTo(k).Implements(textUnmarshalerType) {
			n.kind, n.elem = kMap, build(t.Elem(), seen)
		}
	case reflect.Struct:
		n.kind = kFallback
		if fs, ok := structFields(t, seen); ok {
			n.kind, n.fields = kStruct, fs
		}
	default: // interfaces, arrays, and what encoding/json refuses
		n.kind = kFallback
	}
	return n
}

// structFields lists the fields encoding/json decodes into, by its rules;
// ok is false for structs whose rules the plan does not follow (embedded
// fields, names given twice, "string" on a pointer or a type with its own
// decoding, more than 64 fields).
func structFields(t reflect.Type, seen map[reflect.Type]*node) ([]field, bool) {
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil, false
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !validTag(name) {
			name = ""
		}
		if name == "" {
			name = sf.Name
		}
		ft := sf.Type
		if ft.Name() == "" && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		quoted := false
		if hasOption(opts, "string") {
			switch ft.Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
				reflect.Float32, reflect.Float64, reflect.String:
				quoted = true
			}
		}
		f := field{name: name, fold: string(appendFold(nil, []byte(name))), off: sf.Offset, quoted: quoted, n: build(sf.Type, seen)}
		f.qname = NewLit(`"` + name + `"`)
		if quoted && (sf.Type.Kind() == reflect.Pointer || f.n.kind > kFloat64) {
			return nil, false
		}
		for _, g := range fs {
			if g.name == name {
				return nil, false // dominance rules: encoding/json's business
			}
		}
		fs = append(fs, f)
	}
	if len(fs) > 64 {
		return nil, false
	}
	return fs, true
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// validTag is encoding/json's test of a tag name: letters, digits and
// punctuation other than backslash and quotes.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// appendFold appends name folded as encoding/json folds names to match
// them case-insensitively: ASCII letters upper-cased, other runes to the
// smallest rune of their case-folding orbit.
func appendFold(out, name []byte) []byte {
	for i := 0; i < len(name); {
		if c := name[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return out
}
