package eventscan

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// FirehoseEvent is an Amazon Data Firehose transformation event in
// aws-lambda-go's type, and what that type lacks for a Firehose stream
// whose source is an Amazon MSK cluster.
type FirehoseEvent struct {
	events.KinesisFirehoseEvent
	// SourceMSKArn is the MSK cluster the stream reads ("" for another
	// source).
	SourceMSKArn string
	// MSK holds, for each record that came from MSK (no data, and a
	// kafkaRecordValue, decoded into its Data), the record's metadata; nil
	// entries for the others, and nil when no record came from MSK.
	MSK []*FirehoseMSK
}

// FirehoseMSK is a record's mskRecordMetadata. Firehose writes offset and
// partitionId as strings; a number (any other value) is taken as its JSON
// text, null as "".
type FirehoseMSK struct {
	Offset, PartitionID         string
	ApproximateArrivalTimestamp events.MilliSecondsEpochTime
}

// firehoseRecord is the state of the record being read.
type firehoseRecord struct {
	rec       *events.KinesisFirehoseEventRecord
	data      string // still base64
	kafka     *string
	hasMeta   bool
	metaMS    *int64
	arrivalMS *int64
	msk       *firehoseMSKMeta // mskRecordMetadata; nil when absent or null
}

// firehoseMSKMeta is a record's mskRecordMetadata as read.
type firehoseMSKMeta struct {
	offset, partitionID string
	arrivalMS           *int64
}

// The transformation event, spelled once.
var (
	firehoseTable        *jsonread.Table[firehoseState]
	firehoseRecordTable  *jsonread.Table[firehoseRecord]
	firehoseMetaTable    *jsonread.Table[firehoseRecord]
	firehoseMSKMetaTable *jsonread.Table[firehoseMSKMeta]
	firehoseOnce         sync.Once
)

// firehoseTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func firehoseTables() {
	firehoseOnce.Do(func() {
		firehoseTable = jsonread.NewTable("a Firehose transformation event",
			jsonread.Str("invocationId", func(e *firehoseState) *string { return &e.ev.InvocationID }),
			jsonread.Str("deliveryStreamArn", func(e *firehoseState) *string { return &e.ev.DeliveryStreamArn }),
			jsonread.Str("sourceKinesisStreamArn", func(e *firehoseState) *string { return &e.ev.SourceKinesisStreamArn }),
			jsonread.Str("sourceMSKArn", func(e *firehoseState) *string { return &e.ev.SourceMSKArn }),
			jsonread.Str("region", func(e *firehoseState) *string { return &e.ev.Region }),
			jsonread.Field[firehoseState]{Name: "records", Read: func(r *jsonread.Reader, e *firehoseState) error {
				if null, err := r.Null(); null || err != nil {
					e.recs, e.found = nil, false
					return err
				}
				if r.Peek() == '[' {
					e.found = true
				}
				n := 0
				err := r.Array("an array of Firehose records", func(i int) error {
					if i == len(e.recs) { // a repeated array decodes into the records read, as encoding/json does
						e.recs = append(e.recs, firehoseRecord{rec: &events.KinesisFirehoseEventRecord{}})
					}
					n = i + 1
					if null, err := r.Null(); null || err != nil {
						return err
					}
					return firehoseRecordTable.Read(r, &e.recs[i])
				})
				if e.found {
					e.recs = e.recs[:n]
				}
				return err
			}},
		)
		// Before the record table, which takes it as a value.
		firehoseMSKMetaTable = jsonread.NewTable("a Firehose record's mskRecordMetadata",
			textField("offset", func(m *firehoseMSKMeta) *string { return &m.offset }),
			textField("partitionId", func(m *firehoseMSKMeta) *string { return &m.partitionID }),
			msField("approximateArrivalTimestamp", func(m *firehoseMSKMeta) **int64 { return &m.arrivalMS }),
		)
		firehoseRecordTable = jsonread.NewTable("a Firehose record",
			jsonread.Str("recordId", func(f *firehoseRecord) *string { return &f.rec.RecordID }),
			msField("approximateArrivalTimestamp", func(f *firehoseRecord) **int64 { return &f.arrivalMS }),
			jsonread.Field[firehoseRecord]{Name: "data", Read: func(r *jsonread.Reader, f *firehoseRecord) error {
				if null, err := r.Null(); null || err != nil {
					f.data = "" // null empties aws-lambda-go's []byte
					return err
				}
				return r.StringInto(&f.data)
			}},
			jsonread.Field[firehoseRecord]{Name: "kafkaRecordValue", Read: func(r *jsonread.Reader, f *firehoseRecord) error {
				if null, err := r.Null(); null || err != nil {
					f.kafka = nil
					return err
				}
				var s string
				if err := r.StringInto(&s); err != nil {
					return err
				}
				f.kafka = &s
				return nil
			}},
			jsonread.Field[firehoseRecord]{Name: "kinesisRecordMetadata", Read: func(r *jsonread.Reader, f *firehoseRecord) error {
				if null, err := r.Null(); null || err != nil {
					return err // null leaves aws-lambda-go's struct as it was
				}
				if r.Peek() == '{' {
					f.hasMeta = true
				}
				return firehoseMetaTable.Read(r, f)
			}},
			jsonread.Ptr("mskRecordMetadata", firehoseMSKMetaTable, func(f *firehoseRecord) **firehoseMSKMeta { return &f.msk }),
		)
		firehoseMetaTable = jsonread.NewTable("a Firehose record's kinesisRecordMetadata",
			jsonread.Str("shardId", func(f *firehoseRecord) *string { return &f.rec.KinesisFirehoseRecordMetadata.ShardID }),
			jsonread.Str("partitionKey", func(f *firehoseRecord) *string { return &f.rec.KinesisFirehoseRecordMetadata.PartitionKey }),
			jsonread.Str("sequenceNumber", func(f *firehoseRecord) *string { return &f.rec.KinesisFirehoseRecordMetadata.SequenceNumber }),
			jsonread.Int64("subsequenceNumber", func(f *firehoseRecord) *int64 { return &f.rec.KinesisFirehoseRecordMetadata.SubsequenceNumber }),
			msField("approximateArrivalTimestamp", func(f *firehoseRecord) **int64 { return &f.metaMS }),
		)
	})
}

