package eventscan

import (
	"bytes"
	"encoding/base64"
	"math/rand"
	"strings"
	"testing"
)

// checkDecodeStdBase64 checks decodeStdBase64 against StdEncoding.Decode on
// src and returns decodeStdBase64's ok.
func checkDecodeStdBase64(tb testing.TB, src []byte) bool {
	tb.Helper()
	dst := make([]byte, len(src)/4*3) // exactly the documented room
	n, ok := decodeStdBase64(dst, src)
	ref := make([]byte, base64.StdEncoding.DecodedLen(len(src))+8)
	rn, err := base64.StdEncoding.Decode(ref, src)
	if ok {
		if err != nil {
			tb.Fatalf("%q: ok, but stdlib fails: %v", src, err)
		}
		if n != rn || !bytes.Equal(dst[:n], ref[:rn]) {
			tb.Fatalf("%q: got %d %x, stdlib %d %x", src, n, dst[:n], rn, ref[:rn])
		}
	} else if err == nil && !bytes.ContainsAny(src, "\r\n") {
		tb.Fatalf("%q: not ok, but stdlib decodes it to %x", src, ref[:rn])
	}
	return ok
}

func TestDecodeStdBase64Edge(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"", true},
		{"AA==", true},
		{"AAA=", true},
		{"AAAA", true},
		{"Zg==", true},
		{"Zm8=", true},
		{"Zm9v", true},
		{"Zm9vYg==", true},
		{"Zm9vYmE=", true},
		{"Zm9vYmFy", true},
		{"+/+/", true},
		{"////", true},
		// non-zero trailing bits: StdEncoding is not Strict
		{"AB==", true},
		{"AAB=", true},
		{"Zh==", true},
		{"Zm9=", true},
		{"Zm9vYh==", true},
		// bad padding and lengths
		{"=", false},
		{"==", false},
		{"A", false},
		{"AA", false},
		{"AAA", false},
		{"AA=", false},
		{"AAAAA", false},
		{"A===", false},
		{"====", false},
		{"=AAA", false},
		{"A=AA", false},
		{"AA=A", false},
		{"==AA", false},
		{"AA==AAAA", false},
		{"AAA=AAAA", false},
		{"AAAA====", false},
		{"AAAAA===", false},
		{"AA===", false},
		{"AA==A", false},
		// other alphabets and junk
		{"-_-_", false},
		{"AA\x00A", false},
		{"AAA\xff", false},
		{"AA A", false},
		{"AAAA ", false},
		// \r and \n: stdlib skips them, we must decline
		{"AAAA\n", false},
		{"AA\r\nAA", false},
		{"\nAAAA", false},
		{"AAAA\r\n", false},
		{"AA==\n", false},
		{"AA=\n=", false},
		{"Zm9v\r\nYmFy", false},
		{"\r\n\r\n", false},
		{"\n", false},
	}
	for _, tt := range tests {
		if got := checkDecodeStdBase64(t, []byte(tt.in)); got != tt.ok {
			t.Errorf("%q: ok=%v, want %v", tt.in, got, tt.ok)
		}
	}
}

func TestDecodeStdBase64Lengths(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, size := range append([]int{1000, 1001, 1002, 1003}, func() (s []int) {
		for n := 0; n <= 40; n++ {
			s = append(s, n)
		}
		return s
	}()...) {
		raw := make([]byte, size)
		r.Read(raw)
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		if !checkDecodeStdBase64(t, enc) {
			t.Fatalf("%d bytes: valid encoding %q declined", size, enc)
		}
		// an invalid byte at each position must be declined; '=' and
		// newlines too, except where they keep the input valid
		for i := range enc {
			for _, c := range []byte{'-', '_', '=', '\n', '\r', ' ', 0, 0x80, 0xff} {
				m := bytes.Clone(enc)
				m[i] = c
				if ok := checkDecodeStdBase64(t, m); ok && c != '=' {
					t.Fatalf("%q: invalid byte %q at %d accepted", m, c, i)
				}
			}
		}
		// a \r\n inserted anywhere: stdlib accepts, we decline
		for i := 0; i <= len(enc) && i < 64; i++ {
			m := append(append(bytes.Clone(enc[:i]), "\r\n"...), enc[i:]...)
			if checkDecodeStdBase64(t, m) {
				t.Fatalf("%q: accepted with \\r\\n", m)
			}
		}
	}
}

