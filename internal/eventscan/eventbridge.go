package eventscan

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// EventBridge is an Amazon EventBridge event as EventBridge delivers it
// to a target: its metadata, and its detail as JSON (nil when absent).
type EventBridge struct {
	Version    string     `json:"version"`
	ID         string     `json:"id"`
	DetailType string     `json:"detail-type"`
	Source     string     `json:"source"`
	Account    string     `json:"account"`
	Time       time.Time  `json:"time"`
	Region     string     `json:"region"`
	Resources  []string   `json:"resources"`
	Detail     SharedJSON `json:"detail"`
}

var eventBridgePlan = sync.OnceValue(jsonplan.New[EventBridge])

// DecodeEventBridge decodes an event by the plan decoder (then
// encoding/json, whose error it returns): the general decoder, for what
// ReadEventBridge does not take. Strings may share data's memory.
func DecodeEventBridge(data []byte) (EventBridge, error) {
	var e EventBridge
	err := eventBridgePlan().Unmarshal(data, &e, true)
	return e, err
}

var eventBridgeKeys = func() (l [9]jsonplan.Lit) {
	for i, k := range eventBridgeKeyNames {
		l[i] = jsonplan.NewLit(`"` + k + `"`)
	}
	return l
}()

// eventBridgeKeyNames are the event's keys in the order EventBridge writes
// them (a key's index is its id).
var eventBridgeKeyNames = [...]string{"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}

// ReadEventBridge reads an event in one pass: the keys EventBridge writes,
// spelled as it spells them, each once; strings without escapes share
// data. ok is false for anything else (an unknown key, a key in another
// case, a time not in the form AWS writes, invalid JSON), which the
// caller leaves to DecodeEventBridge.
//
// With check false, a detail that is the event's last member (as
// EventBridge writes it) is taken to the event's closing brace without
// being read: the caller must then decode Detail with a decoder that
// rejects anything but one JSON value (a trailing member included), and
// take the event another way when it does. Otherwise Detail is checked as
// encoding/json checks a value it keeps raw.
func ReadEventBridge(data []byte, check bool) (e EventBridge, ok bool) {
	s := &scanner{b: data, own: true}
	if !s.tok('{') {
		return EventBridge{}, false
	}
	if !s.tok('}') {
		var seen uint16
		for pos := 0; ; pos++ {
			s.ws()
			id := -1
			if pos < len(eventBridgeKeys) && eventBridgeKeys[pos].At(s.b, s.i) {
				id = pos
				s.i += eventBridgeKeys[pos].Len()
			} else {
				key, ok := s.plainString()
				if !ok {
					return EventBridge{}, false
				}
				if id = eventBridgeKeyID(key); id < 0 {
					return EventBridge{}, false
				}
			}
			if seen&(1<<id) != 0 || !s.tok(':') {
				return EventBridge{}, false
			}
			seen |= 1 << id
			switch id {
			case 8: // detail
				s.ws()
				start := s.i
				if !check {
					end := len(s.b)
					for end > start && isSpace(s.b[end-1]) {
						end--
					}
					if end > start+1 && s.b[end-1] == '}' {
						e.Detail = SharedJSON(s.b[start : end-1 : end-1])
						return e, true
					}
				}
				if !s.skipJSON(0) {
					return EventBridge{}, false
				}
				e.Detail = SharedJSON(s.b[start:s.i:s.i])
			case 7: // resources
				if !s.eventBridgeResources(&e) {
					return EventBridge{}, false
				}
			case 5: // time
				v, null, ok := s.sharedText()
				if !ok {
					return EventBridge{}, false
				}
				if !null {
					if e.Time, ok = ParseTime(v); !ok {
						return EventBridge{}, false
					}
				}
			default:
				v, _, ok := s.sharedText()
				if !ok {
					return EventBridge{}, false
				}
				*e.field(id) = v
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return EventBridge{}, false
			}
		}
	}
	s.ws()
	return e, s.i == len(s.b)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func eventBridgeKeyID(key []byte) int {
	for i, k := range eventBridgeKeyNames {
		if string(key) == k {
			return i
		}
	}
	return -1
}

func (e *EventBridge) field(id int) *string {
	switch id {
	case 0:
		return &e.Version
	case 1:
		return &e.ID
	case 2:
		return &e.DetailType
	case 3:
		return &e.Source
	case 4:
		return &e.Account
	}
	return &e.Region
}

// eventBridgeResources reads the resources array: strings, or null.
func (s *scanner) eventBridgeResources(e *EventBridge) bool {
	if s.null() {
		return true
	}
	if !s.tok('[') {
		return false
	}
	e.Resources = make([]string, 0, 1)
	if s.tok(']') {
		return true
	}
	for {
		v, null, ok := s.sharedText()
		if !ok || null {
			return false
		}
		e.Resources = append(e.Resources, v)
		if s.tok(']') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}
