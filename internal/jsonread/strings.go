package jsonread

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// special marks the bytes that end a run of a string's text: the quote,
// the backslash and the control characters.
var special = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// plainSpan reports whether s holds only printable ASCII other than '"'
// and '\\', eight bytes at a time: a word has a byte below 0x20, one of
// 0x80 or above, or a backslash when these (exact) tests find one.
func plainSpan(s []byte) bool {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		y := x ^ ('\\' * ones)
		if ((x-0x20*ones)&^x|x|(y-ones)&^y)&high != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// readText consumes the string at r.i and returns its text: the input's
// own bytes when it needs no unescaping (same true: they are the text as
// it lies between the quotes), else the text unescaped into *buf. Most
// strings are plain ASCII, found by their closing quote and checked a word
// at a time; the others are unescaped and checked in one pass.
func (r *Reader) readText(buf *[]byte) (text []byte, same bool, err error) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false, r.syntax("not a string")
	}
	b, start := r.b, r.i+1
	if k := bytes.IndexByte(b[start:], '"'); k >= 0 && plainSpan(b[start:start+k]) {
		r.i = start + k + 1
		return b[start : start+k], true, nil
	}
	out, end, changed, err := unquote((*buf)[:0], b, start)
	if err != nil {
		return nil, false, err
	}
	*buf = out
	r.i = end
	if !changed {
		return b[start : end-1], true, nil
	}
	return out, false, nil
}

// unquote appends the text of the string whose contents start at b[j] to
// dst, by encoding/json's rules: escapes undone, a surrogate pair joined, a
// lone surrogate and each invalid UTF-8 byte turned into U+FFFD. end is
// the index after the closing quote; changed says the text differs from
// the bytes in the input.
func unquote(dst, b []byte, j int) (out []byte, end int, changed bool, err error) {
	start, from := j, len(dst)
	// The text is copied as it is scanned, a byte at a time, into the
	// buffer's spare room (grown as needed): a JSON body in an SQS message
	// has an escape every few bytes, and a call per run between them costs
	// more than the bytes.
	out = dst[:cap(dst)]
	n := from
	for {
		for j < len(b) && !special[b[j]] {
			if n == len(out) {
				out = append(out, 0)
				out = out[:cap(out)]
			}
			out[n] = b[j]
			n++
			j++
		}
		if j >= len(b) {
			return nil, 0, false, &SyntaxError{Offset: len(b), Msg: "the string does not end"}
		}
		k := j
		dst = out[:n]
		if c := b[k]; c == '"' {
			if !utf8.Valid(dst[from:]) {
				dst = appendFixed(dst[:from], b[start:k])
				changed = true
			}
			return dst, k + 1, changed, nil
		} else if c != '\\' {
			return nil, 0, false, &SyntaxError{Offset: k, Msg: "a control character in a string"}
		}
		changed = true
		if k+1 >= len(b) {
			return nil, 0, false, &SyntaxError{Offset: k, Msg: "the string does not end"}
		}
		j = k + 2
		switch e := b[k+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b[k+2:])
			if !ok {
				return nil, 0, false, &SyntaxError{Offset: k, Msg: "a \\u escape without four hex digits"}
			}
			j = k + 6
			if r >= 0xD800 && r < 0xE000 {
				joined := false
				if r < 0xDC00 && j+1 < len(b) && b[j] == '\\' && b[j+1] == 'u' {
					if r2, ok := hex4(b[j+2:]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
						r, joined = (r-0xD800)<<10|(r2-0xDC00)+0x10000, true
						j += 6
					}
				}
				if !joined {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return nil, 0, false, &SyntaxError{Offset: k, Msg: "an invalid escape"}
		}
		out, n = dst[:cap(dst)], len(dst)
	}
}

// appendFixed appends the text of raw, a checked string's contents, with
// each invalid UTF-8 byte as U+FFFD (unquote's rare second pass).
func appendFixed(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		if raw[i] == '\\' {
			// An escape: unquote reads it (its length is known to be right).
			n := 2
			if raw[i+1] == 'u' {
				n = 6
				if r, _ := hex4(raw[i+2:]); r >= 0xD800 && r < 0xDC00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					if r2, _ := hex4(raw[i+8:]); r2 >= 0xDC00 && r2 < 0xE000 {
						n = 12
					}
				}
			}
			esc := append(append(make([]byte, 0, n+1), raw[i:i+n]...), '"')
			dst, _, _, _ = unquote(dst, esc, 0)
			i += n
			continue
		}
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, raw[i:i+n]...)
		}
		i += n
	}
	return dst
}

// skipString consumes the string at r.i, checking it.
func (r *Reader) skipString() error {
	_, _, err := r.readText(&r.sbuf)
	return err
}

// keyBytes reads a key: the input's own bytes when it needs no
// unescaping, else unescaped into the key's own buffer (values read while
// the key is in use go to another).
func (r *Reader) keyBytes() ([]byte, error) {
	text, _, err := r.readText(&r.kbuf)
	return text, err
}

// text returns the string of a text readText returned: cut from the
// shared copy when it is the input's own.
func (r *Reader) text(text []byte, same bool) string {
	if same && r.s != "" {
		end := r.i - 1 // the closing quote
		return r.s[end-len(text) : end]
	}
	return string(text)
}

// String reads a string. ok is false, with a *TypeError recorded and the
// value skipped, when the value is not a string (null included).
func (r *Reader) String() (s string, ok bool, err error) {
	c := r.Peek()
	if c != '"' {
		return "", false, r.mismatch(c, "a string")
	}
	text, same, err := r.readText(&r.sbuf)
	if err != nil {
		return "", false, err
	}
	return r.text(text, same), true, nil
}

// StringInto reads a string into *dst; null leaves *dst as it was.
func (r *Reader) StringInto(dst *string) error {
	_, _, err := r.TextInto(dst)
	return err
}

// TextInto reads a string into *dst as StringInto does, and returns its
// text as bytes too, valid until the next read (do not keep or change
// them). null leaves *dst and gives null true.
func (r *Reader) TextInto(dst *string) (text []byte, null bool, err error) {
	c := r.Peek()
	if c == 'n' {
		return nil, true, r.lit("null")
	}
	if c != '"' {
		return nil, false, r.mismatch(c, "a string")
	}
	text, same, err := r.readText(&r.sbuf)
	if err != nil {
		return nil, false, err
	}
	*dst = r.text(text, same)
	return text, false, nil
}

// StringView reads a string's text, valid until the next read (do not
// keep or change it). null gives null true; a value of another type is
// recorded and skipped (ok false).
func (r *Reader) StringView() (text []byte, null, ok bool, err error) {
	c := r.Peek()
	if c == 'n' {
		return nil, true, true, r.lit("null")
	}
	if c != '"' {
		return nil, false, false, r.mismatch(c, "a string")
	}
	text, _, err = r.readText(&r.sbuf)
	if err != nil {
		return nil, false, false, err
	}
	return text, false, true, nil
}
