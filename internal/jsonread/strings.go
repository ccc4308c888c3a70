package jsonread

import (
	"encoding/binary"
	"math/bits"
	"slices"
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

const ones, high = 0x0101010101010101, 0x8080808080808080

// escMask marks, in the high bit of each of the eight bytes of x (read
// little-endian), a quote, a backslash or a control character; a byte of
// 0x80 or above is not marked. Only the lowest mark is sure to be right (a
// borrow can mark a byte above it), and it is the one that is used.
func escMask(x uint64) uint64 {
	q, e := x^('"'*ones), x^('\\'*ones)
	return ((q - ones) | (e - ones) | (x - 0x20*ones)) &^ x & high
}

// plainMask is escMask that marks the bytes of 0x80 and above too: the
// bytes that end a plain ASCII run of a string's text.
func plainMask(x uint64) uint64 {
	q, e := x^('"'*ones), x^('\\'*ones)
	return ((q - ones) | (e - ones) | (x - 0x20*ones) | x) & high
}

// plainEnd returns the index of the first byte at or after i that ends a
// plain ASCII run of string text (a quote, a backslash, a control
// character or a byte of 0x80 or above), len(b) if none does: eight bytes
// at a time while eight remain.
func plainEnd(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := plainMask(binary.LittleEndian.Uint64(b[i : i+8])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; special[c] || c >= 0x80 {
			return i
		}
	}
	return i
}

// readText consumes the string at r.i and returns its text: the input's
// own bytes when it needs no unescaping (same true: they are the text as
// it lies between the quotes), else the text unescaped into *buf. Most
// strings are plain ASCII, found by their closing quote a word at a time;
// the others are unescaped and checked in one pass from the first byte
// that is not plain.
func (r *Reader) readText(buf *[]byte) (text []byte, same bool, err error) {
	b := r.b
	if r.i >= len(b) || b[r.i] != '"' {
		return nil, false, r.syntax("not a string")
	}
	start := r.i + 1
	k := plainEnd(b, start)
	if k < len(b) && b[k] == '"' {
		r.i = k + 1
		return b[start:k], true, nil
	}
	out, end, changed, err := unquote((*buf)[:0], b, start, k)
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

// unquote appends the text of the string whose contents start at b[start]
// to dst, by encoding/json's rules: escapes undone, a surrogate pair
// joined, a lone surrogate and each invalid UTF-8 byte turned into U+FFFD.
// b[start:j] is known to be plain ASCII. end is the index after the closing
// quote; changed says the text differs from the bytes in the input.
func unquote(dst, b []byte, start, j int) (text []byte, end int, changed bool, err error) {
	from := len(dst)
	dst = append(dst, b[start:j]...)
	out, n := dst[:cap(dst)], len(dst)
	var seen uint64 // the bytes copied from the input, or'd: is any 0x80 or above?
	for {
		j, n, seen = unescapeRun(out, b, j, n, seen)
		if n+8 > len(out) {
			out = slices.Grow(out[:n], 8+n-from)
			out = out[:cap(out)]
			continue
		}
		if j >= len(b) {
			return nil, 0, false, &SyntaxError{Offset: len(b), Msg: "the string does not end"}
		}
		c := b[j]
		if !special[c] { // the last bytes of the input, a byte at a time
			out[n], seen = c, seen|uint64(c)
			n, j = n+1, j+1
			continue
		}
		if c == '"' {
			text = out[:n]
			changed = n-from != j-start // each escape is longer than its text
			// Only bytes of the input can be invalid UTF-8 (an escape
			// writes a valid rune), and plain ASCII is valid.
			if seen&high != 0 && !utf8.Valid(text[from:]) {
				text = appendFixed(text[:from], b[start:j])
				changed = true
			}
			return text, j + 1, changed, nil
		}
		if c != '\\' {
			return nil, 0, false, &SyntaxError{Offset: j, Msg: "a control character in a string"}
		}
		if j+1 >= len(b) {
			return nil, 0, false, &SyntaxError{Offset: j, Msg: "the string does not end"}
		}
		k := j
		j = k + 2
		switch e := b[k+1]; e {
		case '"', '\\', '/':
			out[n] = e
		case 'b':
			out[n] = '\b'
		case 'f':
			out[n] = '\f'
		case 'n':
			out[n] = '\n'
		case 'r':
			out[n] = '\r'
		case 't':
			out[n] = '\t'
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
			n += utf8.EncodeRune(out[n:], r) - 1
		default:
			return nil, 0, false, &SyntaxError{Offset: k, Msg: "an invalid escape"}
		}
		n++
	}
}

// unescapeRun copies the text of a string from b[j:] to out[n:], eight
// bytes at a time, undoing the escapes of a JSON text inside a string (\",
// \\ and \/) on the way, and stops at anything else (a quote, another
// escape, a control character) or when fewer than nine bytes are left in
// b or eight in out; it returns where it stopped in both. Each word is
// stored whole and n moved past its plain bytes only, so a JSON body in an
// SQS message, with an escape every few bytes, costs a word per run rather
// than a step per byte. seen is or'd with every word copied (over the
// text's end too, so a byte of 0x80 or above in it may not be the text's).
func unescapeRun(out, b []byte, j, n int, seen uint64) (int, int, uint64) {
	for j+9 <= len(b) && n+8 <= len(out) {
		x := binary.LittleEndian.Uint64(b[j : j+8])
		binary.LittleEndian.PutUint64(out[n:n+8], x)
		seen |= x
		m := escMask(x)
		if m == 0 {
			j, n = j+8, n+8
			continue
		}
		k := bits.TrailingZeros64(m) >> 3
		j, n = j+k, n+k
		if b[j] != '\\' {
			break
		}
		e := b[j+1]
		if e != '"' && e != '\\' && e != '/' {
			break
		}
		out[n] = e
		j, n = j+2, n+1
	}
	return j, n, seen
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
			dst, _, _, _ = unquote(dst, esc, 0, 0)
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
	if r.strs != nil { // out of text, which stays small enough to inline
		return r.Gather(text), true, nil
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
	if r.strs != nil {
		*dst = r.Gather(text)
	} else {
		*dst = r.text(text, same)
	}
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
