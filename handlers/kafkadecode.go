package handlers

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"
)

// scanKafkaEvent is the fast path of decodeKafkaEvent: a hand-written
// scanner for the shape Lambda sends (known keys, spelled as Lambda spells
// them, each once), which fails (ok false) on anything else so that the
// general decoder settles it. FuzzKafkaDecode keeps the two equal. It scans
// its own copy of the event, so strings without escapes share that copy.
// Each entry's batch item identifier ("<topic-partition>@<offset>") is
// made here too, from an arena.
func scanKafkaEvent(payload []byte) (ev kafkaEvent, ok bool) {
	s := &scanner{b: append([]byte(nil), payload...), own: true}
	a := &arena{chunk: 4096}
	// Records go into one slice in the order of the document; groups mark
	// each partition's run of it.
	type group struct {
		key      string
		from, to int
	}
	var groups []group
	var recs []kafkaEntry
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
					ev.source = v
				}
				if bit == 2 && !null {
					ev.arn = v
				}
			} else if !s.null() {
				if !s.tok('{') {
					return ev, false
				}
				ev.records = true
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
									recs = append(recs, kafkaEntry{})
									n := len(recs)
									if !s.kafkaRecord(a, &recs[n-1].rec) {
										return ev, false
									}
									if n == 1 && s.i > start {
										// Size the batch from its first record.
										est := (len(s.b)-start)/(s.i-start) + 1
										recs = append(make([]kafkaEntry, 0, est+est/16), recs[0])
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
	// Partitions sorted by key, records as delivered (partitionsOf's order).
	if !slices.IsSortedFunc(groups, func(x, y group) int { return strings.Compare(x.key, y.key) }) {
		slices.SortFunc(groups, func(x, y group) int { return strings.Compare(x.key, y.key) })
		sorted := make([]kafkaEntry, 0, len(recs))
		for _, g := range groups {
			sorted = append(sorted, recs[g.from:g.to]...)
		}
		recs = sorted
	}
	ev.entries = recs
	ev.parts = make([]string, 0, len(recs))
	for _, g := range groups {
		for range g.to - g.from {
			e := &recs[len(ev.parts)]
			ev.parts = append(ev.parts, g.key)
			id := a.room(len(g.key) + 21)
			id = strconv.AppendInt(append(append(id, g.key...), '@'), e.rec.Offset, 10)
			e.id = a.commit(id)
		}
	}
	ev.scanned = true
	return ev, true
}

// kafkaRecord scans one record.
func (s *scanner) kafkaRecord(a *arena, r *events.KafkaRecord) bool {
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

// int64 consumes a JSON number that encoding/json decodes into an int64.
func (s *scanner) int64() (int64, bool) {
	num, ok := s.number()
	if !ok {
		return 0, false
	}
	n := unsafe.String(unsafe.SliceData(num), len(num))
	if v, ok := digits(n); ok {
		return v, true // offsets and timestamps: strconv's general path costs more than the rest of the number
	}
	i, err := strconv.ParseInt(n, 10, 64)
	return i, err == nil
}

// kafkaHeaders scans the headers array: objects of name -> array of signed
// bytes (aws-lambda-go's JSONNumberBytes).
func (s *scanner) kafkaHeaders(a *arena, r *events.KafkaRecord) bool {
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
