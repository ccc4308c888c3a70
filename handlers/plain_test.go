package handlers

import (
	"math/rand/v2"
	"testing"
)

func plainSlow(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func TestPlainMatchesByteLoop(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	special := []byte{0, 0x1f, 0x20, '\\', 0x5b, 0x5d, 0x7f, 0x80, 0xff, 'a', '"'}
	for n := 0; n < 200000; n++ {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			if rnd.IntN(4) == 0 {
				b[i] = special[rnd.IntN(len(special))]
			} else {
				b[i] = byte(0x20 + rnd.IntN(0x5f))
			}
		}
		if plain(b) != plainSlow(b) {
			t.Fatalf("plain(%q) = %v", b, plain(b))
		}
	}
}