type firehoseState struct {
	ev    *FirehoseEvent
	recs  []firehoseRecord
	found bool
}

// msField is an *int64 of milliseconds: null makes it nil.
func msField[T any](name string, at func(*T) **int64) jsonread.Field[T] {
	return jsonread.Field[T]{Name: name, Read: func(r *jsonread.Reader, v *T) error {
		p := at(v)
		if null, err := r.Null(); null || err != nil {
			*p = nil
			return err
		}
		var n int64
		if *p != nil {
			n = **p
		}
		if err := r.Int64Into(&n); err != nil {
			return err
		}
		*p = &n
		return nil
	}}
}

// textField is a value taken as text: a string's text, null as "", any
// other value as its JSON text (as it lies in the input).
func textField[T any](name string, at func(*T) *string) jsonread.Field[T] {
	return jsonread.Field[T]{Name: name, Read: func(r *jsonread.Reader, v *T) error {
		p := at(v)
		switch r.Peek() {
		case 'n':
			*p = ""
			_, err := r.Null()
			return err
		case '"':
			return r.StringInto(p)
		}
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		*p = string(raw)
		return nil
	}}
}

// DecodeFirehose decodes an Amazon Data Firehose transformation event
// (handlers.FirehoseHandler), with its records' data base64-decoded, and
// for a record without data (an MSK source's) its kafkaRecordValue
// base64-decoded as its data, its mskRecordMetadata beside it. Every record
// must have a recordId, or there is nothing to answer it by. The result
// shares no memory with payload. FuzzFirehoseEvent (handlers) keeps it
// equal to encoding/json.
func DecodeFirehose(payload []byte) (*FirehoseEvent, error) {
	firehoseTables()
	ev := &FirehoseEvent{}
	st := firehoseState{ev: ev}
	if err := envelope(firehoseTable, payload, &st); err != nil {
		return nil, fmt.Errorf("sluice: firehose: the event is not a Firehose transformation event: %w", err)
	}
	if !st.found {
		return nil, errors.New(`sluice: firehose: the event has no "records" array`)
	}
	ev.Records = make([]events.KinesisFirehoseEventRecord, len(st.recs))
	for i := range st.recs {
		f := &st.recs[i]
		out := &ev.Records[i]
		*out = *f.rec
		if out.RecordID == "" {
			return nil, fmt.Errorf("sluice: firehose: record %d has no recordId, so it cannot be answered", i)
		}
		data, err := base64.StdEncoding.DecodeString(f.data)
		if err != nil {
			return nil, fmt.Errorf("sluice: firehose: record %s: data is not base64: %w", out.RecordID, err)
		}
		if len(data) == 0 && f.kafka != nil {
			// A record of an MSK source: its value is kafkaRecordValue,
			// and its result goes back as one.
			if data, err = base64.StdEncoding.DecodeString(*f.kafka); err != nil {
				return nil, fmt.Errorf("sluice: firehose: record %s: kafkaRecordValue is not base64: %w", out.RecordID, err)
			}
			if ev.MSK == nil {
				ev.MSK = make([]*FirehoseMSK, len(st.recs))
			}
			m := &FirehoseMSK{}
			if k := f.msk; k != nil {
				m.Offset, m.PartitionID, m.ApproximateArrivalTimestamp = k.offset, k.partitionID, msTime(k.arrivalMS)
			}
			ev.MSK[i] = m
		}
		out.Data = data
		out.ApproximateArrivalTimestamp = msTime(f.arrivalMS)
		if f.hasMeta {
			out.KinesisFirehoseRecordMetadata.ApproximateArrivalTimestamp = msTime(f.metaMS)
		} else {
			out.KinesisFirehoseRecordMetadata = events.KinesisFirehoseRecordMetadata{}
		}
	}
	return ev, nil
}

func msTime(ms *int64) events.MilliSecondsEpochTime {
	if ms == nil {
		return events.MilliSecondsEpochTime{}
	}
	return events.MilliSecondsEpochTime{Time: time.UnixMilli(*ms)}
}
