package jsonread

// keptText is the text of the strings read with KeepText, one after
// another, and the span of the last.
type keptText struct {
	buf        []byte
	start, end int
	ok         bool // a text was kept since the last TakeKept
}

// KeepText reads a string as StringInto does, but appends its text to the
// Reader's kept text (Kept) instead of making a string of it: a source
// whose strings are needed as bytes as well (an SQS body, which the codec
// reads) keeps them in one buffer, made into one string at the end,
// rather than allocating a string and a copy of it per record. TakeKept
// gives the span. null leaves the last span as it was, as it leaves a
// string; a value of another type is a *TypeError, recorded and skipped.
func (r *Reader) KeepText() error {
	c := r.Peek()
	if c == 'n' {
		return r.lit("null")
	}
	if c != '"' {
		return r.mismatch(c, "a string")
	}
	b, k := r.b, &r.kept
	start := r.i + 1
	j := plainEnd(b, start)
	from := len(k.buf)
	if j < len(b) && b[j] == '"' {
		k.buf = append(k.buf, b[start:j]...)
		r.i = j + 1
	} else {
		out, end, _, err := unquote(k.buf, b, start, j)
		if err != nil {
			return err
		}
		k.buf, r.i = out, end
	}
	k.start, k.end, k.ok = from, len(k.buf), true
	return nil
}

// TakeKept returns the span in Kept of the text KeepText kept last, ok
// false when it kept none since the last call.
func (r *Reader) TakeKept() (start, end int, ok bool) {
	k := &r.kept
	start, end, ok = k.start, k.end, k.ok
	k.ok = false
	return start, end, ok
}

// GrowKept makes room for n more bytes of kept text.
func (r *Reader) GrowKept(n int) {
	if k := &r.kept; cap(k.buf)-len(k.buf) < n {
		k.buf = append(make([]byte, 0, len(k.buf)+n), k.buf...)
	}
}

// Kept returns the kept text. It is the Reader's to append to until the
// input is read.
func (r *Reader) Kept() []byte { return r.kept.buf }

// Gather returns text as a string: of a Reader made with Gathered, written
// into its Builder and cut from it (the bytes are copied once, into room
// GrowStrings made); else a string of its own. Out of line: inlined, it
// made TextInto slower for the other Readers.
//
//go:noinline
func (r *Reader) Gather(text []byte) string {
	if r.strs == nil {
		return string(text)
	}
	if len(text) == 0 {
		return ""
	}
	n := r.strs.Len()
	r.strs.Write(text)
	return r.strs.String()[n:]
}

// GatheredLen is how many bytes of strings a Reader made with Gathered has
// written.
func (r *Reader) GatheredLen() int { return r.strs.Len() }

// GrowStrings makes room for n more bytes of strings (Gathered).
func (r *Reader) GrowStrings(n int) { r.strs.Grow(n) }
