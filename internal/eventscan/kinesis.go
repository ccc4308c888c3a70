package eventscan

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/jsonread"
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

// kinesisRecord is the state of the event being read: the record at hand
// (rec, index i), and what is kept beside the records until the end (nil
// while no record has one): each record's base64 error and redrive
// marker.
type kinesisRecord struct {
	rec      *events.KinesisEventRecord
	i        int
	data     Bytes // the records' data
	dataErrs []error
	subs     []*int64
}

// The Kinesis record, spelled once: every member Lambda writes, by
// aws-lambda-go's names; any other is skipped.
var (
	kinesisRecordTable *jsonread.Table[kinesisRecord]
	kinesisDataTable   *jsonread.Table[kinesisRecord]
	kinesisOnce        sync.Once
)

// kinesisTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func kinesisTables() {
	kinesisOnce.Do(func() {
		kinesisRecordTable = jsonread.NewTable("a Kinesis record",
			kStr("awsRegion", func(r *events.KinesisEventRecord) *string { return &r.AwsRegion }),
			kStr("eventID", func(r *events.KinesisEventRecord) *string { return &r.EventID }),
			kStr("eventName", func(r *events.KinesisEventRecord) *string { return &r.EventName }),
			kStr("eventSource", func(r *events.KinesisEventRecord) *string { return &r.EventSource }),
			kStr("eventSourceARN", func(r *events.KinesisEventRecord) *string { return &r.EventSourceArn }),
			kStr("eventVersion", func(r *events.KinesisEventRecord) *string { return &r.EventVersion }),
			kStr("invokeIdentityArn", func(r *events.KinesisEventRecord) *string { return &r.InvokeIdentityArn }),
			jsonread.Field[kinesisRecord]{Name: "kinesis", Read: func(r *jsonread.Reader, k *kinesisRecord) error {
				if null, err := r.Null(); null || err != nil {
					return err
				}
				return kinesisDataTable.Read(r, k)
			}},
			// The redrive marker (dlq.SubSequenceField).
			jsonread.Field[kinesisRecord]{Name: dlq.SubSequenceField, Read: func(r *jsonread.Reader, k *kinesisRecord) error {
				if null, err := r.Null(); null || err != nil {
					if k.subs != nil && k.i < len(k.subs) {
						k.subs[k.i] = nil
					}
					return err
				}
				var n int64
				if err := r.Int64Into(&n); err != nil {
					return err
				}
				k.subs = growTo(k.subs, k.i)
				k.subs[k.i] = &n
				return nil
			}},
		)
		kinesisDataTable = jsonread.NewTable("a Kinesis record's kinesis object",
			jsonread.Field[kinesisRecord]{Name: "approximateArrivalTimestamp", Read: func(r *jsonread.Reader, k *kinesisRecord) error {
				if null, err := r.Null(); null || err != nil {
					return err
				}
				num, ok, err := r.Number()
				if !ok || err != nil {
					return err
				}
				t, ok := secondsEpoch(num)
				if !ok {
					r.Fail("approximateArrivalTimestamp %s is not a number of seconds", num)
					return nil
				}
				k.rec.Kinesis.ApproximateArrivalTimestamp.Time = t
				return nil
			}},
			jsonread.Field[kinesisRecord]{Name: "data", Read: readData},
			kdStr("encryptionType", func(r *events.KinesisRecord) *string { return &r.EncryptionType }),
			kdStr("partitionKey", func(r *events.KinesisRecord) *string { return &r.PartitionKey }),
			kdStr("sequenceNumber", func(r *events.KinesisRecord) *string { return &r.SequenceNumber }),
			kdStr("kinesisSchemaVersion", func(r *events.KinesisRecord) *string { return &r.KinesisSchemaVersion }),
		)
	})
}

func kStr(name string, at func(*events.KinesisEventRecord) *string) jsonread.Field[kinesisRecord] {
	return jsonread.Field[kinesisRecord]{Name: name, Read: func(r *jsonread.Reader, k *kinesisRecord) error { return r.StringInto(at(k.rec)) }}
}

