package jsonplan

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// special is the byte-at-a-time definition SpecialBytes must agree with.
func special(c byte) bool { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80 }

// TestSpecialBytesLowestIsExact checks, for words mixing plain and special
// bytes at every position, that the lowest flagged byte of SpecialBytes is
// the first special byte, and that a word of plain bytes has no flag.
func TestSpecialBytesLowestIsExact(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var w [8]byte
	check := func() {
		x := binary.LittleEndian.Uint64(w[:])
		first := 8
		for i, c := range w {
			if special(c) {
				first = i
				break
			}
		}
		m := SpecialBytes(x)
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		if got != first {
			t.Fatalf("% x: first special byte %d, SpecialBytes says %d (mask %#x)", w, first, got, m)
		}
		if NextSpecial(w[:], 0) != first {
			t.Fatalf("% x: NextSpecial %d, want %d", w, NextSpecial(w[:], 0), first)
		}
	}
	// Every byte value at every position, among plain bytes.
	for pos := range 8 {
		for c := range 256 {
			for i := range w {
				w[i] = byte(0x20 + rnd.IntN(0x60))
				if special(w[i]) {
					w[i] = 'a'
				}
			}
			w[pos] = byte(c)
			check()
		}
	}
	// Random words, weighted towards the bytes next to the edges.
	edges := []byte{0, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 0x7f, 0x80, 0x81, 0xa2, 0xdc, 0xff}
	for range 1 << 20 {
		for i := range w {
			if rnd.IntN(2) == 0 {
				w[i] = edges[rnd.IntN(len(edges))]
			} else {
				w[i] = byte(rnd.IntN(256))
			}
		}
		check()
	}
}

// TestLitAt checks Lit.At against a plain prefix test, for literals of 0 to
// 40 bytes at every offset of inputs that end early, match in part or
// differ in one byte.
func TestLitAt(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for n := range 41 {
		lit := make([]byte, n)
		for i := range lit {
			lit[i] = "ab\"c"[rnd.IntN(4)]
		}
		l := NewLit(string(lit))
		if l.Len() != n || l.String() != string(lit) {
			t.Fatalf("NewLit(%q): Len %d, String %q", lit, l.Len(), l.String())
		}
		for range 200 {
			b := make([]byte, rnd.IntN(60))
			for i := range b {
				b[i] = "ab\"c"[rnd.IntN(4)]
			}
			if len(b) > 0 && rnd.IntN(2) == 0 {
				at := rnd.IntN(len(b))
				copy(b[at:], lit)
				if rnd.IntN(3) == 0 && n > 0 {
					b[at+rnd.IntN(min(n, len(b)-at))] ^= 1
				}
			}
			for i := -1; i <= len(b)+1; i++ {
				want := i >= 0 && i <= len(b) && len(b)-i >= n && string(b[i:i+n]) == string(lit)
				if got := l.At(b, i); got != want {
					t.Fatalf("NewLit(%q).At(%q, %d) = %t, want %t", lit, b, i, got, want)
				}
			}
		}
	}
}
