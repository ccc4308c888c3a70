// Package jsonread reads the JSON of the events Lambda hands a function, by
// encoding/json's rules, without reflection and without unsafe: a Reader
// walks the bytes once, and a Table of fields per object shape says where
// each known member goes; every other member is skipped (and checked), as
// encoding/json skips a key its struct does not name. It finds bytes and
// reads AWS's envelope fields; what a record carries for the user is left
// to encoding/json (handlers.JSON).
//
// The rules it keeps, member by member, are encoding/json's: a key matches
// a field exactly, else case-insensitively; a repeated key decodes again
// into the same place (the last scalar wins, objects merge); null leaves a
// string, number, bool or struct as it was and empties a slice, map or
// pointer; invalid UTF-8 and lone surrogates in a string become U+FFFD; a
// value of the wrong type is an error for the record, but the rest of the
// record is still read (a *TypeError). Invalid JSON anywhere, in a member it
// skips too, is a *SyntaxError, which SyntaxErr words as encoding/json does.
//
// A Reader made with Shared returns strings cut from one copy of the whole
// input (one allocation per event, not per field); those strings keep the
// copy alive as long as any of them is kept. One made with Gathered writes
// its strings' texts one after another into a strings.Builder and cuts
// them from it: no copy of the bytes between them (keys, numbers, the
// members skipped).
package jsonread

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// A SyntaxError is input that is not JSON.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// A TypeError is a value of a type its field cannot hold, or one it cannot
// take (a number out of range, base64 that does not decode).
type TypeError struct {
	Offset int
	Field  string // the member's key, "" for an array element or a map value
	Msg    string
}

func (e *TypeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s (byte %d)", e.Msg, e.Offset)
	}
	return fmt.Sprintf("field %q: %s (byte %d)", e.Field, e.Msg, e.Offset)
}

// SyntaxErr returns encoding/json's error for input the Reader found not to
// be JSON, so the message a user reads is the one encoding/json gives; err,
// the Reader's own, when encoding/json accepts the input (a disagreement the
// fuzz targets exist to find).
func SyntaxErr(input []byte, err error) error {
	var discard struct{}
	if jerr := json.Unmarshal(input, &discard); jerr != nil {
		return jerr
	}
	return err
}

// A Reader reads one JSON text.
type Reader struct {
	b     []byte
	s     string // b as a string, when shared: strings are cut from it
	i     int
	depth int
	key   []byte // the current member's key, unescaped
	kbuf  []byte
	sbuf  []byte // a string's text, unescaped
	saved error  // the first *TypeError since the last Saved
	// orders holds, per table (or set of names) read, the order its
	// members came in, as last met in this input: the records of one
	// event are alike, so the key to try first is the one that followed
	// the same key in the record before.
	orders []order
	kept   keptText
	// strs, when not nil, is where the strings are written one after
	// another and cut from (Gathered); a pointer, as DynamoDB's attribute
	// values make a Reader each.
	strs *strings.Builder
}

// An order is the members' order of one shape: next[i] is the field
// that followed field i-1 (next[0] the first field), as last met.
type order struct {
	of   any // the *Table or *Names
	next []int
}

// orderOf returns the order of the shape of, with n fields, made when
// first asked for: in the table's own order.
func (r *Reader) orderOf(of any, n int) []int {
	for i := range r.orders {
		if r.orders[i].of == of {
			return r.orders[i].next
		}
	}
	next := make([]int, n+1)
	for i := range next {
		next[i] = i
	}
	r.orders = append(r.orders, order{of, next})
	return next
}

// New returns a Reader of b; strings it returns are copies.
func New(b []byte) *Reader { return &Reader{b: b} }

// Shared returns a Reader of b whose strings are cut from one copy of b,
// made here.
func Shared(b []byte) *Reader { return &Reader{b: b, s: string(b)} }

// Gathered returns a Reader of b whose strings are written one after
// another into one strings.Builder and cut from the string it holds: an
// event whose strings are a part of its bytes (an SQS message's envelope,
// its bodies) pays for that part once, not for a copy of the whole input.
// A string keeps the Builder's buffer it lies in alive. GrowStrings makes
// room for the strings to come.
func Gathered(b []byte) *Reader { return &Reader{b: b, strs: new(strings.Builder)} }

// Offset is the index of the next byte to read.
func (r *Reader) Offset() int { return r.i }

// Bytes returns the input.
func (r *Reader) Bytes() []byte { return r.b }

// Saved returns the first *TypeError met since the last call, and forgets it.
func (r *Reader) Saved() error {
	err := r.saved
	r.saved = nil
	return err
}

// Fail records a *TypeError for the value that ends at the current offset
// (a field's own check: a value in range but not one it takes).
func (r *Reader) Fail(format string, args ...any) {
	r.save(&TypeError{Offset: r.i, Field: string(r.key), Msg: fmt.Sprintf(format, args...)})
}

