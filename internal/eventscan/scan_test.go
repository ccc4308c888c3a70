package eventscan

import (
	"math/rand/v2"
	"testing"
)

// plainSlow is the definition plainString follows: printable ASCII, no
// backslash (and so no escape), no byte that needs UTF-8 checks.
func plainSlow(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// TestPlainStringMatchesByteLoop checks plainString and plainAs, which find
// a string's end and its plainness in one pass, against the byte loop, on
// strings of every short length with special bytes anywhere.
func TestPlainStringMatchesByteLoop(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	special := []byte{0, 0x1f, 0x20, '\\', 0x5b, 0x5d, 0x7f, 0x80, 0xff, 'a'}
	for n := 0; n < 200000; n++ {
		content := make([]byte, rnd.IntN(40))
		for i := range content {
			if rnd.IntN(4) == 0 {
				content[i] = special[rnd.IntN(len(special))]
			} else {
				content[i] = byte(0x20 + rnd.IntN(0x5f))
				if content[i] == '"' {
					content[i] = 'q'
				}
			}
		}
		in := append(append(append([]byte(" \""), content...), '"'), ",x"[:rnd.IntN(3)]...)
		want := plainSlow(content)
		for _, prev := range []string{"", string(content), "other"} {
			s := &scanner{b: in}
			var got []byte
			var ok bool
			if prev == "" {
				got, ok = s.plainString()
			} else {
				got, ok = s.plainAs(prev)
			}
			if ok != want || ok && (string(got) != string(content) || s.i != len(content)+3) {
				t.Fatalf("%q (prev %q): %q %v at %d, want %v", in, prev, got, ok, s.i, want)
			}
		}
	}
	for _, in := range []string{``, `"`, `"abc`, `x"a"`, `"a\"b"`} {
		if _, ok := (&scanner{b: []byte(in)}).plainString(); ok {
			t.Errorf("plainString(%q) accepted", in)
		}
	}
}
