package eventscan

import (
	"bytes"
	"encoding/json"
	"slices"
)

// RecordSpans is SplitRecords' fast path for an event whose records are a
// top-level "Records" array (Kinesis, DynamoDB Streams, SQS): it walks the
// JSON without decoding it and returns each element's bytes, sharing
// payload. ok is false for anything it does not expect (another key that
// encoding/json would also take for Records, a repeated key, invalid
// JSON), and the caller decodes instead.
func RecordSpans(payload []byte) (spans []json.RawMessage, ok bool) {
	s := spanScanner{b: payload}
	s.ws()
	if !s.byte('{') {
		return nil, false
	}
	found := false
	s.ws()
	if s.byte('}') {
		return nil, false
	}
	for {
		s.ws()
		start := s.i
		if !s.skipString() {
			return nil, false
		}
		key := payload[start+1 : s.i-1]
		s.ws()
		if !s.byte(':') {
			return nil, false
		}
		s.ws()
		switch {
		case string(key) == "Records":
			if found || !s.byte('[') {
				return nil, false
			}
			found = true
			spans = []json.RawMessage{}
			s.ws()
			if !s.byte(']') {
				for {
					s.ws()
					v := s.i
					if !s.skipValue(0) {
						return nil, false
					}
					spans = append(spans, payload[v:s.i:s.i])
					s.ws()
					if s.byte(']') {
						break
					}
					if !s.byte(',') {
						return nil, false
					}
				}
			}
		case bytes.EqualFold(key, []byte("Records")) || bytes.IndexByte(key, '\\') >= 0:
			return nil, false // encoding/json's matching decides
		default:
			if !s.skipValue(0) {
				return nil, false
			}
		}
		s.ws()
		if s.byte('}') {
			break
		}
		if !s.byte(',') {
			return nil, false
		}
	}
	s.ws()
	return spans, found && s.i == len(payload)
}

type spanScanner struct {
	b []byte
	i int
}

func (s *spanScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *spanScanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// skipString skips a string, escapes included; it checks the shape only
// (the handler's decoder has validated the event already).
func (s *spanScanner) skipString() bool {
	if !s.byte('"') {
		return false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			return true
		case '\\':
			s.i += 2
		default:
			if s.b[s.i] < 0x20 {
				return false
			}
			s.i++
		}
	}
	return false
}

// skipValue skips one value, at most 1000 levels deep (as encoding/json
// allows 10000; deeper events go to encoding/json).
func (s *spanScanner) skipValue(depth int) bool {
	if depth > 1000 || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		s.ws()
		if s.byte(end) {
			return true
		}
		for {
			s.ws()
			if c == '{' {
				if !s.skipString() {
					return false
				}
				s.ws()
				if !s.byte(':') {
					return false
				}
				s.ws()
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			s.ws()
			if s.byte(end) {
				return true
			}
			if !s.byte(',') {
				return false
			}
		}
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}

// SplitRecords returns the spans of an event's records (encoding/json
// keeps a RawMessage's bytes as they are), in the order the handlers decode
// them: the "Records" array in order, or Kafka's topic-partitions sorted,
// each in offset order; nil when the event does not decode.
func SplitRecords(payload []byte, kafka bool) []json.RawMessage {
	if !kafka {
		if spans, ok := RecordSpans(payload); ok {
			return spans
		}
		var ev struct {
			Records []json.RawMessage `json:"Records"`
		}
		if json.Unmarshal(payload, &ev) != nil {
			return nil
		}
		return ev.Records
	}
	var ev struct {
		Records map[string][]json.RawMessage `json:"records"`
	}
	if json.Unmarshal(payload, &ev) != nil {
		return nil
	}
	keys, n := Partitions(ev.Records)
	out := make([]json.RawMessage, 0, n)
	for _, k := range keys {
		out = append(out, ev.Records[k]...)
	}
	return slices.Clip(out)
}
