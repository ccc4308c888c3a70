package eventscan

import (
	"bytes"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// Digits parses a string of 1 to 18 decimal digits (the form Lambda gives
// offsets and SQS its timestamps in) without strconv's general path.
func Digits(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + int64(c)
	}
	return v, true
}

// An Arena hands out byte slices and strings from large chunks, so a batch
// of records costs a few allocations rather than several per record. Memory
// is never reused: strings made from it stay valid. The zero value is ready
// to use; an Arena is not safe for concurrent use.
type Arena struct {
	buf []byte
	// chunk is the size of the next chunk; a chunk that runs out is not
	// copied, a new one is started.
	chunk int
	// most, if not 0, caps chunk: chunks of at most 32 KiB are small
	// objects to the Go allocator, reused without new pages.
	most int
}

// grow starts a new chunk with room for at least n bytes.
func (a *Arena) grow(n int) {
	c := max(a.chunk, 64<<10)
	if a.most > 0 {
		c = min(c, a.most)
		a.chunk = min(a.chunk, a.most)
	}
	floor := 4096
	if a.most > 0 {
		floor = min(floor, a.most)
	}
	a.buf = make([]byte, 0, max(n, a.chunk, floor))
	a.chunk = c
}

// move starts a new chunk with room for text, which is being written at
// the start of the free space, and n bytes more, and copies text there;
// it returns the new free space, text at its start.
func (a *Arena) move(text []byte, n int) []byte {
	a.grow(len(text) + n)
	out := a.buf[:cap(a.buf)]
	copy(out, text)
	return out
}

func (a *Arena) alloc(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.grow(n)
	}
	l := len(a.buf)
	a.buf = a.buf[:l+n]
	return a.buf[l : l+n : l+n]
}