func (r *Reader) save(err error) {
	if r.saved == nil {
		r.saved = err
	}
}

func (r *Reader) syntax(msg string) error {
	return &SyntaxError{Offset: r.i, Msg: msg}
}

func (r *Reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// Peek returns the first byte of the next value ('{', '[', '"', 't', 'f',
// 'n', or a digit or '-' for a number), 0 at the end of the input.
func (r *Reader) Peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// End checks that only white space follows.
func (r *Reader) End() error {
	r.ws()
	if r.i != len(r.b) {
		return r.syntax("data after the top-level value")
	}
	return nil
}

// what names the kind of value starting with c, for a *TypeError.
func what(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a bool"
	case 'n':
		return "null"
	}
	return "a number"
}

// mismatch skips the value at r (which starts with c) and records that its
// field wants something else.
func (r *Reader) mismatch(c byte, want string) error {
	at := r.i
	if err := r.Skip(); err != nil {
		return err
	}
	r.save(&TypeError{Offset: at, Field: string(r.key), Msg: what(c) + " where " + want + " is expected"})
	return nil
}

// Null consumes null and reports whether it was there.
func (r *Reader) Null() (bool, error) {
	if r.Peek() != 'n' {
		return false, nil
	}
	return true, r.lit("null")
}

func (r *Reader) lit(w string) error {
	if len(r.b)-r.i < len(w) || string(r.b[r.i:r.i+len(w)]) != w {
		return r.syntax("not a literal")
	}
	r.i += len(w)
	return nil
}

// Object reads an object, calling fn for each member with its key
// (unescaped; valid until fn returns) and r at the member's value, which fn
// must consume. A value that is not an object is a *TypeError (want names
// what was expected); null is the caller's to check first.
func (r *Reader) Object(want string, fn func(key []byte) error) error {
	more, err := r.openObject(want)
	for more && err == nil {
		var key []byte
		if key, err = r.memberKey(); err != nil {
			return err
		}
		if err = fn(key); err == nil {
			more, err = r.nextMember()
		}
	}
	return err
}

// openObject consumes the opening brace of an object and reports whether a
// member follows (false for {}). A value that is not an object is a
// *TypeError (want names what was expected), recorded and skipped.
func (r *Reader) openObject(want string) (more bool, err error) {
	c := r.Peek()
	if c != '{' {
		return false, r.mismatch(c, want)
	}
	if r.depth++; r.depth > maxDepth {
		return false, r.syntax("exceeded max depth")
	}
	r.i++
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == '}' {
		r.i++
		r.depth--
		return false, nil
	}
	return true, nil
}

// memberKey reads a member's key (unescaped; valid until the next key is
// read) and the colon after it.
func (r *Reader) memberKey() ([]byte, error) {
	r.ws()
	key, err := r.keyBytes()
	if err != nil {
		return nil, err
	}
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != ':' {
		return nil, r.syntax("no colon after an object key")
	}
	r.i++
	r.key = key
	return key, nil
}

// knownKey consumes the next member's key and its colon when the key is
// spelled as name, byte for byte, with the colon right after it: the
// common case of an event whose members come in the same order in every
// record, which costs one comparison instead of reading the key. name must
// be plain ASCII without a quote or backslash. On false nothing is
// consumed.
func (r *Reader) knownKey(name string) bool {
	b, i := r.b, r.i
	end := i + 1 + len(name) // the closing quote
	if end+1 >= len(b) || b[i] != '"' || b[end] != '"' || b[end+1] != ':' || string(b[i+1:end]) != name {
		return false
	}
	r.key = b[i+1 : end]
	r.i = end + 2
	return true
}

// nextMember consumes the comma after a member (more true) or the
// object's closing brace (more false).
func (r *Reader) nextMember() (more bool, err error) {
	r.ws()
	if r.i >= len(r.b) {
		return false, r.syntax("the object does not end")
	}
	switch r.b[r.i] {
	case ',':
		r.i++
		return true, nil
	case '}':
		r.i++
		r.depth--
		return false, nil
	}
	return false, r.syntax("no comma or brace after an object member")
}

// Array reads an array, calling fn with r at each element, which fn must
// consume. A value that is not an array is a *TypeError; null is the
// caller's to check first.
func (r *Reader) Array(want string, fn func(i int) error) error {
	c := r.Peek()
	if c != '[' {
		return r.mismatch(c, want)
	}
	if r.depth++; r.depth > maxDepth {
		return r.syntax("exceeded max depth")
	}
	r.i++
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == ']' {
		r.i++
		r.depth--
		return nil
	}
	key := r.key
	for n := 0; ; n++ {
		r.key = nil
		if err := fn(n); err != nil {
			return err
		}
		r.ws()
		if r.i >= len(r.b) {
			return r.syntax("the array does not end")
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			r.depth--
			r.key = key
			return nil
		default:
			return r.syntax("no comma or bracket after an array element")
		}
	}
}

