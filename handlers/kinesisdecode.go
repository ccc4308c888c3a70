package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/jsonplan"
)

// kinesisEvent is a decoded Kinesis event. Records hold their payload
// base64-decoded; a record whose data is not valid base64 has a non-nil entry
// in dataErrs and fails alone.
type kinesisEvent struct {
	records  []events.KinesisEventRecord
	dataErrs []error
	// only holds, per record, 1 + the sub-sequence number its redrive
	// marker (dlq.SubSequenceField) names, 0 for none; nil when no
	// record has one.
	only []int64
	// After deaggregate, when the event held aggregates: records are the
	// user records, users says where each came from, parents are the
	// records as Lambda sent them.
	users   []kinesisUser
	parents []events.KinesisEventRecord
}

// decodeKinesisEvent decodes a Kinesis event. The result shares no memory
// with payload, which the Lambda runtime reuses for the next invocation.
//
// A hand-written scanner handles the shape Lambda sends (known keys, string
// and number values, plain ASCII strings) without reflection; anything else
// (unknown or differently cased keys, nulls, escapes in identifiers, invalid
// JSON) falls back to encoding/json, whose result the scanner must equal
// (FuzzKinesisDecode checks it).
func decodeKinesisEvent(payload []byte) (kinesisEvent, error) {
	if ev, ok := scanKinesisEvent(payload); ok {
		return ev, nil
	}
	return refDecodeKinesisEvent(payload)
}

type refKinesisEvent struct {
	Records []refKinesisRecord `json:"Records"`
}

type refKinesisRecord struct {
	AwsRegion         string         `json:"awsRegion"`
	EventID           string         `json:"eventID"`
	EventName         string         `json:"eventName"`
	EventSource       string         `json:"eventSource"`
	EventSourceArn    string         `json:"eventSourceARN"`
	EventVersion      string         `json:"eventVersion"`
	InvokeIdentityArn string         `json:"invokeIdentityArn"`
	Kinesis           refKinesisData `json:"kinesis"`
	// SubSequenceNumber is the redrive marker (dlq.SubSequenceField).
	SubSequenceNumber *int64 `json:"sluiceSubSequenceNumber"`
}

type refKinesisData struct {
	ApproximateArrivalTimestamp epochSeconds `json:"approximateArrivalTimestamp"`
	Data                        string       `json:"data"`
	EncryptionType              string       `json:"encryptionType"`
	PartitionKey                string       `json:"partitionKey"`
	SequenceNumber              string       `json:"sequenceNumber"`
	KinesisSchemaVersion        string       `json:"kinesisSchemaVersion"`
}

// refDecodeKinesisEvent is the reference decoder: encoding/json, with the
// base64 data decoded per record so one bad record does not fail the batch.
func refDecodeKinesisEvent(payload []byte) (kinesisEvent, error) {
	var ref refKinesisEvent
	if err := json.Unmarshal(payload, &ref); err != nil {
		return kinesisEvent{}, fmt.Errorf("sluice: kinesis: the event is not a Kinesis event: %w", err)
	}
	if ref.Records == nil {
		return kinesisEvent{}, nil // no records array: the caller says what it is
	}
	ev := kinesisEvent{records: make([]events.KinesisEventRecord, len(ref.Records))}
	for i, r := range ref.Records {
		var data []byte
		var err error
		if r.Kinesis.Data != "" {
			data, err = base64.StdEncoding.DecodeString(r.Kinesis.Data)
		}
		if err != nil {
			if ev.dataErrs == nil {
				ev.dataErrs = make([]error, len(ref.Records))
			}
			ev.dataErrs[i] = fmt.Errorf("kinesis data is not valid base64: %w", err)
			data = nil
		}
		if n := r.SubSequenceNumber; n != nil {
			if ev.only == nil {
				ev.only = make([]int64, len(ref.Records))
			}
			if *n < 0 || *n >= 1<<31-1 {
				if ev.dataErrs == nil {
					ev.dataErrs = make([]error, len(ref.Records))
				}
				ev.dataErrs[i] = fmt.Errorf("%s %d is not the index of a user record", dlq.SubSequenceField, *n)
			} else {
				ev.only[i] = *n + 1
			}
		}
		ev.records[i] = events.KinesisEventRecord{
			AwsRegion:         r.AwsRegion,
			EventID:           r.EventID,
			EventName:         r.EventName,
			EventSource:       r.EventSource,
			EventSourceArn:    r.EventSourceArn,
			EventVersion:      r.EventVersion,
			InvokeIdentityArn: r.InvokeIdentityArn,
			Kinesis: events.KinesisRecord{
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: r.Kinesis.ApproximateArrivalTimestamp.Time},
				Data:                        data,
				EncryptionType:              r.Kinesis.EncryptionType,
				PartitionKey:                r.Kinesis.PartitionKey,
				SequenceNumber:              r.Kinesis.SequenceNumber,
				KinesisSchemaVersion:        r.Kinesis.KinesisSchemaVersion,
			},
		}
	}
	return ev, nil
}

