package fetch

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/invocation"
)

// fromPayload turns an on-failure record that carries its batch (an S3
// destination's object: "payload" is the invocation event) into
// envelopes without reading the stream, so records past the stream's
// retention are recovered too. The event must be of the batch info's
// source, and each record must lie in the range the batch info names: an
// object whose parts disagree is refused, not half trusted.
func fromPayload(rec *sevents.OnFailureRecord) ([]*dlq.Envelope, error) {
	ev, err := invocation.ParseEvent([]byte(rec.Payload))
	if err != nil {
		return nil, fmt.Errorf("%w: its payload is not the batch's Lambda event: %v", ErrNotOnFailure, err)
	}
	if len(ev.Records) == 0 {
		return nil, fmt.Errorf("%w: its payload holds no record", ErrNotOnFailure)
	}
	var (
		source sevents.Source
		arn    string
		info   *sevents.StreamBatchInfo
	)
	switch {
	case rec.KinesisBatchInfo != nil:
		source, info = sevents.SourceKinesis, rec.KinesisBatchInfo
	case rec.DDBStreamInfo != nil:
		source, info = sevents.SourceDynamoDB, rec.DDBStreamInfo
	case rec.KafkaBatchInfo != nil:
		source, arn = sevents.SourceKafka, rec.KafkaBatchInfo.EventSourceARN
	default:
		return nil, ErrNotOnFailure
	}
	if info != nil {
		arn = info.StreamARN
	}
	if ev.Source != source {
		return nil, fmt.Errorf("%w: the batch info is %s but its payload is a %s event", ErrNotOnFailure,
			invocation.SourceName(source), invocation.SourceName(ev.Source))
	}
	b := baseHow(rec, source, arn, "read from the on-failure object's payload by sluice fetch-failed")
	envs := make([]*dlq.Envelope, 0, len(ev.Records))
	for i, r := range ev.Records {
		e := b
		e.Record = r.JSON
		where := fmt.Sprintf("payload record %d (%s)", i+1, r.ID)
		switch source {
		case sevents.SourceKinesis:
			var k events.KinesisEventRecord
			if err := json.Unmarshal(r.JSON, &k); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrNotOnFailure, where, err)
			}
			e.Shard = info.ShardID
			e.RecordID, e.SequenceNumber, e.EventID = r.ID, r.ID, info.ShardID+":"+r.ID
			e.PartitionKey, e.ArrivalTime = k.Kinesis.PartitionKey, k.Kinesis.ApproximateArrivalTimestamp.UTC()
		case sevents.SourceDynamoDB:
			var d events.DynamoDBEventRecord
			if err := json.Unmarshal(r.JSON, &d); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrNotOnFailure, where, err)
			}
			keys, _ := json.Marshal(d.Change.Keys) // map keys come out sorted, as handlers and fetch write them
			e.RecordID, e.SequenceNumber, e.EventID = r.ID, r.ID, d.EventID
			e.PartitionKey, e.ArrivalTime = string(keys), d.Change.ApproximateCreationDateTime.UTC()
		case sevents.SourceKafka:
			topic, n, err := sevents.ParseKafkaPartitionKey(r.Partition)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: records key %q: %v", ErrNotOnFailure, where, r.Partition, err)
			}
			var k struct {
				Timestamp int64 `json:"timestamp"`
			}
			_ = json.Unmarshal(r.JSON, &k) // ParseEvent has read it already
			p, o := n, r.Offset
			e.Topic, e.Partition, e.Offset = topic, &p, &o
			e.RecordID, e.EventID = r.ID, fmt.Sprintf("%s-%d-%d", topic, n, o)
			if k.Timestamp > 0 {
				e.ArrivalTime = time.UnixMilli(k.Timestamp).UTC()
			}
		}
		if err := inBatch(rec, info, r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotOnFailure, where, err)
		}
		envs = append(envs, &e)
	}
	return envs, nil
}

// inBatch checks that a payload record is one the batch info names.
func inBatch(rec *sevents.OnFailureRecord, info *sevents.StreamBatchInfo, r invocation.Record) error {
	if info != nil {
		if compareSequence(r.ID, info.StartSequenceNumber) < 0 || compareSequence(r.ID, info.EndSequenceNumber) > 0 {
			return fmt.Errorf("sequence number %s is outside the batch info's %s..%s", r.ID, info.StartSequenceNumber, info.EndSequenceNumber)
		}
		return nil
	}
	ri, ok := rec.KafkaBatchInfo.RecordsInfo[r.Partition]
	if !ok {
		return fmt.Errorf("partition %s is not in the batch info's recordsInfo", r.Partition)
	}
	first, err1 := strconv.ParseInt(ri.FirstRecordOffset, 10, 64)
	last, err2 := strconv.ParseInt(ri.LastRecordOffset, 10, 64)
	if err1 != nil || err2 != nil || r.Offset < first || r.Offset > last {
		return fmt.Errorf("offset %d is outside the batch info's %q..%q for %s", r.Offset, ri.FirstRecordOffset, ri.LastRecordOffset, r.Partition)
	}
	return nil
}