// Base64Into reads a []byte by encoding/json's rules into *dst: a base64
// string, decoded into alloc(n) (a slice of length n; nil means make), or
// an array of numbers 0-255; null makes it nil. Data that is not base64 is
// a *TypeError.
func (r *Reader) Base64Into(dst *[]byte, alloc func(n int) []byte) error {
	c := r.Peek()
	switch c {
	case 'n':
		*dst = nil
		return r.lit("null")
	case '[':
		out := (*dst)[:0]
		err := r.Array("", func(i int) error {
			at := r.i
			num, ok, err := r.Number()
			if !ok || err != nil {
				out = append(out, 0)
				return err
			}
			v, perr := strconv.ParseUint(string(num), 10, 8)
			if perr != nil {
				r.save(&TypeError{Offset: at, Field: string(r.key), Msg: "number " + string(num) + " is not a byte"})
			}
			out = append(out, byte(v))
			return nil
		})
		if out == nil {
			out = []byte{}
		}
		*dst = out
		return err
	case '"':
	default:
		return r.mismatch(c, "a base64 string")
	}
	at := r.i
	raw, _, err := r.readText(&r.sbuf)
	if err != nil {
		return err
	}
	n := base64.StdEncoding.DecodedLen(len(raw))
	var out []byte
	if alloc != nil {
		out = alloc(n)
	} else {
		out = make([]byte, n)
	}
	m, err := base64.StdEncoding.Decode(out, raw)
	if err != nil {
		r.save(&TypeError{Offset: at, Field: string(r.key), Msg: err.Error()})
		return nil
	}
	*dst = out[:m:m]
	return nil
}

// Number reads a number and returns its text; a value of another type is
// recorded and skipped (ok false), null included.
func (r *Reader) Number() (num []byte, ok bool, err error) {
	c := r.Peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, false, r.mismatch(c, "a number")
	}
	start := r.i
	if err := r.number(); err != nil {
		return nil, false, err
	}
	return r.b[start:r.i], true, nil
}

// Int64Into reads an integer into *dst; null leaves it as it was.
func (r *Reader) Int64Into(dst *int64) error {
	if null, err := r.Null(); null || err != nil {
		return err
	}
	at := r.i
	num, ok, err := r.Number()
	if !ok || err != nil {
		return err
	}
	v, perr := strconv.ParseInt(string(num), 10, 64)
	if perr != nil {
		r.save(&TypeError{Offset: at, Field: string(r.key), Msg: "number " + string(num) + " is not a 64-bit integer"})
		return nil
	}
	*dst = v
	return nil
}

// Float64Into reads a number into *dst; null leaves it as it was.
func (r *Reader) Float64Into(dst *float64) error {
	if null, err := r.Null(); null || err != nil {
		return err
	}
	at := r.i
	num, ok, err := r.Number()
	if !ok || err != nil {
		return err
	}
	v, perr := strconv.ParseFloat(string(num), 64)
	if perr != nil {
		r.save(&TypeError{Offset: at, Field: string(r.key), Msg: "number " + string(num) + " is out of range"})
		return nil
	}
	*dst = v
	return nil
}

// BoolInto reads true or false into *dst; null leaves it as it was.
func (r *Reader) BoolInto(dst *bool) error {
	switch c := r.Peek(); c {
	case 'n':
		return r.lit("null")
	case 't':
		*dst = true
		return r.lit("true")
	case 'f':
		*dst = false
		return r.lit("false")
	default:
		return r.mismatch(c, "a bool")
	}
}

// number consumes a number by JSON's grammar.
func (r *Reader) number() error {
	b, i := r.b, r.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		r.i = i
		return r.syntax("not a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			r.i = i
			return r.syntax("no digit after a decimal point")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			r.i = i
			return r.syntax("no digit in an exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	r.i = i
	return nil
}

// Skip consumes one value of any kind, checking it is JSON.
func (r *Reader) Skip() error {
	switch c := r.Peek(); c {
	case '{':
		key := r.key
		err := r.Object("", func([]byte) error { return r.Skip() })
		r.key = key
		return err
	case '[':
		return r.Array("", func(int) error { return r.Skip() })
	case '"':
		return r.skipString()
	case 't':
		return r.lit("true")
	case 'f':
		return r.lit("false")
	case 'n':
		return r.lit("null")
	case 0:
		return r.syntax("the input ends where a value is expected")
	default:
		return r.number()
	}
}

// Raw consumes one value and returns its bytes, as they lie in the input.
func (r *Reader) Raw() ([]byte, error) {
	r.ws()
	start := r.i
	if err := r.Skip(); err != nil {
		return nil, err
	}
	return r.b[start:r.i:r.i], nil
}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}