func kdStr(name string, at func(*events.KinesisRecord) *string) jsonread.Field[kinesisRecord] {
	return jsonread.Field[kinesisRecord]{Name: name, Read: func(r *jsonread.Reader, k *kinesisRecord) error { return r.StringInto(at(&k.rec.Kinesis)) }}
}

// readData decodes the base64 data into memory of the record's own; data
// that does not decode is the record's error, not the event's.
func readData(r *jsonread.Reader, k *kinesisRecord) error {
	text, null, ok, err := r.StringView()
	if err != nil || !ok {
		return err
	}
	d := &k.rec.Kinesis
	d.Data = nil
	if k.dataErrs != nil && k.i < len(k.dataErrs) {
		k.dataErrs[k.i] = nil
	}
	if null || len(text) == 0 {
		return nil
	}
	dst := k.data.Alloc(base64.StdEncoding.DecodedLen(len(text)))
	n, derr := base64.StdEncoding.Decode(dst, text)
	if derr != nil {
		k.dataErrs = growTo(k.dataErrs, k.i)
		k.dataErrs[k.i] = fmt.Errorf("kinesis data is not valid base64: %w", derr)
		return nil
	}
	if n > 0 {
		d.Data = dst[:n:n]
	}
	return nil
}

// DecodeKinesis decodes a Kinesis event. The result shares no memory with
// payload, which the Lambda runtime reuses for the next invocation: its
// strings are cut from one copy of the event, its data from chunks of its
// own. into, if not nil, is a slice of length 0 whose elements are zero up
// to its capacity: the records go there when they fit.
//
// Members Lambda may add are skipped. A value of the wrong type fails the
// event, as encoding/json's would (FuzzKinesisDecode keeps the two equal).
func DecodeKinesis(payload []byte, into []events.KinesisEventRecord) (KinesisEvent, error) {
	kinesisTables()
	r := jsonread.Shared(payload)
	var k kinesisRecord
	recs, err := readRecords(r, "Records", into, func(rec *events.KinesisEventRecord, i int) error {
		k.rec, k.i = rec, i
		return kinesisRecordTable.Read(r, &k)
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return KinesisEvent{}, fmt.Errorf("sluice: kinesis: the event is not a Kinesis event: %w", jsonread.SyntaxErr(payload, err))
	}
	if err := r.Saved(); err != nil {
		return KinesisEvent{}, fmt.Errorf("sluice: kinesis: the event is not a Kinesis event: %w", err)
	}
	ev := KinesisEvent{Records: recs}
	if k.dataErrs != nil {
		ev.DataErrs = fit(k.dataErrs, len(recs))
	}
	for i, n := range k.subs {
		if n == nil || i >= len(recs) {
			continue
		}
		ev.Only = fit(ev.Only, len(recs))
		if *n < 0 || *n >= 1<<31-1 {
			ev.DataErrs = fit(ev.DataErrs, len(recs))
			ev.DataErrs[i] = fmt.Errorf("%s %d is not the index of a user record", dlq.SubSequenceField, *n)
		} else {
			ev.Only[i] = *n + 1
		}
	}
	if ev.DataErrs != nil && !slices.ContainsFunc(ev.DataErrs, func(err error) bool { return err != nil }) {
		ev.DataErrs = nil
	}
	return ev, nil
}

// fit returns s with length n, grown with zero elements or cut.
func fit[E any](s []E, n int) []E {
	if n <= len(s) {
		return s[:n]
	}
	return growTo(s, n-1)
}

// growTo returns s with index i in range.
func growTo[E any](s []E, i int) []E {
	if i < len(s) {
		return s
	}
	return append(s, make([]E, i+1-len(s))...)
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
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return time.Time{}, false
	}
	s := int64(f)
	return time.Unix(s, int64((f-float64(s))*1e9)), true
}
