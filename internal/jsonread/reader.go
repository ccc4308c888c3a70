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
// copy alive as long as any of them is kept.
package jsonread

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
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
}

// New returns a Reader of b; strings it returns are copies.
func New(b []byte) *Reader { return &Reader{b: b} }

// Shared returns a Reader of b whose strings are cut from one copy of b,
// made here.
func Shared(b []byte) *Reader { return &Reader{b: b, s: string(b)} }

// Reset makes r read b from the start, keeping its buffers.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b, kbuf: r.kbuf[:0]} }

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
	c := r.Peek()
	if c != '{' {
		return r.mismatch(c, want)
	}
	if r.depth++; r.depth > maxDepth {
		return r.syntax("exceeded max depth")
	}
	r.i++
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == '}' {
		r.i++
		r.depth--
		return nil
	}
	for {
		r.ws()
		key, err := r.keyBytes()
		if err != nil {
			return err
		}
		r.ws()
		if r.i >= len(r.b) || r.b[r.i] != ':' {
			return r.syntax("no colon after an object key")
		}
		r.i++
		r.key = key
		if err := fn(key); err != nil {
			return err
		}
		r.ws()
		if r.i >= len(r.b) {
			return r.syntax("the object does not end")
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			r.depth--
			return nil
		default:
			return r.syntax("no comma or brace after an object member")
		}
	}
}

// keyBytes reads a key: the input's own bytes when it needs no unescaping.
func (r *Reader) keyBytes() ([]byte, error) {
	raw, plain, err := r.rawString()
	if err != nil {
		return nil, err
	}
	if plain {
		return raw, nil
	}
	r.kbuf = appendUnquoted(r.kbuf[:0], raw)
	return r.kbuf, nil
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

// plain marks the bytes a string can hold as they are: printable ASCII
// other than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainSpan reports whether s holds only plain bytes, eight at a time:
// a word has a byte below 0x20, one of 0x80 or above, or a backslash when
// these (exact) tests find one.
func plainSpan(s []byte) bool {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		y := x ^ ('\\' * ones)
		if ((x-0x20*ones)&^x|x|(y-ones)&^y)&high != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if !plain[c] {
			return false
		}
	}
	return true
}

// rawString consumes a string and returns the bytes between its quotes;
// plain says they need no unescaping (and are valid UTF-8).
func (r *Reader) rawString() (raw []byte, plainText bool, err error) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false, r.syntax("not a string")
	}
	start := r.i + 1
	b := r.b
	// Most strings are plain: find the closing quote, then check the span.
	if k := bytes.IndexByte(b[start:], '"'); k >= 0 && plainSpan(b[start:start+k]) {
		r.i = start + k + 1
		return b[start : start+k], true, nil
	}
	// Escapes, non-ASCII or control characters: the end is the first quote
	// not escaped (an even run of backslashes before it), then the span is
	// checked.
	for j := start; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return nil, false, &SyntaxError{Offset: len(b), Msg: "the string does not end"}
		}
		end := j + k
		n := 0
		for p := end - 1; p >= start && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			if err := checkString(b[start:end], start); err != nil {
				return nil, false, err
			}
			r.i = end + 1
			return b[start:end], false, nil
		}
		j = end + 1
	}
}

// checkString checks a string's contents (at offset off): no control
// characters, and every escape one JSON has.
func checkString(s []byte, off int) error {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if x := binary.LittleEndian.Uint64(s[i:]); (x-0x20*ones)&^x&high != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return &SyntaxError{Offset: off + i, Msg: "a control character in a string"}
		}
	}
	for i := 0; ; {
		k := bytes.IndexByte(s[i:], '\\')
		if k < 0 {
			return nil
		}
		i += k
		if i+1 >= len(s) {
			return &SyntaxError{Offset: off + i, Msg: "the string does not end"}
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if _, ok := hex4(s[i+2:]); !ok {
				return &SyntaxError{Offset: off + i, Msg: "a \\u escape without four hex digits"}
			}
			i += 6
		default:
			return &SyntaxError{Offset: off + i, Msg: "an invalid escape"}
		}
	}
}

// text returns the text of the string just read (raw, between its
// quotes): cut from the shared copy when it needs no unescaping; view is
// the same text as bytes (raw itself, or the unescaped text in r.sbuf).
func (r *Reader) text(raw []byte, plainText bool) (s string, view []byte) {
	if plainText || bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		if r.s != "" {
			end := r.i - 1 // the closing quote
			return r.s[end-len(raw) : end], raw
		}
		return string(raw), raw
	}
	r.sbuf = appendUnquoted(r.sbuf[:0], raw)
	return string(r.sbuf), r.sbuf
}

