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
// aws-lambda-go's type, and what that type lacks: each record's
// kafkaRecordValue (an Amazon MSK source's record value), base64-decoded,
// nil when absent.
type FirehoseEvent struct {
	events.KinesisFirehoseEvent
	KafkaRecordValues [][]byte
}

// firehoseRecord is the state of the record being read.
type firehoseRecord struct {
	rec       *events.KinesisFirehoseEventRecord
	data      string // still base64
	kafka     *string
	hasMeta   bool
	metaMS    *int64
	arrivalMS *int64
}

// The transformation event, spelled once.
var (
	firehoseTable       *jsonread.Table[firehoseState]
	firehoseRecordTable *jsonread.Table[firehoseRecord]
	firehoseMetaTable   *jsonread.Table[firehoseRecord]
	firehoseOnce        sync.Once
)

// firehoseTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func firehoseTables() {
	firehoseOnce.Do(func() {
		firehoseTable = jsonread.NewTable("a Firehose transformation event",
			jsonread.Str("invocationId", func(e *firehoseState) *string { return &e.ev.InvocationID }),
			jsonread.Str("deliveryStreamArn", func(e *firehoseState) *string { return &e.ev.DeliveryStreamArn }),
			jsonread.Str("sourceKinesisStreamArn", func(e *firehoseState) *string { return &e.ev.SourceKinesisStreamArn }),
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
		firehoseRecordTable = jsonread.NewTable("a Firehose record",
			jsonread.Str("recordId", func(f *firehoseRecord) *string { return &f.rec.RecordID }),
			msField("approximateArrivalTimestamp", func(f *firehoseRecord) **int64 { return &f.arrivalMS }),
			jsonread.Str("data", func(f *firehoseRecord) *string { return &f.data }),
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
					f.hasMeta, f.metaMS = false, nil
					f.rec.KinesisFirehoseRecordMetadata = events.KinesisFirehoseRecordMetadata{}
					return err
				}
				if r.Peek() == '{' {
					f.hasMeta = true
				}
				return firehoseMetaTable.Read(r, f)
			}},
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
func msField(name string, at func(*firehoseRecord) **int64) jsonread.Field[firehoseRecord] {
	return jsonread.Field[firehoseRecord]{Name: name, Read: func(r *jsonread.Reader, f *firehoseRecord) error {
		p := at(f)
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

// DecodeFirehose decodes an Amazon Data Firehose transformation event
// (handlers.FirehoseHandler), with its records' data base64-decoded. Every
// record must have a recordId, or there is nothing to answer it by. The
// result shares no memory with payload.
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
		out.Data = data
		out.ApproximateArrivalTimestamp = msTime(f.arrivalMS)
		if f.hasMeta {
			out.KinesisFirehoseRecordMetadata.ApproximateArrivalTimestamp = msTime(f.metaMS)
		} else {
			out.KinesisFirehoseRecordMetadata = events.KinesisFirehoseRecordMetadata{}
		}
		if f.kafka != nil {
			v, err := base64.StdEncoding.DecodeString(*f.kafka)
			if err != nil {
				return nil, fmt.Errorf("sluice: firehose: record %s: kafkaRecordValue is not base64: %w", out.RecordID, err)
			}
			if ev.KafkaRecordValues == nil {
				ev.KafkaRecordValues = make([][]byte, len(st.recs))
			}
			ev.KafkaRecordValues[i] = v
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
