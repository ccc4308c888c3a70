package eventscan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// A KafkaEntry is one record of a Kafka event.
type KafkaEntry struct {
	Record events.KafkaRecord
	Err    error  // the record is malformed: only its offset is known
	ID     string // the batch item identifier, when the decoder made it
}

// KafkaEvent is a decoded Kafka event.
type KafkaEvent struct {
	Entries []KafkaEntry
	Parts   []string // the topic-partition of each entry
	Source  string   // the event's eventSource
	ARN     string   // the event's eventSourceArn (MSK)
	Records bool     // the event has a records object
	// Scanned says the fast scanner read the event: it takes no record
	// with schema metadata, so there is none to look for.
	Scanned bool
}

// DecodeKafka decodes the records of a Kafka event in a stable order:
// topic-partitions sorted by key, records as delivered (offset order). Like
// the handlers' decoder of "Records" arrays it isolates a malformed record
// when it can. The result shares no memory with payload.
func DecodeKafka(payload []byte) (KafkaEvent, error) {
	if ev, ok := scanKafkaEvent(payload); ok {
		return ev, nil
	}
	// The plan decoder first (see RecordArray), kept equal to
	// encoding/json by the handlers' FuzzEnvelopeAgrees.
	var whole kafkaWhole
	if kafkaWholeDecoder().Unmarshal(payload, &whole, false) == nil {
		keys, n := Partitions(whole.Records)
		out := make([]KafkaEntry, 0, n)
		parts := make([]string, 0, n)
		for _, k := range keys {
			for _, rec := range whole.Records[k] {
				out = append(out, KafkaEntry{Record: rec})
				parts = append(parts, k)
			}
		}
		return KafkaEvent{out, parts, whole.EventSource, whole.EventSourceArn, whole.Records != nil, false}, nil
	}
	var loose struct {
		EventSource    string                       `json:"eventSource"`
		EventSourceArn string                       `json:"eventSourceArn"`
		Records        map[string][]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(payload, &loose); err != nil {
		return KafkaEvent{}, fmt.Errorf("sluice: kafka: the event is not a Kafka event: %w", err)
	}
	keys, n := Partitions(loose.Records)
	out := make([]KafkaEntry, 0, n)
	parts := make([]string, 0, n)
	for _, k := range keys {
		for j, raw := range loose.Records[k] {
			var e KafkaEntry
			if err := json.Unmarshal(raw, &e.Record); err != nil {
				var off struct {
					Offset *int64 `json:"offset"`
				}
				if json.Unmarshal(raw, &off) != nil || off.Offset == nil {
					return KafkaEvent{}, fmt.Errorf("sluice: kafka: record %d of %s is malformed and has no offset to report it by: %w", j, k, err)
				}
				e.Record.Offset = *off.Offset
				e.Err = fmt.Errorf("malformed kafka record: %w", err)
			}
			out = append(out, e)
			parts = append(parts, k)
		}
	}
	return KafkaEvent{out, parts, loose.EventSource, loose.EventSourceArn, loose.Records != nil, false}, nil
}

// kafkaWholeDecoder is the plan decoder of the general path.
var kafkaWholeDecoder = sync.OnceValue(jsonplan.New[kafkaWhole])

type kafkaWhole struct {
	EventSource    string                          `json:"eventSource"`
	EventSourceArn string                          `json:"eventSourceArn"`
	Records        map[string][]events.KafkaRecord `json:"records"`
}

// Partitions returns the topic-partition keys of a Kafka event's records
// map, sorted, and how many records it holds.
func Partitions[R any](records map[string][]R) ([]string, int) {
	keys := make([]string, 0, len(records))
	n := 0
	for k, rs := range records {
		keys = append(keys, k)
		n += len(rs)
	}
	slices.Sort(keys)
	return keys, n
}

// scanKafkaEvent is the fast path of decodeKafkaEvent: a hand-written
// scanner for the shape Lambda sends (known keys, spelled as Lambda spells
// them, each once), which fails (ok false) on anything else so that the
// general decoder settles it. FuzzKafkaDecode keeps the two equal. It scans
// its own copy of the event, so strings without escapes share that copy.
// Each entry's batch item identifier ("<topic-partition>@<offset>") is
// made here too, from an arena.
func scanKafkaEvent(payload []byte) (ev KafkaEvent, ok bool) {
	s := &scanner{b: append([]byte(nil), payload...), own: true}
	a := &Arena{chunk: 4096}
	// Records go into one slice in the order of the document; groups mark
	// each partition's run of it.
	type group struct {
		key      string
		from, to int
	}
	var groups []group
	var recs []KafkaEntry
	if !s.tok('{') {
		return ev, false
	}
	var seen uint8
	if !s.tok('}') {
		for {
			key, ok := s.plainString()
			if !ok || !s.tok(':') {
				return ev, false
			}
			var bit uint8
			switch string(key) {
			case "eventSource":
				bit = 1
			case "eventSourceArn":
				bit = 2
			case "bootstrapServers":
				bit = 4
			case "records":
				bit = 8
			default:
				return ev, false
			}
			if seen&bit != 0 {
				return ev, false
			}
			seen |= bit
			if bit != 8 {
				v, null, ok := s.text(a, "")
				if !ok {
					return ev, false
				}
				if bit == 1 && !null {
					ev.Source = v
				}
				if bit == 2 && !null {
					ev.ARN = v
				}
			} else if !s.null() {
				if !s.tok('{') {
					return ev, false
				}
				ev.Records = true
				if !s.tok('}') {
					for {
						pk, null, ok := s.text(a, "")
						if null || !ok || !s.tok(':') {
							return ev, false
						}
						for _, g := range groups {
							if g.key == pk {
								return ev, false // the last one wins in a map: let the general decoder say
							}
						}
						g := group{key: pk, from: len(recs)}
						if !s.null() {
							if !s.tok('[') {
								return ev, false
							}
							if !s.tok(']') {
								for {
									start := s.i
									recs = append(recs, KafkaEntry{})
									n := len(recs)
									if !s.kafkaRecord(a, &recs[n-1].Record) {
										return ev, false
									}
									if n == 1 && s.i > start {
										// Size the batch from its first record.
										est := (len(s.b)-start)/(s.i-start) + 1
										recs = append(make([]KafkaEntry, 0, est+est/16), recs[0])
									}
									if s.tok(']') {
										break
									}
									if !s.tok(',') {
										return ev, false
									}
								}
							}
						}
						g.to = len(recs)
						groups = append(groups, g)
						if s.tok('}') {
							break
						}
						if !s.tok(',') {
							return ev, false
						}
					}
				}
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return ev, false
			}
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return ev, false
	}
	// Partitions sorted by key, records as delivered (Partitions' order).
	if !slices.IsSortedFunc(groups, func(x, y group) int { return strings.Compare(x.key, y.key) }) {
		slices.SortFunc(groups, func(x, y group) int { return strings.Compare(x.key, y.key) })
		sorted := make([]KafkaEntry, 0, len(recs))
		for _, g := range groups {
			sorted = append(sorted, recs[g.from:g.to]...)
		}
		recs = sorted
	}
	ev.Entries = recs
	ev.Parts = make([]string, 0, len(recs))
	for _, g := range groups {
		for range g.to - g.from {
			e := &recs[len(ev.Parts)]
			ev.Parts = append(ev.Parts, g.key)
			id := a.room(len(g.key) + 21)
			id = strconv.AppendInt(append(append(id, g.key...), '@'), e.Record.Offset, 10)
			e.ID = a.commit(id)
		}
	}
	ev.Scanned = true
	return ev, true
}

// kafkaRecord scans one record.
func (s *scanner) kafkaRecord(a *Arena, r *events.KafkaRecord) bool {
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	var seen uint8
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		var bit uint8
		var str *string
		var num *int64
		switch string(key) {
		case "topic":
			bit, str = 1<<0, &r.Topic
		case "partition":
			bit, num = 1<<1, &r.Partition
		case "offset":
			bit, num = 1<<2, &r.Offset
		case "timestamp":
			bit = 1 << 3
		case "timestampType":
			bit, str = 1<<4, &r.TimestampType
		case "key":
			bit, str = 1<<5, &r.Key
		case "value":
			bit, str = 1<<6, &r.Value
		case "headers":
			bit = 1 << 7
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch {
		case str != nil:
			v, null, ok := s.text(a, "")
			if !ok {
				return false
			}
			if !null {
				*str = v
			}
		case bit == 1<<7:
			if !s.kafkaHeaders(a, r) {
				return false
			}
		default:
			i, ok := s.int64()
			if !ok {
				return false
			}
			if num != nil {
				*num = i
			} else {
				// aws-lambda-go's MilliSecondsEpochTime.
				r.Timestamp = events.MilliSecondsEpochTime{Time: time.Unix(i/1000, (i%1000)*1000000)}
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

// kafkaHeaders scans the headers array: objects of name -> array of signed
// bytes (aws-lambda-go's JSONNumberBytes).
func (s *scanner) kafkaHeaders(a *Arena, r *events.KafkaRecord) bool {
	if s.null() {
		return true
	}
	if !s.tok('[') {
		return false
	}
	r.Headers = []map[string]events.JSONNumberBytes{}
	if s.tok(']') {
		return true
	}
	for {
		if !s.tok('{') {
			return false
		}
		h := map[string]events.JSONNumberBytes{}
		if !s.tok('}') {
			for {
				name, null, ok := s.text(a, "")
				if null || !ok || !s.tok(':') || !s.tok('[') {
					return false
				}
				if _, dup := h[name]; dup {
					return false
				}
				v := events.JSONNumberBytes{}
				if !s.tok(']') {
					for {
						num, ok := s.number()
						if !ok {
							return false
						}
						b, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(num), len(num)), 10, 8)
						if err != nil {
							return false
						}
						v = append(v, byte(b))
						if s.tok(']') {
							break
						}
						if !s.tok(',') {
							return false
						}
					}
				}
				h[name] = v
				if s.tok('}') {
					break
				}
				if !s.tok(',') {
					return false
				}
			}
		}
		r.Headers = append(r.Headers, h)
		if s.tok(']') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}