// arena hands out byte slices and strings from large chunks, so a batch of
// records costs a few allocations rather than several per record. Memory is
// never reused: strings made from it stay valid. chunk is the size of the
// next chunk; a chunk that runs out is not copied, a new one is started.
type arena struct {
	buf   []byte
	chunk int
	// most, if not 0, caps chunk: chunks of at most 32 KiB are small
	// objects to the Go allocator, reused without new pages.
	most int
}

// grow starts a new chunk with room for at least n bytes.
func (a *arena) grow(n int) {
	c := max(a.chunk, 64<<10)
	if a.most > 0 {
		c = min(c, a.most)
		a.chunk = min(a.chunk, a.most)
	}
	floor := 4096
	if a.most > 0 {
		floor = min(floor, a.most)
	}
	a.buf = make([]byte, 0, max(n, a.chunk, floor))
	a.chunk = c
}

// move starts a new chunk with room for text, which is being written at
// the start of the free space, and n bytes more, and copies text there;
// it returns the new free space, text at its start.
func (a *arena) move(text []byte, n int) []byte {
	a.grow(len(text) + n)
	out := a.buf[:cap(a.buf)]
	copy(out, text)
	return out
}

func (a *arena) alloc(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.grow(n)
	}
	l := len(a.buf)
	a.buf = a.buf[:l+n]
	return a.buf[l : l+n : l+n]
}

