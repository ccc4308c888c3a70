package handlers

import (
	"encoding/base64"
	"math/bits"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// decodeSQSEvent decodes an SQS event. A hand-written scanner reads the
// shape Lambda sends; anything else goes to decodeRecordArray (the plan
// decoder, then encoding/json), whose result the scanner must equal (FuzzSQSDecode).
// The one difference: a message whose messageAttributes is {} gets a nil map
// rather than an empty one (a map costs an allocation per message); reading
// it is the same, and events.MarshalSQSMessage writes it back as {}.
//
// The result shares no memory with payload, which the Lambda runtime reuses.
func decodeSQSEvent(payload []byte) ([]events.SQSMessage, []error, error) {
	if recs, ok := scanSQSEvent(payload); ok {
		return recs, nil, nil
	}
	return decodeRecordArray("sqs", payload, func(m *events.SQSMessage) string { return m.MessageId })
}

// sqsMessages keeps the slice of one SQS invocation's messages for the
// next (SQSHandler.Invoke puts it back).
var sqsMessages slicePool[events.SQSMessage]

// scanSQSEvent is the fast path of decodeSQSEvent; ok is false when the
// input needs the general decoder.
func scanSQSEvent(payload []byte) (recs []events.SQSMessage, ok bool) {
	s := &scanner{b: payload}
	a := &arena{chunk: 4096, most: 32 << 10}
	return scanRecords(s, a, sqsMessages.get(), func(m, prev *events.SQSMessage) bool { return s.sqsMessage(a, m, prev) })
}

// sqsMessage scans one message into m; prev lends repeated strings. A key
// seen twice, an unknown key or an unexpected value type makes it fail.
func (s *scanner) sqsMessage(a *arena, m *events.SQSMessage, prev *events.SQSMessage) bool {
	if prev == nil {
		prev = &events.SQSMessage{}
	}
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	var seen uint16
	for pos := 0; ; pos++ {
		// Keys mostly come in the order of the message before: try that
		// key first, straight on the input.
		id := -1
		if pos < len(s.sqsOrder) {
			if p := s.sqsOrder[pos]; p > 0 {
				if q := &sqsKeyLits[p-1]; q.At(s.b, s.i) {
					id = int(p - 1)
					s.i += q.Len()
				}
			}
		}
		if id < 0 {
			key, ok := s.plainString()
			if !ok {
				return false
			}
			if id = sqsKeyID(key); id < 0 {
				return false
			}
			if pos < len(s.sqsOrder) {
				s.sqsOrder[pos] = int8(id + 1)
			}
		}
		if !s.tok(':') {
			return false
		}
		bit := uint16(1) << id
		var dst *string
		was := ""
		switch id {
		case 0:
			dst = &m.MessageId
		case 1:
			dst = &m.ReceiptHandle
		case 2:
			dst = &m.Body
		case 3:
			dst = &m.Md5OfBody
		case 4:
			dst, was = &m.Md5OfMessageAttributes, prev.Md5OfMessageAttributes
		case 5:
			dst, was = &m.EventSource, prev.EventSource
		case 6:
			dst, was = &m.EventSourceARN, prev.EventSourceARN
		case 7:
			dst, was = &m.AWSRegion, prev.AWSRegion
		}
		if seen&bit != 0 {
			return false // encoding/json merges repeated objects: let it
		}
		seen |= bit
		switch {
		case id >= 4 && id < 8 && s.sqsSame[id-4].Len() > 0 && s.sqsSame[id-4].At(s.b, s.i):
			// The same text as the last time, which had no escapes: no
			// scan, no copy.
			*dst = s.sqsSameVal[id-4]
			s.i += s.sqsSame[id-4].Len()
		case dst != nil:
			start := s.i
			v, null, ok := s.text(a, was)
			if !ok {
				return false
			}
			if !null {
				*dst = v
				if id >= 4 && s.i-start == len(v)+2 && string(s.b[start+1:s.i-1]) == v {
					s.sqsSame[id-4], s.sqsSameVal[id-4] = jsonplan.NewLit(`"`+v+`"`), v
				}
			}
		case id == 8:
			if !s.sqsAttributes(a, m) {
				return false
			}
		default:
			if !s.sqsMessageAttributes(a, m) {
				return false
			}
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

// sqsKeyLits are the keys of an SQS message in quotes, a key's index its
// id (see sqsKeyID).
var sqsKeyLits = func() (l [10]jsonplan.Lit) {
	for i, k := range [...]string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes",
		"eventSource", "eventSourceARN", "awsRegion", "attributes", "messageAttributes"} {
		l[i] = jsonplan.NewLit(`"` + k + `"`)
	}
	return l
}()

func sqsKeyID(key []byte) int {
	switch string(key) {
	case "messageId":
		return 0
	case "receiptHandle":
		return 1
	case "body":
		return 2
	case "md5OfBody":
		return 3
	case "md5OfMessageAttributes":
		return 4
	case "eventSource":
		return 5
	case "eventSourceARN":
		return 6
	case "awsRegion":
		return 7
	case "attributes":
		return 8
	case "messageAttributes":
		return 9
	}
	return -1
}

// sqsAttributeName returns the constant spelling of a system attribute's
// name, so the map keys cost nothing; "" for others.
func sqsAttributeName(b []byte) string {
	switch string(b) {
	case "ApproximateReceiveCount":
		return "ApproximateReceiveCount"
	case "SentTimestamp":
		return "SentTimestamp"
	case "SenderId":
		return "SenderId"
	case "ApproximateFirstReceiveTimestamp":
		return "ApproximateFirstReceiveTimestamp"
	case "SequenceNumber":
		return "SequenceNumber"
	case "MessageGroupId":
		return "MessageGroupId"
	case "MessageDeduplicationId":
		return "MessageDeduplicationId"
	case "AWSTraceHeader":
		return "AWSTraceHeader"
	case "DeadLetterQueueSourceArn":
		return "DeadLetterQueueSourceArn"
	}
	return ""
}

// sqsAttributes scans the attributes object: string values, or null for
// the whole object.
func (s *scanner) sqsAttributes(a *arena, m *events.SQSMessage) bool {
	if s.null() {
		return true
	}
	if !s.tok('{') {
		return false
	}
	m.Attributes = make(map[string]string, 4)
	if s.tok('}') {
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		name := sqsAttributeName(key)
		if name == "" {
			name = a.str(key)
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == 'n' {
			return false // null in a map of strings: the general decoder settles it
		}
		v, _, ok := s.text(a, "")
		if !ok {
			return false
		}
		l := len(m.Attributes)
		if m.Attributes[name] = v; len(m.Attributes) == l {
			return false // a repeated name: encoding/json keeps the last, let it
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

// sqsMessageAttributes scans the messageAttributes object. {} leaves the map
// nil (see decodeSQSEvent); list values other than [] go to the general
// decoder.
func (s *scanner) sqsMessageAttributes(a *arena, m *events.SQSMessage) bool {
	if s.null() {
		return true
	}
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	m.MessageAttributes = make(map[string]events.SQSMessageAttribute, 1)
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') || !s.tok('{') {
			return false
		}
		name := a.str(key)
		if _, dup := m.MessageAttributes[name]; dup {
			return false
		}
		var attr events.SQSMessageAttribute
		if !s.tok('}') {
			var seen uint8
			for {
				k, ok := s.plainString()
				if !ok || !s.tok(':') {
					return false
				}
				var bit uint8
				switch string(k) {
				case "stringValue":
					bit = 1
					v, null, ok := s.text(a, "")
					if !ok {
						return false
					}
					if !null {
						attr.StringValue = &v
					}
				case "binaryValue":
					bit = 2
					if !s.null() {
						raw, ok := s.rawString()
						if !ok {
							return false
						}
						dst := a.alloc(base64.StdEncoding.DecodedLen(len(raw)))
						n, ok := decodeStdBase64(dst, raw)
						if !ok {
							return false
						}
						attr.BinaryValue = []byte{}
						if n > 0 {
							attr.BinaryValue = dst[:n:n]
						}
					}
				case "stringListValues", "binaryListValues":
					bit = 4
					if string(k) == "binaryListValues" {
						bit = 8
					}
					switch {
					case s.null():
					case s.tok('['):
						if !s.tok(']') {
							return false
						}
						if bit == 4 {
							attr.StringListValues = []string{}
						} else {
							attr.BinaryListValues = [][]byte{}
						}
					default:
						return false
					}
				case "dataType":
					bit = 16
					v, _, ok := s.text(a, "")
					if !ok {
						return false
					}
					attr.DataType = v
				default:
					return false
				}
				if seen&bit != 0 {
					return false
				}
				seen |= bit
				if s.tok('}') {
					break
				}
				if !s.tok(',') {
					return false
				}
			}
		}
		m.MessageAttributes[name] = attr
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
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
func (s *scanner) text(a *arena, prev string) (v string, null, ok bool) {
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
		a = &arena{chunk: 64, most: 64}
	}
	return s.copyText(a, prev, start)
}

// copyText is text into an arena: the string is copied while it is
// scanned, eight bytes at a time, each word stored whole into the arena's
// free space (the bytes past the run are overwritten next), and the common
// escapes are undone on the way without leaving the loop. When the free
// space runs short, the text so far moves to a new chunk.
func (s *scanner) copyText(a *arena, prev string, start int) (v string, null, ok bool) {
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
