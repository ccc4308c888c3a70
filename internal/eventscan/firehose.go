package eventscan

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// firehoseWire is the transformation event as Firehose sends it; the data
// stays base64 until DecodeFirehose decodes it.
type firehoseWire struct {
	InvocationID           string `json:"invocationId"`
	DeliveryStreamArn      string `json:"deliveryStreamArn"`
	SourceKinesisStreamArn string `json:"sourceKinesisStreamArn"`
	Region                 string `json:"region"`
	Records                []struct {
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
	} `json:"records"`
}

// firehoseDecoder is the plan decoder of the transformation event.
var firehoseDecoder = sync.OnceValue(jsonplan.New[firehoseWire])

// DecodeFirehose decodes an Amazon Data Firehose transformation event
// into aws-lambda-go's type (handlers.FirehoseHandler), with its records'
// data base64-decoded. Every record must have a recordId, or there is
// nothing to answer it by. The result shares no memory with payload.
// FuzzFirehoseEvent (handlers) keeps it equal to encoding/json.
func DecodeFirehose(payload []byte) (*events.KinesisFirehoseEvent, error) {
	var w firehoseWire
	if err := firehoseDecoder().Unmarshal(append([]byte(nil), payload...), &w, true); err != nil {
		return nil, fmt.Errorf("sluice: firehose: the event is not a Firehose transformation event: %w", err)
	}
	if w.Records == nil {
		return nil, errors.New(`sluice: firehose: the event has no "records" array`)
	}
	ev := &events.KinesisFirehoseEvent{InvocationID: w.InvocationID, DeliveryStreamArn: w.DeliveryStreamArn,
		SourceKinesisStreamArn: w.SourceKinesisStreamArn, Region: w.Region, Records: make([]events.KinesisFirehoseEventRecord, len(w.Records))}
	for i, r := range w.Records {
		if r.RecordID == "" {
			return nil, fmt.Errorf("sluice: firehose: record %d has no recordId, so it cannot be answered", i)
		}
		data, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			return nil, fmt.Errorf("sluice: firehose: record %s: data is not base64: %w", r.RecordID, err)
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

func msTime(ms *int64) events.MilliSecondsEpochTime {
	if ms == nil {
		return events.MilliSecondsEpochTime{}
	}
	return events.MilliSecondsEpochTime{Time: time.UnixMilli(*ms)}
}