// room returns an empty slice over the arena's free space, at least n bytes
// of it, for appending a string of unknown length; commit takes it.
func (a *Arena) room(n int) []byte {
	if a == nil {
		return make([]byte, 0, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.grow(n)
	}
	return a.buf[len(a.buf):len(a.buf)]
}

// commit returns b, appended to the slice room returned, as a string. If
// the appends stayed within the arena, the arena keeps the bytes; if they
// outgrew it, b is a slice of its own, used as it is.
func (a *Arena) commit(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if a == nil {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	l := len(a.buf)
	if cap(a.buf)-l >= len(b) && unsafe.SliceData(a.buf[l:cap(a.buf)]) == unsafe.SliceData(b) {
		a.buf = a.buf[:l+len(b)]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (a *Arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if a == nil {
		return string(b)
	}
	d := a.alloc(len(b))
	copy(d, b)
	return unsafe.String(unsafe.SliceData(d), len(d))
}

// intern returns prev when b spells it, else a copy of b. Most envelope
// fields repeat on every record of a batch.
func (a *Arena) intern(prev string, b []byte) string {
	if string(b) == prev {
		return prev
	}
	return a.str(b)
}

type scanner struct {
	b []byte
	i int
	// own says that b is the decoder's own copy of the event, never
	// modified or reused: strings that need no unescaping may share it.
	own bool
	// sqsOrder is the key order of the SQS message before, ids plus one
	// (0: none), which the next message most likely repeats.
	sqsOrder [10]int8
	// sqsSame holds, for the SQS keys that repeat from message to message
	// (ids 4 to 7), the last value read without escapes, in quotes, and
	// sqsSameVal the value.
	sqsSame    [4]jsonplan.Lit
	sqsSameVal [4]string
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// tok consumes c after white space.
func (s *scanner) tok(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// rawString consumes a string and returns its bytes between the quotes. ok
// is false if there is no well-formed string here.
func (s *scanner) rawString() (raw []byte, ok bool) {
	if !s.tok('"') {
		return nil, false
	}
	start := s.i
	j := start
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false
		}
		end := j + k
		n := 0
		for p := end - 1; p >= start && s.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			s.i = end + 1
			return s.b[start:end], true
		}
		j = end + 1
	}
}

// plainString consumes a string that needs no unescaping or UTF-8 repair:
// printable ASCII without backslashes. One pass finds its end: the first
// byte that is not plain must be the closing quote.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.tok('"') {
		return nil, false
	}
	start := s.i
	j := jsonplan.NextSpecial(s.b, start)
	if j >= len(s.b) || s.b[j] != '"' {
		return nil, false
	}
	s.i = j + 1
	return s.b[start:j], true
}

// plainAs is plainString for a value that most likely spells prev (the same
// field of the record before): when the input spells prev and a quote
// follows, the scan for the end is skipped (prev is plain, or it would not
// have been read here).
func (s *scanner) plainAs(prev string) ([]byte, bool) {
	if e := s.i + 1 + len(prev); prev != "" && e < len(s.b) && s.b[s.i] == '"' && s.b[e] == '"' && string(s.b[s.i+1:e]) == prev {
		start := s.i + 1
		s.i = e + 1
		return s.b[start:e], true
	}
	return s.plainString()
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	end, ok := jsonplan.NumberEnd(s.b, s.i)
	if !ok {
		return nil, false
	}
	num := s.b[s.i:end]
	s.i = end
	return num, true
}

// scanRecords scans an event that is one object whose only key, "Records",
// holds an array, into a slice of E: rec scans one element into r, and
// prev, the element before (nil for the first), lends its strings when they
// repeat. The slice is sized from the first record and the arena from the
// second: the records of one source are alike, a few percent over beats
// copying 10,000 records to grow, and the second record shows what a record
// costs once repeated fields are interned. ok is false for any other shape.
func scanRecords[E any](s *scanner, a *Arena, into []E, rec func(r, prev *E) bool) (recs []E, ok bool) {
	if !s.tok('{') {
		return nil, false
	}
	seen := false
	if !s.tok('}') {
		for {
			key, ok := s.plainString()
			if !ok || string(key) != "Records" || seen || !s.tok(':') || !s.tok('[') {
				return nil, false
			}
			seen = true
			if recs = into[:0]; recs == nil {
				recs = make([]E, 0, 1)
			}
			if !s.tok(']') {
				for {
					start, used := s.i, len(a.buf)
					if len(recs) < cap(recs) {
						recs = recs[:len(recs)+1] // zero: new, or cleared by slices.put
					} else {
						var zero E
						recs = append(recs, zero)
					}
					n := len(recs)
					var prev *E
					if n > 1 {
						prev = &recs[n-2]
					}
					if !rec(&recs[n-1], prev) {
						return nil, false
					}
					if n <= 2 && s.i > start {
						est := (len(s.b)-start)/(s.i-start) + n
						est += est / 16
						if n == 1 && cap(recs) < est {
							grown := make([]E, 1, est)
							grown[0] = recs[0]
							recs = grown
						} else if used <= len(a.buf) {
							a.chunk = est * (len(a.buf) - used + 8)
						}
					}
					if s.tok(']') {
						break
					}
					if !s.tok(',') {
						return nil, false
					}
				}
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return nil, false
			}
		}
	}
	s.ws()
	if s.i != len(s.b) || !seen {
		return nil, false
	}
	return recs, true
}

// null consumes a JSON null.
func (s *scanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// text consumes a string and returns it unescaped, from the arena (or prev
// when it spells the same); null is reported, and leaves a Go string
// unchanged. A scanner that owns its input returns plain strings as they
// lie in it; every other string is copied into the arena (copyText). A nil
// arena makes each string its own allocation. ok is false
// for anything the general decoder must settle: invalid UTF-8, control
// characters, surrogate escapes.
func (s *scanner) text(a *Arena, prev string) (v string, null, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.ws()
		if s.i >= len(s.b) {
			return "", false, false
		}
		if s.b[s.i] != '"' {
			return "", true, s.null()
		}
	}
	start := s.i + 1
	if !s.own && a != nil {
		return s.copyText(a, prev, start) // copying while scanning beats a scan, then a copy
	}
	j := jsonplan.NextSpecial(s.b, start)
	if j < len(s.b) && s.b[j] == '"' {
		s.i = j + 1
		raw := s.b[start:j]
		if string(raw) == prev {
			return prev, false, true
		}
		if s.own && len(raw) > 0 {
			return unsafe.String(&raw[0], len(raw)), false, true
		}
		return a.str(raw), false, true
	}
	// Escapes or non-ASCII: unescaped into the arena (a string of its own
	// without one).
	if a == nil {
		a = &Arena{chunk: 64, most: 64}
	}
	return s.copyText(a, prev, start)
}

// copyText is text into an arena: the string is copied while it is
// scanned, eight bytes at a time, each word stored whole into the arena's
// free space (the bytes past the run are overwritten next), and the common
// escapes are undone on the way without leaving the loop. When the free
// space runs short, the text so far moves to a new chunk.
func (s *scanner) copyText(a *Arena, prev string, start int) (v string, null, ok bool) {
	b := s.b
	out := a.buf[len(a.buf):cap(a.buf)]
	n, j := 0, start
	ascii := true
	for {
		j, n = unescapeRun(b, out, j, n)
		if n+8 > len(out) {
			out = a.move(out[:n], n+64) // doubling: a long string moves O(1) times per byte
			continue
		}
		if j+9 > len(b) {
			k := jsonplan.NextSpecial(b, j)
			if n+k-j+8 > len(out) {
				out = a.move(out[:n], k-j+8)
			}
			n += copy(out[n:], b[j:k])
			j = k
			if j >= len(b) {
				return "", false, false
			}
		}
		switch c := b[j]; {
		case c == '"':
			s.i = j + 1
			text := out[:n]
			if !ascii && !utf8.Valid(text) {
				return "", false, false
			}
			if string(text) == prev {
				return prev, false, true
			}
			if n == 0 {
				return "", false, true
			}
			a.buf = a.buf[:len(a.buf)+n]
			return unsafe.String(&text[0], n), false, true
		case c == '\\':
			r, next, ok := escape(b, j)
			if !ok {
				return "", false, false
			}
			j = next
			n += utf8.EncodeRune(out[n:], r)
		case c < 0x20:
			return "", false, false
		default:
			// Non-ASCII: checked as a whole at the end.
			ascii = false
			out[n] = c
			n++
			j++
		}
	}
}

// escape reads the escape whose backslash is at b[j], as the scanners take
// it: a one-character escape, or \u outside the surrogates (a pair goes to
// the general decoder); next is the index after it.
func escape(b []byte, j int) (r rune, next int, ok bool) {
	if j+1 >= len(b) {
		return 0, 0, false
	}
	if c, ok := jsonplan.Escaped(b[j+1]); ok {
		return rune(c), j + 2, true
	}
	if b[j+1] != 'u' {
		return 0, 0, false
	}
	r, ok = jsonplan.Hex4(b[j+2:])
	if !ok || r >= 0xD800 && r < 0xE000 {
		return 0, 0, false
	}
	return r, j + 6, true
}

// unescapeRun copies b[j:] to out[n:] eight bytes at a time, each word
// stored whole (the bytes past the run are overwritten next), undoing the
// escapes \", \\ and \/ on the way, and returns the indexes of the first
// byte it leaves to its caller: any other byte that is not plain, or one
// within nine bytes of b's end or eight of out's.
func unescapeRun(b, out []byte, j, n int) (int, int) {
	bp, op := unsafe.Pointer(unsafe.SliceData(b)), unsafe.Pointer(unsafe.SliceData(out))
	// j <= len(b)-9 leaves b[j+k+1] in bounds for any k < 8, and n <= len(out)-8
	// a word of out: the loads and stores need no check of their own.
	for lb, lo := len(b)-9, len(out)-8; j <= lb && n <= lo; {
		x := jsonplan.Load64(bp, j)
		jsonplan.Store64(op, n, x)
		m := jsonplan.SpecialBytes(x)
		if m == 0 {
			j += 8
			n += 8
			continue
		}
		k := bits.TrailingZeros64(m) >> 3
		j += k
		n += k
		if byte(x>>(k<<3)) != '\\' {
			break
		}
		e := *(*byte)(unsafe.Add(bp, j+1))
		if e != '"' && e != '\\' && e != '/' {
			break
		}
		*(*byte)(unsafe.Add(op, n)) = e
		j += 2
		n++
	}
	return j, n
}

// int64 consumes a JSON number that encoding/json decodes into an int64.
func (s *scanner) int64() (int64, bool) {
	num, ok := s.number()
	if !ok {
		return 0, false
	}
	n := unsafe.String(unsafe.SliceData(num), len(num))
	if v, ok := Digits(n); ok {
		return v, true // offsets and timestamps: strconv's general path costs more than the rest of the number
	}
	i, err := strconv.ParseInt(n, 10, 64)
	return i, err == nil
}

// lit consumes the literal w (true, false).
func (s *scanner) lit(w string) bool {
	s.ws()
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}