// room returns an empty slice over the arena's free space, at least n bytes
// of it, for appending a string of unknown length; commit takes it.
func (a *arena) room(n int) []byte {
	if a == nil {
		return make([]byte, 0, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.grow(n)
	}
	return a.buf[len(a.buf):len(a.buf)]
}

// commit returns b, appended to the slice room returned, as a string. If
// the appends stayed within the arena, the arena keeps the bytes; if they
// outgrew it, b is a slice of its own, used as it is.
func (a *arena) commit(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if a == nil {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	l := len(a.buf)
	if cap(a.buf)-l >= len(b) && unsafe.SliceData(a.buf[l:cap(a.buf)]) == unsafe.SliceData(b) {
		a.buf = a.buf[:l+len(b)]
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if a == nil {
		return string(b)
	}
	d := a.alloc(len(b))
	copy(d, b)
	return unsafe.String(unsafe.SliceData(d), len(d))
}

// intern returns prev when b spells it, else a copy of b. Most envelope
// fields repeat on every record of a batch.
func (a *arena) intern(prev string, b []byte) string {
	if string(b) == prev {
		return prev
	}
	return a.str(b)
}

type scanner struct {
	b []byte
	i int
	// own says that b is the decoder's own copy of the event, never
	// modified or reused: strings that need no unescaping may share it.
	own bool
	// sqsOrder is the key order of the SQS message before, ids plus one
	// (0: none), which the next message most likely repeats.
	sqsOrder [10]int8
	// sqsSame holds, for the SQS keys that repeat from message to message
	// (ids 4 to 7), the last value read without escapes, in quotes, and
	// sqsSameVal the value.
	sqsSame    [4]jsonplan.Lit
	sqsSameVal [4]string
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// tok consumes c after white space.
func (s *scanner) tok(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// rawString consumes a string and returns its bytes between the quotes. ok
// is false if there is no well-formed string here.
func (s *scanner) rawString() (raw []byte, ok bool) {
	if !s.tok('"') {
		return nil, false
	}
	start := s.i
	j := start
	for {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			return nil, false
		}
		end := j + k
		n := 0
		for p := end - 1; p >= start && s.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			s.i = end + 1
			return s.b[start:end], true
		}
		j = end + 1
	}
}

// plainString consumes a string that needs no unescaping or UTF-8 repair:
// printable ASCII without backslashes. One pass finds its end: the first
// byte that is not plain must be the closing quote.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.tok('"') {
		return nil, false
	}
	start := s.i
	j := jsonplan.NextSpecial(s.b, start)
	if j >= len(s.b) || s.b[j] != '"' {
		return nil, false
	}
	s.i = j + 1
	return s.b[start:j], true
}

// plainAs is plainString for a value that most likely spells prev (the same
// field of the record before): when the input spells prev and a quote
// follows, the scan for the end is skipped (prev is plain, or it would not
// have been read here).
func (s *scanner) plainAs(prev string) ([]byte, bool) {
	if e := s.i + 1 + len(prev); prev != "" && e < len(s.b) && s.b[s.i] == '"' && s.b[e] == '"' && string(s.b[s.i+1:e]) == prev {
		start := s.i + 1
		s.i = e + 1
		return s.b[start:e], true
	}
	return s.plainString()
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	end, ok := jsonplan.NumberEnd(s.b, s.i)
	if !ok {
		return nil, false
	}
	num := s.b[s.i:end]
	s.i = end
	return num, true
}

// secondsEpoch converts a JSON number of epoch seconds, such as
// 1545084650.987, to a time. Plain decimals convert exactly (to the
// nanosecond); other forms go through float64, as aws-lambda-go's
// SecondsEpochTime does for all.
func secondsEpoch(num []byte) (time.Time, bool) {
	i, neg := 0, false
	if len(num) > 0 && num[0] == '-' {
		i, neg = 1, true
	}
	var sec, nsec int64
	digits := 0
	for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
		sec = sec*10 + int64(num[i]-'0')
		digits++
	}
	exact := digits > 0 && digits <= 18
	if exact && i < len(num) && num[i] == '.' {
		i++
		scale := int64(1e8)
		for ; i < len(num) && num[i] >= '0' && num[i] <= '9'; i++ {
			nsec += int64(num[i]-'0') * scale
			scale /= 10
		}
	}
	if exact && i == len(num) {
		if neg {
			sec, nsec = -sec, -nsec
		}
		return time.Unix(sec, nsec), true
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
	if err != nil {
		return time.Time{}, false
	}
	s := int64(f)
	return time.Unix(s, int64((f-float64(s))*1e9)), true
}

// epochSeconds is the reference decoder's arrival timestamp: a JSON number
// converted by secondsEpoch; null leaves it zero.
type epochSeconds struct{ time.Time }

func (e *epochSeconds) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	t, ok := secondsEpoch(b)
	if !ok {
		return fmt.Errorf("approximateArrivalTimestamp %s is not a number of seconds", b)
	}
	e.Time = t
	return nil
}

// kinesisRecords keeps the slice of one Kinesis invocation's records for
// the next (KinesisHandler.Invoke puts it back).
var kinesisRecords slicePool[events.KinesisEventRecord]

// scanKinesisEvent is the fast path of decodeKinesisEvent; ok is false when
// the input needs the reference decoder.
func scanKinesisEvent(payload []byte) (ev kinesisEvent, ok bool) {
	s := &scanner{b: payload}
	a := &arena{chunk: 4096}
	ev.records, ok = scanRecords(s, a, kinesisRecords.get(), func(r, prev *events.KinesisEventRecord) bool { return s.record(a, r, prev) })
	return ev, ok
}

