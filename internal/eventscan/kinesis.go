package eventscan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
)

// KinesisEvent is a decoded Kinesis event. Records hold their payload
// base64-decoded; a record whose data is not valid base64 has a non-nil
// entry in DataErrs and fails alone.
type KinesisEvent struct {
	Records  []events.KinesisEventRecord
	DataErrs []error // nil when every record decoded
	// Only holds, per record, 1 + the sub-sequence number its redrive
	// marker (dlq.SubSequenceField) names, 0 for none; nil when no
	// record has one.
	Only []int64
}

// DecodeKinesis decodes a Kinesis event. The result shares no memory with
// payload, which the Lambda runtime reuses for the next invocation. into,
// if not nil, is a slice of length 0 whose elements are zero up to its
// capacity: the records go there when they fit.
//
// A hand-written scanner handles the shape Lambda sends (known keys, string
// and number values, plain ASCII strings) without reflection; anything else
// (unknown or differently cased keys, nulls, escapes in identifiers, invalid
// JSON) falls back to encoding/json, whose result the scanner must equal
// (FuzzKinesisDecode checks it).
func DecodeKinesis(payload []byte, into []events.KinesisEventRecord) (KinesisEvent, error) {
	if ev, ok := scanKinesisEvent(payload, into); ok {
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
func refDecodeKinesisEvent(payload []byte) (KinesisEvent, error) {
	var ref refKinesisEvent
	if err := json.Unmarshal(payload, &ref); err != nil {
		return KinesisEvent{}, fmt.Errorf("sluice: kinesis: the event is not a Kinesis event: %w", err)
	}
	if ref.Records == nil {
		return KinesisEvent{}, nil // no records array: the caller says what it is
	}
	ev := KinesisEvent{Records: make([]events.KinesisEventRecord, len(ref.Records))}
	for i, r := range ref.Records {
		var data []byte
		var err error
		if r.Kinesis.Data != "" {
			data, err = base64.StdEncoding.DecodeString(r.Kinesis.Data)
		}
		if err != nil {
			if ev.DataErrs == nil {
				ev.DataErrs = make([]error, len(ref.Records))
			}
			ev.DataErrs[i] = fmt.Errorf("kinesis data is not valid base64: %w", err)
			data = nil
		}
		if n := r.SubSequenceNumber; n != nil {
			if ev.Only == nil {
				ev.Only = make([]int64, len(ref.Records))
			}
			if *n < 0 || *n >= 1<<31-1 {
				if ev.DataErrs == nil {
					ev.DataErrs = make([]error, len(ref.Records))
				}
				ev.DataErrs[i] = fmt.Errorf("%s %d is not the index of a user record", dlq.SubSequenceField, *n)
			} else {
				ev.Only[i] = *n + 1
			}
		}
		ev.Records[i] = events.KinesisEventRecord{
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

// scanKinesisEvent is the fast path of decodeKinesisEvent; ok is false when
// the input needs the reference decoder.
func scanKinesisEvent(payload []byte, into []events.KinesisEventRecord) (ev KinesisEvent, ok bool) {
	s := &scanner{b: payload}
	a := &Arena{chunk: 4096}
	ev.Records, ok = scanRecords(s, a, into, func(r, prev *events.KinesisEventRecord) bool { return s.record(a, r, prev) })
	return ev, ok
}

// record scans one record object into r. prev, the record before, lends its
// strings when they repeat. A record whose data is not clean base64 makes the
// scan fail, so the reference decoder reports it.
func (s *scanner) record(a *Arena, r *events.KinesisEventRecord, prev *events.KinesisEventRecord) bool {
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

func (s *scanner) kinesisData(a *Arena, k, prev *events.KinesisRecord, eventID *string) bool {
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
