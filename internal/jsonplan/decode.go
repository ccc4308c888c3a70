package jsonplan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is how deeply nested a document the plan decodes; deeper ones
// go to encoding/json, which has its own limit.
const maxDepth = 1000

type decoder struct {
	b     []byte
	i     int
	share bool
	depth int
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// emptyArray backs the empty slices of "[]" (encoding/json's are non-nil).
var emptyArray [0]uint64

func (d *decoder) ws() {
	if d.i < len(d.b) && d.b[d.i] > ' ' {
		return
	}
	d.space()
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// tok consumes c after white space.
func (d *decoder) tok(c byte) bool {
	if d.i < len(d.b) {
		if d.b[d.i] == c {
			d.i++
			return true
		}
		if d.b[d.i] > ' ' {
			return false
		}
	}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) lit(w string) bool {
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// value decodes one value into the zero (or, for a pointer, maybe set)
// value of n's type at p.
func (d *decoder) value(n *node, p unsafe.Pointer) bool {
	d.ws()
	if d.i >= len(d.b) {
		return false
	}
	c := d.b[d.i]
	switch n.kind {
	case kNever:
		return false
	case kUnmarshaler, kFallback:
		start := d.i
		if !d.skip() {
			return false
		}
		raw := d.b[start:d.i]
		v := reflect.NewAt(n.typ, p).Interface()
		if n.kind == kUnmarshaler {
			return v.(json.Unmarshaler).UnmarshalJSON(raw) == nil
		}
		return json.Unmarshal(raw, v) == nil
	}
	if c == 'n' {
		if !d.lit("null") {
			return false
		}
		switch n.kind {
		case kPtr, kMap:
			*(*unsafe.Pointer)(p) = nil
		case kSlice:
			*(*sliceHeader)(p) = sliceHeader{}
		}
		return true // strings, numbers, bools and structs stay as they are
	}
	switch n.kind {
	case kString:
		if c != '"' {
			return false
		}
		s, ok := d.str()
		if !ok {
			return false
		}
		*(*string)(p) = s
		return true
	case kBool:
		switch {
		case d.lit("true"):
			*(*bool)(p) = true
		case d.lit("false"):
			*(*bool)(p) = false
		default:
			return false
		}
		return true
	case kStruct:
		return c == '{' && d.object(n, p)
	case kSlice:
		return c == '[' && d.array(n, p)
	case kMap:
		return c == '{' && d.mapObject(n, p)
	case kPtr:
		if *(*unsafe.Pointer)(p) == nil {
			*(*unsafe.Pointer)(p) = reflect.New(n.elem.typ).UnsafePointer()
		}
		if d.depth++; d.depth > maxDepth {
			return false
		}
		ok := d.value(n.elem, *(*unsafe.Pointer)(p))
		d.depth--
		return ok
	}
	if c != '-' && (c < '0' || c > '9') {
		return false
	}
	switch n.kind {
	case kFloat64:
		return d.float64(p)
	case kInt, kInt64:
		return d.int64(n.kind, p)
	}
	num, ok := d.number()
	return ok && setNumber(n.kind, p, num)
}

// float64 decodes a number into a float64: a plain decimal of at most 15
// significant digits as it scans (see parseFloat), anything else by
// strconv.
func (d *decoder) float64(p unsafe.Pointer) bool {
	b, i := d.b, d.i
	neg := b[i] == '-'
	if neg {
		i++
	}
	var mant uint64
	start := i
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			mant = mant*10 + uint64(b[i]-'0')
			i++
		}
	}
	digits, scale := i-start, 0
	if digits == 0 {
		return false // no integer digit, as in -.5: not JSON, let encoding/json say so
	}
	if i < len(b) && b[i] == '.' {
		i++
		k := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			mant = mant*10 + uint64(b[i]-'0')
			i++
		}
		scale = i - k
		digits += scale
		if scale == 0 {
			return false
		}
	}
	if digits == 0 || digits > 15 || i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		num, ok := d.number()
		if !ok {
			return false
		}
		f, ok := parseFloat(num)
		*(*float64)(p) = f
		return ok
	}
	f := float64(mant)
	if scale > 0 {
		f /= pow10[scale]
	}
	if neg {
		f = -f
	}
	*(*float64)(p) = f
	d.i = i
	return true
}

