package jsonplan

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The byte-level pieces of JSON scanning that this package's decoder and
// the event scanners of internal/eventscan share.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// SpecialBytes flags, in the high bit of each byte of w, the bytes that
// end a plain run inside a JSON string: a quote, a backslash, a control
// character or a non-ASCII byte. The lowest flagged byte is exact (borrows
// only run upwards); higher ones may be false alarms.
//
// A byte below the first flagged one is plain, 0x20 to 0x7f and neither a
// quote nor a backslash, so none of the three subtractions borrows there;
// a byte whose high bit a subtraction sets without the byte being special
// is 0x80 or above, flagged by w itself. So the usual "and not w" masks
// of the zero-byte test are not needed.
func SpecialBytes(w uint64) uint64 {
	q := (w ^ (ones * '"')) - ones   // a quote borrows, so its high bit is set
	bs := (w ^ (ones * '\\')) - ones // as a backslash does
	ctl := w - ones*0x20             // and a control character
	return (q | bs | ctl | w) & highs
}

// NextSpecial returns the index of the first byte at or after i that ends
// a plain run inside a JSON string (see SpecialBytes), or len(b) if there
// is none, eight bytes at a time.
func NextSpecial(b []byte, i int) int {
	p := unsafe.Pointer(unsafe.SliceData(b))
	for ; i <= len(b)-8; i += 8 {
		if m := SpecialBytes(Load64(p, i)); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return i
		}
	}
	return i
}

// Escaped returns the byte that the one-character escape \e stands for
// (\" \\ \/ \b \f \n \r \t); ok is false for \u and for anything else.
func Escaped(e byte) (c byte, ok bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// Hex4 reads the four hex digits of a \u escape.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, h := range b[:4] {
		switch {
		case h >= '0' && h <= '9':
			h -= '0'
		case h >= 'a' && h <= 'f':
			h -= 'a' - 10
		case h >= 'A' && h <= 'F':
			h -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// NumberEnd returns the end of the JSON number that starts at b[i], and
// false when none does.
func NumberEnd(b []byte, i int) (int, bool) {
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
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		k := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == k {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		k := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == k {
			return 0, false
		}
	}
	return i, true
}

// A Lit is a short literal, such as a key in quotes, kept as two
// little-endian words and their masks, so that At can match one of up to
// 16 bytes with two compares and no call.
type Lit struct {
	s      string
	w0, w1 uint64 // the bytes of s, zero past its end
	m0, m1 uint64 // the masks of s's bytes in w0 and w1; both 0 if s is empty or over 16 bytes
}

// NewLit makes the Lit for s.
func NewLit(s string) Lit {
	l := Lit{s: s}
	if len(s) == 0 || len(s) > 16 {
		return l
	}
	var b, m [16]byte
	copy(b[:], s)
	for i := range len(s) {
		m[i] = 0xff
	}
	l.w0, l.w1 = binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
	l.m0, l.m1 = binary.LittleEndian.Uint64(m[:8]), binary.LittleEndian.Uint64(m[8:])
	return l
}

// String returns the literal.
func (l *Lit) String() string { return l.s }

// Len is the literal's length in bytes.
func (l *Lit) Len() int { return len(l.s) }

// At reports whether b[i:] starts with the literal.
func (l *Lit) At(b []byte, i int) bool {
	if l.m0 != 0 && i >= 0 && i <= len(b)-16 {
		p := unsafe.Pointer(unsafe.SliceData(b))
		return (Load64(p, i)^l.w0)&l.m0|(Load64(p, i+8)^l.w1)&l.m1 == 0
	}
	return l.at(b, i)
}

// at is At by a string compare, near the end of b or for a long literal.
func (l *Lit) at(b []byte, i int) bool {
	return i >= 0 && len(b)-i >= len(l.s) && string(b[i:i+len(l.s)]) == l.s
}
