package eventscan

import (
	"encoding/base64"
	"math/bits"
	"unsafe"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// b64DecodeTab maps each input byte to its 6-bit value, pre-shifted for its
// position in a 4-character quantum: b64DecodeTab[i][c] is v<<(18-6*i) for
// an alphabet character c of value v, and 0xFFFFFFFF for any other byte
// (including '=', '\r' and '\n'). OR-ing the four entries of a quantum gives
// its 24 bits, with bits 24..31 set if any character was invalid, so one
// check of the accumulated OR at the end validates the whole input.
var b64DecodeTab = func() (t [4][256]uint32) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range t {
		for c := range t[i] {
			t[i][c] = 0xFFFFFFFF
		}
		for v := 0; v < len(alphabet); v++ {
			t[i][alphabet[v]] = uint32(v) << (18 - 6*i)
		}
	}
	return t
}()

// decodeStdBase64 decodes padded standard base64 (RFC 4648 §4) from src into dst, which must have room for len(src)/4*3 bytes. It returns the number of bytes written, and ok=false for anything that encoding/base64.StdEncoding.Decode would reject OR would accept only by skipping \r or \n (the caller then uses the reference path).
//
// Like StdEncoding (which is not Strict), it accepts non-zero trailing bits
// in a padded final quantum. When ok is false, dst may hold garbage.
func decodeStdBase64(dst, src []byte) (n int, ok bool) {
	if len(src) == 0 {
		return 0, true
	}
	if len(src)%4 != 0 || len(dst) < len(src)/4*3 {
		return 0, false
	}
	t0, t1, t2, t3 := &b64DecodeTab[0], &b64DecodeTab[1], &b64DecodeTab[2], &b64DecodeTab[3]
	// All quanta but the last must be four alphabet characters: '=' there
	// is rejected by StdEncoding (padding must end the input), and so is
	// every other non-alphabet byte but \r and \n, which we reject too.
	body := src[:len(src)-4]
	var bad uint32
	// 16 characters (4 quanta, 12 bytes) per iteration, written as two overlapping 8-byte big-endian stores of which the
	// first 6 bytes are kept; the loop's bounds leave every load and store
	// in range, so they need no check of their own.
	sp, dp := unsafe.Pointer(unsafe.SliceData(src)), unsafe.Pointer(unsafe.SliceData(dst))
	i := 0
	for lb, ld := len(body)-16, len(dst)-14; i <= lb && n <= ld; i += 16 {
		c := (*[16]byte)(unsafe.Add(sp, i))
		x0 := t0[c[0]] | t1[c[1]] | t2[c[2]] | t3[c[3]]
		x1 := t0[c[4]] | t1[c[5]] | t2[c[6]] | t3[c[7]]
		x2 := t0[c[8]] | t1[c[9]] | t2[c[10]] | t3[c[11]]
		x3 := t0[c[12]] | t1[c[13]] | t2[c[14]] | t3[c[15]]
		bad |= x0 | x1 | x2 | x3
		jsonplan.Store64(dp, n, bits.ReverseBytes64(uint64(x0)<<40|uint64(x1)<<16))
		jsonplan.Store64(dp, n+6, bits.ReverseBytes64(uint64(x2)<<40|uint64(x3)<<16))
		n += 12
	}
	body = body[i:]
	for len(body) >= 4 {
		x := t0[body[0]] | t1[body[1]] | t2[body[2]] | t3[body[3]]
		bad |= x
		d := dst[n : n+3]
		d[0], d[1], d[2] = byte(x>>16), byte(x>>8), byte(x)
		n += 3
		body = body[4:]
	}
	// The last quantum: "abcd", "abc=" or "ab==". '=' in the first two
	// positions, or "ab=d" with d != '=', hits an invalid table entry.
	s := src[len(src)-4:]
	x := t0[s[0]] | t1[s[1]]
	switch {
	case s[3] != '=':
		x |= t2[s[2]] | t3[s[3]]
		d := dst[n : n+3]
		d[0], d[1], d[2] = byte(x>>16), byte(x>>8), byte(x)
		n += 3
	case s[2] != '=':
		x |= t2[s[2]]
		d := dst[n : n+2]
		d[0], d[1] = byte(x>>16), byte(x>>8)
		n += 2
	default:
		dst[n] = byte(x >> 16)
		n++
	}
	bad |= x
	return n, bad>>24 == 0
}

// Base64 decodes a Kafka key or value: into a when it is clean padded
// base64 (an arena's memory is never reused, so the bytes stay the
// record's), else, or without an arena, by encoding/base64, which also
// words the error.
func Base64(a *Arena, s string) ([]byte, error) {
	if a != nil {
		dst := a.alloc(base64.StdEncoding.DecodedLen(len(s)))
		if n, ok := decodeStdBase64(dst, unsafe.Slice(unsafe.StringData(s), len(s))); ok && n > 0 {
			return dst[:n:n], nil
		}
	}
	return base64.StdEncoding.DecodeString(s)
}
