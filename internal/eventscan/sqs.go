package eventscan

import (
	"encoding/base64"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// ScanSQS is the fast path of the SQS decoder (handlers): a hand-written
// scanner for the shape Lambda sends, which fails (ok false) on anything
// else so that the general decoder (the plan decoder, then encoding/json)
// settles it; FuzzSQSDecode keeps the two equal. The one difference: a
// message whose messageAttributes is {} gets a nil map rather than an
// empty one (a map costs an allocation per message); reading it is the
// same, and events.MarshalSQSMessage writes it back as {}. into is reused
// as DecodeKinesis reuses it.
//
// The result shares no memory with payload, which the Lambda runtime reuses.
func ScanSQS(payload []byte, into []events.SQSMessage) (recs []events.SQSMessage, ok bool) {
	s := &scanner{b: payload}
	a := &Arena{chunk: 4096, most: 32 << 10}
	return scanRecords(s, a, into, func(m, prev *events.SQSMessage) bool { return s.sqsMessage(a, m, prev) })
}

// sqsMessage scans one message into m; prev lends repeated strings. A key
// seen twice, an unknown key or an unexpected value type makes it fail.
func (s *scanner) sqsMessage(a *Arena, m *events.SQSMessage, prev *events.SQSMessage) bool {
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
func (s *scanner) sqsAttributes(a *Arena, m *events.SQSMessage) bool {
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
func (s *scanner) sqsMessageAttributes(a *Arena, m *events.SQSMessage) bool {
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
