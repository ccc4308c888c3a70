package eventscan

import "encoding/json"

// Where an event comes from, read from its top-level object (decoded by
// the caller): for the handlers' *SourceMismatchError, on events they
// could not decode or that decoded without records.

// EventSourceOf returns the eventSource of an event: that of its first record
// carrying one (an event with a "Records" array), or the event's own (Kafka).
func EventSourceOf(top map[string]json.RawMessage) string {
	if raw, ok := top["Records"]; ok {
		var recs []struct {
			EventSource string `json:"eventSource"`
		}
		if json.Unmarshal(raw, &recs) == nil {
			for _, r := range recs {
				if r.EventSource != "" {
					return r.EventSource
				}
			}
		}
	}
	var src string
	if raw, ok := top["eventSource"]; ok && json.Unmarshal(raw, &src) == nil {
		return src
	}
	return ""
}

// EventSourceOfAny is EventSourceOf for an event decoded into map[string]any
// (a Firehose handler's check): a record's eventSource counts only when it
// is a non-empty string.
func EventSourceOfAny(top map[string]any) string {
	if recs, ok := top["Records"].([]any); ok {
		for _, r := range recs {
			if m, ok := r.(map[string]any); ok {
				if s, ok := m["eventSource"].(string); ok && s != "" {
					return s
				}
			}
		}
	}
	s, _ := top["eventSource"].(string)
	return s
}

// IsFirehoseEvent reports whether a JSON object is a Firehose
// transformation event: a "records" array (Kafka's is an object), or
// Firehose's invocationId or deliveryStreamArn. Keys are matched exactly.
func IsFirehoseEvent(top map[string]json.RawMessage) bool {
	if _, ok := top["invocationId"]; ok {
		return true
	}
	if _, ok := top["deliveryStreamArn"]; ok {
		return true
	}
	r, ok := top["records"]
	return ok && firstNonSpace(r) == '['
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}
