package jsonplan

import (
	"encoding/binary"
	"math/bits"
)

// The byte-level pieces of JSON scanning that this package's decoder and
// the handlers' event scanners share.

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// SpecialBytes flags, in the high bit of each byte of w, the bytes that
// end a plain run inside a JSON string: a quote, a backslash, a control
// character or a non-ASCII byte. The lowest flagged byte is exact (borrows
// only run upwards); higher ones may be false alarms.
func SpecialBytes(w uint64) uint64 {
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return (w | (w-ones*0x20)&^w | (q-ones)&^q | (bs-ones)&^bs) & highs
}

// NextSpecial returns the index of the first byte at or after i that ends
// a plain run inside a JSON string (see SpecialBytes), or len(b) if there
// is none, eight bytes at a time.
func NextSpecial(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := SpecialBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
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