// int64 decodes a number into an int or int64 (k), short ones as it scans.
func (d *decoder) int64(k uint8, p unsafe.Pointer) bool {
	b, i := d.b, d.i
	neg := b[i] == '-'
	if neg {
		i++
	}
	start := i
	var v int64
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			i++
		}
	}
	if i == start || i-start > 18 || i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		num, ok := d.number()
		return ok && setNumber(k, p, num)
	}
	if neg {
		v = -v
	}
	if k == kInt {
		*(*int)(p) = int(v)
	} else {
		*(*int64)(p) = v
	}
	d.i = i
	return true
}

// setNumber stores the JSON number num in a value of kind k as
// encoding/json does; false for what it refuses.
func setNumber(k uint8, p unsafe.Pointer, num []byte) bool {
	switch k {
	case kFloat64:
		f, ok := parseFloat(num)
		if !ok {
			return false
		}
		*(*float64)(p) = f
		return true
	case kFloat32:
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 32)
		if err != nil {
			return false
		}
		*(*float32)(p) = float32(f)
		return true
	case kInt, kInt8, kInt16, kInt32, kInt64:
		i, ok := parseInt(num)
		return ok && SetInt(p, reflectKind[k], i)
	case kUint, kUint8, kUint16, kUint32, kUint64, kUintptr:
		u, err := strconv.ParseUint(unsafe.String(unsafe.SliceData(num), len(num)), 10, 64)
		return err == nil && SetUint(p, reflectKind[k], u)
	}
	return false
}

// parseInt is strconv.ParseInt(num, 10, 64) for a JSON number, quick for
// the short ones.
func parseInt(num []byte) (int64, bool) {
	s := num
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		i, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(num), len(num)), 10, 64)
		return i, err == nil
	}
	var v int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false // a fraction or an exponent: not an integer
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat is strconv.ParseFloat(num, 64) for a JSON number. A plain
// decimal of at most 15 significant digits is exact as an integer divided
// by a power of ten, both exact doubles (a single, correctly rounded
// division); anything else goes to strconv.
func parseFloat(num []byte) (float64, bool) {
	s := num
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var mant uint64
	digits, frac := 0, -1
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
		case c == '.' && frac < 0:
			frac = i
		default:
			digits = 99 // an exponent
		}
	}
	if digits > 0 && digits <= 15 {
		f := float64(mant)
		if frac >= 0 {
			f /= pow10[len(s)-frac-1]
		}
		if neg {
			f = -f
		}
		return f, true
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
	return f, err == nil
}

// number consumes a JSON number and returns its text.
func (d *decoder) number() ([]byte, bool) {
	end, ok := NumberEnd(d.b, d.i)
	if !ok {
		return nil, false
	}
	num := d.b[d.i:end]
	d.i = end
	return num, true
}

// object decodes a JSON object into a struct.
func (d *decoder) object(n *node, p unsafe.Pointer) bool {
	if d.depth++; d.depth > maxDepth {
		return false
	}
	d.i++ // {
	if d.tok('}') {
		d.depth--
		return true
	}
	var set uint64
	next := 0
	for {
		d.ws()
		f := -1
		// Keys mostly come in the order of the fields: try the next
		// field's name first, straight on the input (names hold no quote
		// or backslash, so equal bytes are the same key).
		if next < len(n.fields) {
			// Lit.At, written out: a call costs as much as the compare.
			q := &n.fields[next].qname
			var at bool
			if q.m0 != 0 && d.i <= len(d.b)-16 {
				p := unsafe.Pointer(unsafe.SliceData(d.b))
				at = (Load64(p, d.i)^q.w0)&q.m0|(Load64(p, d.i+8)^q.w1)&q.m1 == 0
			} else {
				at = q.at(d.b, d.i)
			}
			if at {
				f = next
				d.i += len(q.s)
			}
		}
		if f < 0 {
			var buf [64]byte
			key, ok := d.key(buf[:0])
			if !ok {
				return false
			}
			f = lookup(n.fields, key)
		}
		if !d.tok(':') {
			return false
		}
		if f < 0 {
			if !d.skip() {
				return false
			}
		} else {
			if set&(1<<f) != 0 {
				return false // encoding/json merges a repeated object: let it
			}
			set |= 1 << f
			next = f + 1
			fd := &n.fields[f]
			fp := unsafe.Add(p, fd.off)
			if fd.quoted {
				if !d.quoted(fd.n, fp) {
					return false
				}
			} else if !d.value(fd.n, fp) {
				return false
			}
		}
		if d.tok('}') {
			d.depth--
			return true
		}
		if !d.tok(',') {
			return false
		}
	}
}

