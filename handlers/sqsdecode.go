package handlers

import (
	"encoding/base64"
	"encoding/binary"
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

// scanSQSEvent is the fast path of decodeSQSEvent; ok is false when the
// input needs the general decoder.
func scanSQSEvent(payload []byte) (recs []events.SQSMessage, ok bool) {
	s := &scanner{b: payload}
	a := &arena{chunk: 4096}
	return scanRecords(s, a, func(m, prev *events.SQSMessage) bool { return s.sqsMessage(a, m, prev) })
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
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		var bit uint16
		var dst *string
		was := ""
		switch string(key) {
		case "messageId":
			bit, dst = 1<<0, &m.MessageId
		case "receiptHandle":
			bit, dst = 1<<1, &m.ReceiptHandle
		case "body":
			bit, dst = 1<<2, &m.Body
		case "md5OfBody":
			bit, dst = 1<<3, &m.Md5OfBody
		case "md5OfMessageAttributes":
			bit, dst, was = 1<<4, &m.Md5OfMessageAttributes, prev.Md5OfMessageAttributes
		case "eventSource":
			bit, dst, was = 1<<5, &m.EventSource, prev.EventSource
		case "eventSourceARN":
			bit, dst, was = 1<<6, &m.EventSourceARN, prev.EventSourceARN
		case "awsRegion":
			bit, dst, was = 1<<7, &m.AWSRegion, prev.AWSRegion
		case "attributes":
			bit = 1 << 8
		case "messageAttributes":
			bit = 1 << 9
		default:
			return false
		}
		if seen&bit != 0 {
			return false // encoding/json merges repeated objects: let it
		}
		seen |= bit
		switch {
		case dst != nil:
			v, null, ok := s.text(a, was)
			if !ok {
				return false
			}
			if !null {
				*dst = v
			}
		case bit == 1<<8:
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

// sqsAttributeName returns the constant spelling of a system attribute's
// name, so the map keys cost nothing; "" for others.
func sqsAttributeName(b []byte) string {
	for _, n := range [...]string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
		"SequenceNumber", "MessageGroupId", "MessageDeduplicationId", "AWSTraceHeader", "DeadLetterQueueSourceArn"} {
		if string(b) == n {
			return n
		}
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
		if _, dup := m.Attributes[name]; dup {
			return false
		}
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == 'n' {
			return false // null in a map of strings: the general decoder settles it
		}
		v, _, ok := s.text(a, "")
		if !ok {
			return false
		}
		m.Attributes[name] = v
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
// unchanged. A nil arena makes each string its own allocation. ok is false for anything the general decoder must settle:
// invalid UTF-8, control characters, surrogate escapes.
func (s *scanner) text(a *arena, prev string) (v string, null, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return "", false, false
	}
	if s.b[s.i] != '"' {
		return "", true, s.null()
	}
	start := s.i + 1
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
	// Escapes or non-ASCII: unescape straight into the arena's free space
	// (the text is never longer unescaped), growing it only when it runs
	// out, so the string is written once.
	out := a.room(j - start + 64)
	out = append(out, s.b[start:j]...)
	ascii := true
	for {
		if j >= len(s.b) {
			return "", false, false
		}
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			if !ascii && !utf8.Valid(out) {
				return "", false, false
			}
			return a.commit(out), false, true
		case c == '\\':
			if j+1 >= len(s.b) {
				return "", false, false
			}
			e := s.b[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := jsonplan.Hex4(s.b[j:])
				if !ok || r >= 0xD800 && r < 0xE000 {
					return "", false, false
				}
				j += 4
				out = utf8.AppendRune(out, r)
			default:
				return "", false, false
			}
		case c < 0x20:
			return "", false, false
		default:
			// Non-ASCII: checked as a whole at the end.
			ascii = false
			out = append(out, c)
			j++
		}
		out, j = copyPlain(out, s.b, j)
	}
}

// copyPlain appends b[j:] up to the next byte that ends a plain run (see
// nextSpecial) to out and returns that byte's index: eight bytes at a time,
// each word stored whole into out's spare room (the bytes past the run are
// overwritten next), so short runs between escapes cost no copy call.
func copyPlain(out, b []byte, j int) ([]byte, int) {
	for j+8 <= len(b) && cap(out)-len(out) >= 8 {
		w := binary.LittleEndian.Uint64(b[j:])
		n := len(out)
		binary.LittleEndian.PutUint64(out[n:n+8], w)
		if m := jsonplan.SpecialBytes(w); m != 0 {
			k := bits.TrailingZeros64(m) / 8
			return out[:n+k], j + k
		}
		out = out[:n+8]
		j += 8
	}
	k := jsonplan.NextSpecial(b, j)
	return append(out, b[j:k]...), k
}