func TestDecodeStdBase64Random(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	const junk = "AZaz09+/=\r\n-_ \x00\x7f\x80\xff"
	declined := 0
	for i := 0; i < 100_000; i++ {
		raw := make([]byte, r.Intn(400))
		r.Read(raw)
		src := []byte(base64.StdEncoding.EncodeToString(raw))
		switch r.Intn(4) {
		case 0: // as encoded
			if !checkDecodeStdBase64(t, src) {
				t.Fatalf("%q: valid encoding declined", src)
			}
			continue
		case 1: // mutate a few bytes
			for k := r.Intn(3) + 1; k > 0 && len(src) > 0; k-- {
				src[r.Intn(len(src))] = junk[r.Intn(len(junk))]
			}
		case 2: // mutate near the end, where padding lives
			for k := r.Intn(3) + 1; k > 0 && len(src) > 0; k-- {
				src[len(src)-1-r.Intn(min(len(src), 6))] = junk[r.Intn(len(junk))]
			}
		case 3: // truncate, or insert or delete bytes
			switch {
			case len(src) > 0 && r.Intn(3) == 0:
				src = src[:r.Intn(len(src))]
			case len(src) > 0 && r.Intn(2) == 0:
				j := r.Intn(len(src))
				src = append(src[:j], src[j+1:]...)
			default:
				j := r.Intn(len(src) + 1)
				src = append(src[:j], append([]byte{junk[r.Intn(len(junk))]}, src[j:]...)...)
			}
		}
		if !checkDecodeStdBase64(t, src) {
			declined++
		}
	}
	if declined == 0 {
		t.Fatal("no mutated input was declined")
	}
}

func FuzzDecodeStdBase64(f *testing.F) {
	for _, s := range []string{
		"", "AA==", "AAA=", "AAAA", "AB==", "Zm9=", "A===", "=AAA", "AA=A",
		"AA==AAAA", "Zm9v\r\nYmFy", "AAAA\n", "-_-_",
		base64.StdEncoding.EncodeToString([]byte(strings.Repeat("sluice kinesis ", 25))),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkDecodeStdBase64(t, src)
		// also the clean encoding of the fuzz bytes, which must be accepted
		if enc := []byte(base64.StdEncoding.EncodeToString(src)); !checkDecodeStdBase64(t, enc) {
			t.Fatalf("%q: valid encoding declined", enc)
		}
	})
}

// base64BenchInput is padded base64 text of exactly size characters, as
// Lambda sends Kinesis data (size%4 == 0; one '=' or "==" of padding).
func base64BenchInput(size int) []byte {
	raw := make([]byte, size/4*3-1)
	rand.New(rand.NewSource(3)).Read(raw)
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

var base64BenchSizes = []struct {
	name string
	size int
}{{"360", 360}, {"2000", 2000}}

func BenchmarkDecodeStdBase64(b *testing.B) {
	for _, bs := range base64BenchSizes {
		b.Run(bs.name, func(b *testing.B) {
			src := base64BenchInput(bs.size)
			dst := make([]byte, len(src)/4*3)
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, ok := decodeStdBase64(dst, src); !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}

func BenchmarkStdlibBase64(b *testing.B) {
	for _, bs := range base64BenchSizes {
		b.Run(bs.name, func(b *testing.B) {
			src := base64BenchInput(bs.size)
			dst := make([]byte, len(src)/4*3)
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := base64.StdEncoding.Decode(dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
