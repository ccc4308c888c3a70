package eventscan

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// firehoseWire is the transformation event as Firehose sends it; the data
// stays base64 until DecodeFirehose decodes it.
type firehoseWire struct {
	InvocationID           string               `json:"invocationId"`
	DeliveryStreamArn      string               `json:"deliveryStreamArn"`
	SourceKinesisStreamArn string               `json:"sourceKinesisStreamArn"`
	SourceMSKArn           string               `json:"sourceMSKArn"`
	Region                 string               `json:"region"`
	Records                []firehoseRecordWire `json:"records"`
}

type firehoseRecordWire struct {
	RecordID                    string `json:"recordId"`
	ApproximateArrivalTimestamp *int64 `json:"approximateArrivalTimestamp"`
	Data                        string `json:"data"`
	KinesisRecordMetadata       *struct {
		ShardID                     string `json:"shardId"`
		PartitionKey                string `json:"partitionKey"`
		SequenceNumber              string `json:"sequenceNumber"`
		SubsequenceNumber           int64  `json:"subsequenceNumber"`
		ApproximateArrivalTimestamp *int64 `json:"approximateArrivalTimestamp"`
	} `json:"kinesisRecordMetadata"`
}

// firehoseMSKWire is what a record of an MSK source has instead of data.
// It is read in a second pass, for an event with a record without data:
// the records of the first pass stay as small as the other sources need
// them.
type firehoseMSKWire struct {
	Records []struct {
		KafkaRecordValue  *string `json:"kafkaRecordValue"`
		MSKRecordMetadata *struct {
			// Firehose writes offset and partitionId as strings; a number
			// is taken as its text.
			Offset                      json.RawMessage `json:"offset"`
			PartitionID                 json.RawMessage `json:"partitionId"`
			ApproximateArrivalTimestamp *int64          `json:"approximateArrivalTimestamp"`
		} `json:"mskRecordMetadata"`
	} `json:"records"`
}

// The plan decoders of the transformation event.
var (
	firehoseDecoder    = sync.OnceValue(jsonplan.New[firehoseWire])
	firehoseMSKDecoder = sync.OnceValue(jsonplan.New[firehoseMSKWire])
)

// Firehose is a decoded transformation event: aws-lambda-go's event, and
// what its type lacks for a Firehose stream whose source is an Amazon MSK
// cluster.
type Firehose struct {
	events.KinesisFirehoseEvent
	// SourceMSKArn is the MSK cluster the stream reads ("" for another
	// source).
	SourceMSKArn string
	// MSK holds, for each record that came from MSK (no data, and a
	// kafkaRecordValue, decoded into its Data), the record's metadata; nil
	// entries for the others, and nil when no record came from MSK.
	MSK []*FirehoseMSK
}

// FirehoseMSK is a record's mskRecordMetadata.
type FirehoseMSK struct {
	Offset, PartitionID         string
	ApproximateArrivalTimestamp events.MilliSecondsEpochTime
}

// DecodeFirehose decodes an Amazon Data Firehose transformation event
// into aws-lambda-go's type (handlers.FirehoseHandler), with its records'
// data base64-decoded, and for a record without data (an MSK source's) its
// kafkaRecordValue base64-decoded as its data. Every record must have a recordId, or
// there is nothing to answer it by. The result shares no memory with
// payload. FuzzFirehoseEvent (handlers) keeps it equal to encoding/json.
func DecodeFirehose(payload []byte) (*Firehose, error) {
	var w firehoseWire
	own := append([]byte(nil), payload...)
	if err := firehoseDecoder().Unmarshal(own, &w, true); err != nil {
		return nil, fmt.Errorf("sluice: firehose: the event is not a Firehose transformation event: %w", err)
	}
	if w.Records == nil {
		return nil, errors.New(`sluice: firehose: the event has no "records" array`)
	}
	var msk *firehoseMSKWire // only for an event with a record without data
	if slices.ContainsFunc(w.Records, func(r firehoseRecordWire) bool { return r.Data == "" }) {
		msk = new(firehoseMSKWire)
		if err := firehoseMSKDecoder().Unmarshal(own, msk, true); err != nil || len(msk.Records) != len(w.Records) {
			return nil, fmt.Errorf("sluice: firehose: the event is not a Firehose transformation event: %v", err)
		}
	}
	ev := &Firehose{KinesisFirehoseEvent: events.KinesisFirehoseEvent{InvocationID: w.InvocationID, DeliveryStreamArn: w.DeliveryStreamArn,
		SourceKinesisStreamArn: w.SourceKinesisStreamArn, Region: w.Region, Records: make([]events.KinesisFirehoseEventRecord, len(w.Records))},
		SourceMSKArn: w.SourceMSKArn}
	for i, r := range w.Records {
		if r.RecordID == "" {
			return nil, fmt.Errorf("sluice: firehose: record %d has no recordId, so it cannot be answered", i)
		}
		field, b64 := "data", r.Data
		if r.Data == "" && msk != nil && msk.Records[i].KafkaRecordValue != nil {
			k := &msk.Records[i]
			field, b64 = "kafkaRecordValue", *k.KafkaRecordValue
			if ev.MSK == nil {
				ev.MSK = make([]*FirehoseMSK, len(w.Records))
			}
			ev.MSK[i] = &FirehoseMSK{}
			if m := k.MSKRecordMetadata; m != nil {
				ev.MSK[i] = &FirehoseMSK{Offset: jsonText(m.Offset), PartitionID: jsonText(m.PartitionID), ApproximateArrivalTimestamp: msTime(m.ApproximateArrivalTimestamp)}
			}
		}
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("sluice: firehose: record %s: %s is not base64: %w", r.RecordID, field, err)
		}
		out := &ev.Records[i]
		out.RecordID, out.Data = r.RecordID, data
		out.ApproximateArrivalTimestamp = msTime(r.ApproximateArrivalTimestamp)
		if m := r.KinesisRecordMetadata; m != nil {
			out.KinesisFirehoseRecordMetadata = events.KinesisFirehoseRecordMetadata{ShardID: m.ShardID, PartitionKey: m.PartitionKey,
				SequenceNumber: m.SequenceNumber, SubsequenceNumber: m.SubsequenceNumber, ApproximateArrivalTimestamp: msTime(m.ApproximateArrivalTimestamp)}
		}
	}
	return ev, nil
}

// jsonText is a JSON string's text, another value's JSON text, or "" for
// null or nothing.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s // a string, or null
	}
	return string(raw)
}

func msTime(ms *int64) events.MilliSecondsEpochTime {
	if ms == nil {
		return events.MilliSecondsEpochTime{}
	}
	return events.MilliSecondsEpochTime{Time: time.UnixMilli(*ms)}
}