// scanRecords scans an event that is one object whose only key, "Records",
// holds an array, into a slice of E: rec scans one element into r, and
// prev, the element before (nil for the first), lends its strings when they
// repeat. The slice is sized from the first record and the arena from the
// second: the records of one source are alike, a few percent over beats
// copying 10,000 records to grow, and the second record shows what a record
// costs once repeated fields are interned. ok is false for any other shape.
func scanRecords[E any](s *scanner, a *arena, into []E, rec func(r, prev *E) bool) (recs []E, ok bool) {
	if !s.tok('{') {
		return nil, false
	}
	seen := false
	if !s.tok('}') {
		for {
			key, ok := s.plainString()
			if !ok || string(key) != "Records" || seen || !s.tok(':') || !s.tok('[') {
				return nil, false
			}
			seen = true
			if recs = into[:0]; recs == nil {
				recs = make([]E, 0, 1)
			}
			if !s.tok(']') {
				for {
					start, used := s.i, len(a.buf)
					if len(recs) < cap(recs) {
						recs = recs[:len(recs)+1] // zero: new, or cleared by slices.put
					} else {
						var zero E
						recs = append(recs, zero)
					}
					n := len(recs)
					var prev *E
					if n > 1 {
						prev = &recs[n-2]
					}
					if !rec(&recs[n-1], prev) {
						return nil, false
					}
					if n <= 2 && s.i > start {
						est := (len(s.b)-start)/(s.i-start) + n
						est += est / 16
						if n == 1 && cap(recs) < est {
							grown := make([]E, 1, est)
							grown[0] = recs[0]
							recs = grown
						} else if used <= len(a.buf) {
							a.chunk = est * (len(a.buf) - used + 8)
						}
					}
					if s.tok(']') {
						break
					}
					if !s.tok(',') {
						return nil, false
					}
				}
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return nil, false
			}
		}
	}
	s.ws()
	if s.i != len(s.b) || !seen {
		return nil, false
	}
	return recs, true
}

// record scans one record object into r. prev, the record before, lends its
// strings when they repeat. A record whose data is not clean base64 makes the
// scan fail, so the reference decoder reports it.
func (s *scanner) record(a *arena, r *events.KinesisEventRecord, prev *events.KinesisEventRecord) bool {
	if prev == nil {
		prev = &events.KinesisEventRecord{}
	}
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		if string(key) == "kinesis" {
			if !s.kinesisData(a, &r.Kinesis, &prev.Kinesis, &r.EventID) {
				return false
			}
		} else {
			var dst, was *string
			switch string(key) {
			case "awsRegion":
				dst, was = &r.AwsRegion, &prev.AwsRegion
			case "eventID":
				dst = &r.EventID
			case "eventName":
				dst, was = &r.EventName, &prev.EventName
			case "eventSource":
				dst, was = &r.EventSource, &prev.EventSource
			case "eventSourceARN":
				dst, was = &r.EventSourceArn, &prev.EventSourceArn
			case "eventVersion":
				dst, was = &r.EventVersion, &prev.EventVersion
			case "invokeIdentityArn":
				dst, was = &r.InvokeIdentityArn, &prev.InvokeIdentityArn
			default:
				return false
			}
			if was == nil {
				v, ok := s.plainString()
				if !ok {
					return false
				}
				*dst = a.str(v)
			} else {
				v, ok := s.plainAs(*was)
				if !ok {
					return false
				}
				*dst = a.intern(*was, v)
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

func (s *scanner) kinesisData(a *arena, k, prev *events.KinesisRecord, eventID *string) bool {
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok || !s.tok(':') {
			return false
		}
		switch string(key) {
		case "approximateArrivalTimestamp":
			num, ok := s.number()
			if !ok {
				return false
			}
			t, ok := secondsEpoch(num)
			if !ok {
				return false
			}
			k.ApproximateArrivalTimestamp.Time = t
		case "data":
			raw, ok := s.rawString()
			if !ok {
				return false
			}
			dst := a.alloc(base64.StdEncoding.DecodedLen(len(raw)))
			n, ok := decodeStdBase64(dst, raw)
			if !ok {
				// An escape, a stray byte or a line break: the reference
				// decoder settles what it means.
				return false
			}
			k.Data = nil
			if n > 0 {
				k.Data = dst[:n:n]
			}
		case "sequenceNumber":
			v, ok := s.plainString()
			if !ok {
				return false
			}
			// The event id is "<shard>:<sequence number>": share its bytes.
			if id := *eventID; len(id) > len(v) && id[len(id)-len(v)-1] == ':' && id[len(id)-len(v):] == string(v) {
				k.SequenceNumber = id[len(id)-len(v):]
			} else {
				k.SequenceNumber = a.str(v)
			}
		default:
			var dst, was *string
			switch string(key) {
			case "encryptionType":
				dst, was = &k.EncryptionType, &prev.EncryptionType
			case "partitionKey":
				dst, was = &k.PartitionKey, &prev.PartitionKey
			case "kinesisSchemaVersion":
				dst, was = &k.KinesisSchemaVersion, &prev.KinesisSchemaVersion
			default:
				return false
			}
			v, ok := s.plainAs(*was)
			if !ok {
				return false
			}
			*dst = a.intern(*was, v)
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}