// lookup finds the field a key decodes into: the exact name, else the
// first field whose name folds to the same; -1 for none.
func lookup(fs []field, key []byte) int {
	for i := range fs {
		if fs[i].name == string(key) {
			return i
		}
	}
	var buf [64]byte
	k := appendFold(buf[:0], key)
	for i := range fs {
		if fs[i].fold == string(k) {
			return i
		}
	}
	return -1
}

// quoted decodes a value of a field with the "string" option: a JSON
// string holding the literal, or null, which changes nothing.
func (d *decoder) quoted(n *node, p unsafe.Pointer) bool {
	d.ws()
	if d.lit("null") {
		return true
	}
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false
	}
	start := d.i
	inner, ok := d.rawText()
	if !ok {
		return false
	}
	fresh := false
	if bytes.IndexByte(inner, '\\') >= 0 {
		inner, ok = unquote(nil, d.b[start+1:d.i-1])
		if !ok {
			return false
		}
		fresh = true
	}
	if string(inner) == "null" {
		return true
	}
	switch n.kind {
	case kString:
		sub := decoder{b: inner, share: d.share || fresh}
		if len(inner) == 0 || inner[0] != '"' {
			return false
		}
		s, ok := sub.str()
		if !ok || sub.i != len(inner) {
			return false
		}
		*(*string)(p) = s
		return true
	case kBool:
		switch string(inner) {
		case "true":
			*(*bool)(p) = true
		case "false":
			*(*bool)(p) = false
		default:
			return false
		}
		return true
	}
	sub := decoder{b: inner}
	num, ok := sub.number()
	return ok && sub.i == len(inner) && setNumber(n.kind, p, num)
}

// rawText consumes a string and returns its bytes between the quotes,
// checked for what JSON forbids in a string; escapes are left as they are.
func (d *decoder) rawText() ([]byte, bool) {
	start := d.i + 1
	j := start
	for {
		j = NextSpecial(d.b, j)
		if j >= len(d.b) {
			return nil, false
		}
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\':
			if j+1 >= len(d.b) {
				return nil, false
			}
			switch d.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := Hex4(d.b[j+2:]); !ok {
					return nil, false
				}
				j += 6
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		default:
			j++ // non-ASCII: any byte will do here
		}
	}
}

// key reads an object key (d.i at its quote), unescaped into buf when it
// has to be.
func (d *decoder) key(buf []byte) ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	j := NextSpecial(d.b, start)
	if j < len(d.b) && d.b[j] == '"' {
		d.i = j + 1
		return d.b[start:j], true
	}
	raw, ok := d.rawText()
	if !ok {
		return nil, false
	}
	return unquote(buf, raw)
}