// String reads a string. ok is false, with a *TypeError recorded and the
// value skipped, when the value is not a string (null included).
func (r *Reader) String() (s string, ok bool, err error) {
	c := r.Peek()
	if c != '"' {
		return "", false, r.mismatch(c, "a string")
	}
	raw, p, err := r.rawString()
	if err != nil {
		return "", false, err
	}
	s, _ = r.text(raw, p)
	return s, true, nil
}

// StringInto reads a string into *dst; null leaves *dst as it was.
func (r *Reader) StringInto(dst *string) error {
	c := r.Peek()
	if c == 'n' {
		return r.lit("null")
	}
	if c != '"' {
		return r.mismatch(c, "a string")
	}
	raw, p, err := r.rawString()
	if err != nil {
		return err
	}
	*dst, _ = r.text(raw, p)
	return nil
}

// TextInto reads a string into *dst as StringInto does, and returns its
// text as bytes too: the input's own when it needs no unescaping (do not
// keep or change them). null leaves *dst and gives null true.
func (r *Reader) TextInto(dst *string) (text []byte, null bool, err error) {
	c := r.Peek()
	if c == 'n' {
		return nil, true, r.lit("null")
	}
	if c != '"' {
		return nil, false, r.mismatch(c, "a string")
	}
	raw, p, err := r.rawString()
	if err != nil {
		return nil, false, err
	}
	*dst, text = r.text(raw, p)
	return text, false, nil
}

// StringBytes reads a string's text appended to dst (null: dst as it is,
// null true). A value of another type is recorded and skipped (ok false).
func (r *Reader) StringBytes(dst []byte) (out []byte, null, ok bool, err error) {
	c := r.Peek()
	if c == 'n' {
		return dst, true, true, r.lit("null")
	}
	if c != '"' {
		return dst, false, false, r.mismatch(c, "a string")
	}
	raw, p, err := r.rawString()
	if err != nil {
		return dst, false, false, err
	}
	if p {
		return append(dst, raw...), false, true, nil
	}
	return appendUnquoted(dst, raw), false, true, nil
}

// StringView reads a string's text: the input's own bytes when it needs
// no unescaping (do not keep or change them), else unescaped into
// *scratch, which keeps the grown buffer. null gives null true; a value of
// another type is recorded and skipped (ok false).
func (r *Reader) StringView(scratch *[]byte) (text []byte, null, ok bool, err error) {
	c := r.Peek()
	if c == 'n' {
		return nil, true, true, r.lit("null")
	}
	if c != '"' {
		return nil, false, false, r.mismatch(c, "a string")
	}
	raw, p, err := r.rawString()
	if err != nil {
		return nil, false, false, err
	}
	if p {
		return raw, false, true, nil
	}
	*scratch = appendUnquoted((*scratch)[:0], raw)
	return *scratch, false, true, nil
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
	raw, p, err := r.rawString()
	if err != nil {
		return err
	}
	if !p {
		raw = appendUnquoted(nil, raw)
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
		_, _, err := r.rawString()
		return err
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

// appendUnquoted appends the text of raw, a string's checked contents,
// by encoding/json's rules: escapes undone, a surrogate pair joined, a
// lone surrogate and each invalid UTF-8 byte turned into U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
	if utf8.Valid(raw) {
		// Copy the runs between escapes whole.
		for {
			k := bytes.IndexByte(raw, '\\')
			if k < 0 {
				return append(dst, raw...)
			}
			dst = append(dst, raw[:k]...)
			raw = raw[k:]
			n := 2
			if raw[1] == 'u' {
				n = escapeLen(raw)
			}
			dst = appendUnquotedSlow(dst, raw[:n])
			raw = raw[n:]
		}
	}
	return appendUnquotedSlow(dst, raw)
}

// escapeLen is the length of the \u escape at the start of raw, with the
// \u escape after it when it is a high surrogate.
func escapeLen(raw []byte) int {
	r, _ := hex4(raw[2:])
	if r >= 0xD800 && r < 0xDC00 && len(raw) >= 12 && raw[6] == '\\' && raw[7] == 'u' {
		return 12
	}
	return 6
}

// appendUnquotedSlow is appendUnquoted byte by byte.
func appendUnquotedSlow(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			e := raw[i+1]
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, _ := hex4(raw[i+2:])
				i += 6
				if utf16IsSurrogate(r) {
					if r < 0xDC00 && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if r2, ok := hex4(raw[i+2:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
							dst = utf8.AppendRune(dst, (r-0xD800)<<10|(r2-0xDC00)+0x10000)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+n]...)
			}
			i += n
		}
	}
	return dst
}

func utf16IsSurrogate(r rune) bool { return r >= 0xD800 && r < 0xE000 }
