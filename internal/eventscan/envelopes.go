package eventscan

import (
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// The envelope readers (sns.go, eventbridge.go, s3.go, ddbchange.go) read
// the JSON another AWS service wraps a payload in, the SQS body or Kinesis
// data the source scanner has already decoded, in one pass: known keys as
// the service spells them, each once, strings shared with the input when
// they need no unescaping. Like the source scanners they give up (ok
// false) on anything else, and the envelope's general decoder (the plan
// decoder of a wire struct, then encoding/json) settles it; each reader's
// fuzz target keeps it equal to encoding/json. Their input must not
// change afterwards (the handlers never change a payload).

// SharedJSON is a JSON value kept as it lies in the input (json.RawMessage
// copies it).
type SharedJSON []byte

// UnmarshalJSON keeps b itself.
func (j *SharedJSON) UnmarshalJSON(b []byte) error {
	*j = b
	return nil
}

// sharedText consumes a string (or null) of an input the scanner may share:
// a string without escapes is returned as it lies in the input, any other
// is unescaped into memory of its own, one allocation of at most its
// length. ok is false for what the general decoder must settle (see text).
func (s *scanner) sharedText() (v string, null, ok bool) {
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
	j := jsonplan.NextSpecial(s.b, start)
	if j < len(s.b) && s.b[j] == '"' {
		s.i = j + 1
		if j == start {
			return "", false, true
		}
		return unsafe.String(&s.b[start], j-start), false, true
	}
	// The text unescaped is never longer than the rest of the input: room
	// for that, up to 512 bytes (past which copyText moves the text on,
	// doubling), spares a scan for the string's end. copyText wants a word
	// of room past the text.
	a := &Arena{buf: make([]byte, 0, min(len(s.b)-start, 512)+16), most: 32 << 10}
	v, _, ok = s.copyText(a, "", start)
	return v, false, ok
}

// skipJSON consumes one JSON value, checking it as encoding/json checks a
// value it keeps raw (strings' UTF-8 aside, which encoding/json does not
// check either), at most 1000 levels deep.
func (s *scanner) skipJSON(depth int) bool {
	s.ws()
	if depth > 1000 || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		return s.skipString()
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		if s.tok(end) {
			return true
		}
		for {
			if c == '{' {
				s.ws()
				if !s.skipString() || !s.tok(':') {
					return false
				}
			}
			if !s.skipJSON(depth + 1) {
				return false
			}
			if s.tok(end) {
				return true
			}
			if !s.tok(',') {
				return false
			}
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		end, ok := jsonplan.NumberEnd(s.b, s.i)
		if ok {
			s.i = end
		}
		return ok
	}
}

// skipString consumes a well-formed JSON string at s.i.
func (s *scanner) skipString() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	j := s.i + 1
	for {
		j = jsonplan.NextSpecial(s.b, j)
		if j >= len(s.b) {
			return false
		}
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c == '\\':
			if j+1 >= len(s.b) {
				return false
			}
			if _, ok := jsonplan.Escaped(s.b[j+1]); ok {
				j += 2
				continue
			}
			if s.b[j+1] != 'u' {
				return false
			}
			if _, ok := jsonplan.Hex4(s.b[j+2:]); !ok {
				return false
			}
			j += 6
		case c < 0x20:
			return false
		default:
			j++ // non-ASCII: kept as it is
		}
	}
}

// ParseTime parses the timestamps AWS writes, 2006-01-02T15:04:05Z with
// up to nine digits of fractional seconds, as time.Parse with
// time.RFC3339Nano (and encoding/json's time.Time) parses them; ok is
// false for any other form, which the caller leaves to the time package.
func ParseTime(s string) (t time.Time, ok bool) {
	if len(s) < 20 || len(s) > 30 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day, hour, minute, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	if day > daysIn(time.Month(month), year) {
		return time.Time{}, false
	}
	nsec := 0
	if f := s[19 : len(s)-1]; f != "" {
		if len(f) < 2 || f[0] != '.' {
			return time.Time{}, false
		}
		if nsec = num(20, len(f)-1); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(f) {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(m time.Month, year int) int {
	if m == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + int((m+m/8)%2)
}