// str reads a string (d.i at its quote): shared with the input when it
// needs no unescaping and sharing is allowed, else a copy.
func (d *decoder) str() (string, bool) {
	start := d.i + 1
	j := NextSpecial(d.b, start)
	if j < len(d.b) && d.b[j] == '"' {
		d.i = j + 1
		return d.text(d.b[start:j]), true
	}
	raw, ok := d.rawText()
	if !ok {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		if !utf8.Valid(raw) {
			return "", false // encoding/json replaces the bad bytes: let it
		}
		return d.text(raw), true
	}
	out, ok := unquote(make([]byte, 0, len(raw)), raw)
	if !ok {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

func (d *decoder) text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if d.share {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// unquote appends the unescaped text of raw (checked by rawText) to out;
// false for invalid UTF-8 and lone surrogates, which encoding/json replaces.
func unquote(out, raw []byte) ([]byte, bool) {
	ascii := true
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c >= utf8.RuneSelf {
				ascii = false
			}
			out = append(out, c)
			i++
			continue
		}
		e := raw[i+1]
		i += 2
		if c, ok := Escaped(e); ok {
			out = append(out, c)
			continue
		}
		// \u, the one escape left (rawText checked them all).
		r, _ := Hex4(raw[i:])
		i += 4
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 || i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
				return nil, false
			}
			r2, _ := Hex4(raw[i+2:])
			r = utf16.DecodeRune(r, r2)
			if r == utf8.RuneError {
				return nil, false
			}
			i += 6
		}
		out = utf8.AppendRune(out, r)
	}
	if !ascii && !utf8.Valid(out) {
		return nil, false
	}
	return out, true
}

// array decodes a JSON array into a slice. The slice starts with room for
// as many elements as the last array decoded by the node had (up to
// maxHint), so the arrays of a batch of alike records cost one allocation
// each, and grows as append does when that is not enough.
func (d *decoder) array(n *node, p unsafe.Pointer) bool {
	d.i++ // [
	h := (*sliceHeader)(p)
	if d.tok(']') {
		*h = sliceHeader{data: unsafe.Pointer(&emptyArray)}
		return true
	}
	if d.depth++; d.depth > maxDepth {
		return false
	}
	v := reflect.NewAt(n.typ, p).Elem()
	if hint := int(n.hint.Load()); hint > 0 {
		v.Grow(hint)
	}
	size := n.elem.typ.Size()
	for {
		if h.len == h.cap {
			v.Grow(1)
		}
		h.len++
		if !d.value(n.elem, unsafe.Add(h.data, uintptr(h.len-1)*size)) {
			return false
		}
		if d.tok(']') {
			break
		}
		if !d.tok(',') {
			return false
		}
	}
	if l := int32(min(h.len, maxHint)); l != n.hint.Load() {
		n.hint.Store(l)
	}
	d.depth--
	return true
}

// maxHint bounds the room a slice starts with.
const maxHint = 1024

// mapObject decodes a JSON object into a map with string keys; a key given
// twice keeps its last value, as in encoding/json.
func (d *decoder) mapObject(n *node, p unsafe.Pointer) bool {
	if d.depth++; d.depth > maxDepth {
		return false
	}
	m := reflect.NewAt(n.typ, p).Elem()
	if m.IsNil() {
		m.Set(reflect.MakeMap(n.typ))
	}
	d.i++ // {
	if d.tok('}') {
		d.depth--
		return true
	}
	kv := reflect.New(n.typ.Key()).Elem()
	ev := reflect.New(n.typ.Elem()).Elem()
	ep := ev.Addr().UnsafePointer()
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return false
		}
		k, ok := d.str()
		if !ok || !d.tok(':') {
			return false
		}
		ev.SetZero()
		if !d.value(n.elem, ep) {
			return false
		}
		kv.SetString(k)
		m.SetMapIndex(kv, ev)
		if d.tok('}') {
			d.depth--
			return true
		}
		if !d.tok(',') {
			return false
		}
	}
}

// skip consumes one value, checking its syntax as encoding/json does.
func (d *decoder) skip() bool {
	d.ws()
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; c {
	case '"':
		_, ok := d.rawText()
		return ok
	case '{', '[':
		if d.depth++; d.depth > maxDepth {
			return false
		}
		d.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if !d.tok(end) {
			for {
				if c == '{' {
					d.ws()
					if d.i >= len(d.b) || d.b[d.i] != '"' {
						return false
					}
					if _, ok := d.rawText(); !ok || !d.tok(':') {
						return false
					}
				}
				if !d.skip() {
					return false
				}
				if d.tok(end) {
					break
				}
				if !d.tok(',') {
					return false
				}
			}
		}
		d.depth--
		return true
	case 't':
		return d.lit("true")
	case 'f':
		return d.lit("false")
	case 'n':
		return d.lit("null")
	}
	_, ok := d.number()
	return ok
}
