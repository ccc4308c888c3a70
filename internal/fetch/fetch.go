package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/source"
)

// ErrTrimmed is wrapped by the error for records that are no longer in the
// stream: older than its retention period (24 hours for DynamoDB Streams,
// 24 hours to 365 days for Kinesis, the topic's retention for Kafka).
var ErrTrimmed = errors.New("the records are past the stream's retention and cannot be fetched")

// ErrNotOnFailure is wrapped by the error for a message that is not a
// Lambda on-failure record of a stream or Kafka mapping.
var ErrNotOnFailure = errors.New("not a Lambda on-failure record with KinesisBatchInfo, DDBStreamBatchInfo or KafkaBatchInfo")

// ReasonOnFailure is the Reason of the envelopes Fetcher writes.
const ReasonOnFailure = "on-failure"

// KinesisAPI is the part of the Kinesis client Fetcher uses.
type KinesisAPI interface {
	GetShardIterator(context.Context, *kinesis.GetShardIteratorInput, ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(context.Context, *kinesis.GetRecordsInput, ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
}

// DynamoDBStreamsAPI is the part of the DynamoDB Streams client Fetcher
// uses.
type DynamoDBStreamsAPI interface {
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// KafkaReader reads the records of one topic-partition from offset first
// to offset last, both included, from the cluster at seeds. The records
// come in offset order; a first record after first means the ones before
// it are gone.
type KafkaReader func(ctx context.Context, seeds []string, topic string, partition int32, first, last int64) ([]KafkaRecord, error)

// KafkaRecord is one record a KafkaReader read.
type KafkaRecord struct {
	Offset    int64
	Timestamp time.Time
	// JSON is the record as a Lambda Kafka event holds it.
	JSON json.RawMessage
}

// Options configure a Fetcher. Each client is looked up per region (the
// region of the stream's ARN); a nil function means that source cannot be
// fetched.
type Options struct {
	Kinesis         func(region string) KinesisAPI
	DynamoDBStreams func(region string) DynamoDBStreamsAPI
	Kafka           KafkaReader
	// KafkaSeeds, if set, are the brokers to read Kafka records from
	// instead of the batch info's bootstrapServers.
	KafkaSeeds []string
	// EmptyPages is how many empty GetRecords pages in a row end a read
	// that has not reached the end sequence number (default 5).
	EmptyPages int
}

// Fetcher reads back the records on-failure records name.
type Fetcher struct{ opts Options }

// New returns a Fetcher.
func New(opts Options) *Fetcher {
	if opts.EmptyPages <= 0 {
		opts.EmptyPages = 5
	}
	return &Fetcher{opts: opts}
}

// Parse reads one on-failure record and checks that it names a batch.
func Parse(body []byte) (*sevents.OnFailureRecord, error) {
	var rec sevents.OnFailureRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOnFailure, err)
	}
	n := 0
	for _, set := range []bool{rec.KinesisBatchInfo != nil, rec.DDBStreamInfo != nil, rec.KafkaBatchInfo != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, ErrNotOnFailure
	case n > 1:
		return nil, fmt.Errorf("%w: it has more than one batch info", ErrNotOnFailure)
	}
	return &rec, nil
}

// Fetch reads back the records rec names and returns their envelopes, in
// the stream's order. A record that carries its batch as "payload" (what
// Lambda writes to an S3 on-failure destination) is read from there, not
// from the stream: it needs no client and works past the stream's
// retention.
func (f *Fetcher) Fetch(ctx context.Context, rec *sevents.OnFailureRecord) ([]*dlq.Envelope, error) {
	if rec.Payload != "" {
		// An S3 destination's object holds the batch itself.
		return fromPayload(rec)
	}
	switch {
	case rec.KinesisBatchInfo != nil:
		return f.kinesis(ctx, rec)
	case rec.DDBStreamInfo != nil:
		return f.dynamoDB(ctx, rec)
	case rec.KafkaBatchInfo != nil:
		return f.kafka(ctx, rec)
	}
	return nil, ErrNotOnFailure
}

// base is the envelope fields an on-failure record gives every record of
// its batch.
func base(rec *sevents.OnFailureRecord, source sevents.Source, arn string) dlq.Envelope {
	return baseHow(rec, source, arn, "fetched back by sluice fetch-failed")
}

// baseHow is base, saying how the record was recovered.
func baseHow(rec *sevents.OnFailureRecord, source sevents.Source, arn, how string) dlq.Envelope {
	at, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
	rc := rec.RequestContext
	why := fmt.Sprintf("Lambda gave up on the batch (%s) after %d invocation(s)", rc.Condition, rc.ApproximateInvokeCount)
	switch resp := rec.ResponseContext; {
	case resp == nil:
		why += "; it was never delivered"
	case resp.FunctionError != nil:
		why += "; the last ended in a function error (" + *resp.FunctionError + ")"
	default:
		why += "; the last answer failed it through the response"
	}
	why += "; the record itself may not be to blame: it was in the batch (" + how + ")"
	return dlq.Envelope{
		Version:      dlq.Version,
		Source:       source,
		SourceARN:    arn,
		Attempts:     max(rc.ApproximateInvokeCount, 0),
		FirstFailure: at,
		LastFailure:  at,
		Error:        why,
		Reason:       ReasonOnFailure,
		FunctionName: functionName(rc.FunctionARN),
		RequestID:    rc.RequestID,
	}
}

// functionName is the name in a function ARN
// (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]), or arn itself.
func functionName(arn string) string {
	if _, rest, ok := strings.Cut(arn, ":function:"); ok {
		name, _, _ := strings.Cut(rest, ":")
		return name
	}
	return arn
}

// arnRegion is the region field of an ARN, or "".
func arnRegion(arn string) string {
	f := strings.SplitN(arn, ":", 6)
	if len(f) == 6 && f[0] == "arn" {
		return f[3]
	}
	return ""
}

// compareSequence orders decimal sequence numbers by value.
func compareSequence(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func checkRange(what string, info *sevents.StreamBatchInfo) error {
	if info.ShardID == "" || info.StartSequenceNumber == "" || info.EndSequenceNumber == "" || info.StreamARN == "" {
		return fmt.Errorf("%w: %s lacks shardId, startSequenceNumber, endSequenceNumber or streamArn", ErrNotOnFailure, what)
	}
	if compareSequence(info.StartSequenceNumber, info.EndSequenceNumber) > 0 {
		return fmt.Errorf("%w: %s: startSequenceNumber %s is after endSequenceNumber %s", ErrNotOnFailure, what, info.StartSequenceNumber, info.EndSequenceNumber)
	}
	return nil
}

// page is one GetRecords answer, converted.
type page struct {
	recs    []invocation.StreamRecord
	next    *string
	expired bool
}

// readRange pages a shard from an AT_SEQUENCE_NUMBER iterator to end.
func (f *Fetcher) readRange(ctx context.Context, what string, info *sevents.StreamBatchInfo, iterator func(after string) (string, error),
	get func(it string) (page, error)) ([]invocation.StreamRecord, error) {
	start, end := info.StartSequenceNumber, info.EndSequenceNumber
	it, err := iterator("")
	if err != nil {
		return nil, err
	}
	var out []invocation.StreamRecord
	empty, refreshed := 0, false
	for {
		p, err := get(it)
		if err != nil {
			return nil, err
		}
		if p.expired {
			if refreshed {
				return nil, fmt.Errorf("%s: the shard iterator expired twice: %w (or the reads are too slow: try again)", what, ErrTrimmed)
			}
			refreshed = true
			after := ""
			if len(out) > 0 {
				after = out[len(out)-1].SequenceNumber
			}
			if it, err = iterator(after); err != nil {
				return nil, err
			}
			continue
		}
		for _, r := range p.recs {
			if len(out) == 0 && compareSequence(r.SequenceNumber, start) > 0 {
				return nil, fmt.Errorf("%s: the first record still in the shard is %s, after the batch's first record %s: %w",
					what, r.SequenceNumber, start, ErrTrimmed)
			}
			if compareSequence(r.SequenceNumber, end) > 0 {
				return out, nil
			}
			out = append(out, r)
			if r.SequenceNumber == end {
				return out, nil
			}
		}
		if len(p.recs) == 0 {
			empty++
		} else {
			empty = 0
		}
		if p.next == nil || empty >= f.opts.EmptyPages {
			got := "no record"
			if len(out) > 0 {
				got = "records up to " + out[len(out)-1].SequenceNumber
			}
			if p.next == nil {
				return nil, fmt.Errorf("%s: the shard ends before the batch's end sequence number %s (read %s)", what, end, got)
			}
			return nil, fmt.Errorf("%s: %d empty reads in a row before the batch's end sequence number %s (read %s): is it the right stream?", what, empty, end, got)
		}
		it = aws.ToString(p.next)
	}
}

func (f *Fetcher) kinesis(ctx context.Context, rec *sevents.OnFailureRecord) ([]*dlq.Envelope, error) {
	info := rec.KinesisBatchInfo
	if err := checkRange("KinesisBatchInfo", info); err != nil {
		return nil, err
	}
	if f.opts.Kinesis == nil {
		return nil, errors.New("fetching Kinesis records needs a Kinesis client")
	}
	region := arnRegion(info.StreamARN)
	api := f.opts.Kinesis(region)
	_, name, ok := strings.Cut(info.StreamARN, ":stream/")
	if !ok || name == "" {
		return nil, fmt.Errorf("%w: KinesisBatchInfo.streamArn %q is not a Kinesis stream ARN", ErrNotOnFailure, info.StreamARN)
	}
	what := fmt.Sprintf("Kinesis stream %s shard %s, records %s to %s", info.StreamARN, info.ShardID, info.StartSequenceNumber, info.EndSequenceNumber)
	recs, err := f.readRange(ctx, what, info,
		func(after string) (string, error) {
			// By name: kinesalite refuses StreamARN.
			in := &kinesis.GetShardIteratorInput{StreamName: &name, ShardId: &info.ShardID,
				ShardIteratorType: kintypes.ShardIteratorTypeAtSequenceNumber, StartingSequenceNumber: &info.StartSequenceNumber}
			if after != "" {
				in.ShardIteratorType, in.StartingSequenceNumber = kintypes.ShardIteratorTypeAfterSequenceNumber, &after
			}
			out, err := api.GetShardIterator(ctx, in)
			if err != nil {
				return "", clientErr(ctx, what+": GetShardIterator "+string(in.ShardIteratorType), err)
			}
			return aws.ToString(out.ShardIterator), nil
		},
		func(it string) (page, error) {
			out, err := api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: &it})
			var expired *kintypes.ExpiredIteratorException
			if errors.As(err, &expired) {
				return page{expired: true}, nil
			}
			if err != nil {
				return page{}, clientErr(ctx, what+": GetRecords", err)
			}
			p := page{next: out.NextShardIterator}
			for _, r := range out.Records {
				sr, err := source.KinesisEventRecord(r, info.ShardID, info.StreamARN, region)
				if err != nil {
					return page{}, err
				}
				p.recs = append(p.recs, sr)
			}
			return p, nil
		})
	if err != nil {
		return nil, err
	}
	b := base(rec, sevents.SourceKinesis, info.StreamARN)
	envs := make([]*dlq.Envelope, len(recs))
	for i, r := range recs {
		e := b
		e.Shard, e.RecordID, e.EventID, e.SequenceNumber = info.ShardID, r.SequenceNumber, info.ShardID+":"+r.SequenceNumber, r.SequenceNumber
		e.PartitionKey, e.ArrivalTime, e.Record = r.PartitionKey, r.Arrival.UTC(), r.Event
		envs[i] = &e
	}
	return envs, nil
}

func (f *Fetcher) dynamoDB(ctx context.Context, rec *sevents.OnFailureRecord) ([]*dlq.Envelope, error) {
	info := rec.DDBStreamInfo
	if err := checkRange("DDBStreamBatchInfo", info); err != nil {
		return nil, err
	}
	if f.opts.DynamoDBStreams == nil {
		return nil, errors.New("fetching DynamoDB stream records needs a DynamoDB Streams client")
	}
	region := arnRegion(info.StreamARN)
	api := f.opts.DynamoDBStreams(region)
	what := fmt.Sprintf("DynamoDB stream %s shard %s, records %s to %s", info.StreamARN, info.ShardID, info.StartSequenceNumber, info.EndSequenceNumber)
	trimmed := func(err error) error {
		var t *streamtypes.TrimmedDataAccessException
		if errors.As(err, &t) {
			return fmt.Errorf("%s: %w (%v)", what, ErrTrimmed, err)
		}
		return nil
	}
	recs, err := f.readRange(ctx, what, info,
		func(after string) (string, error) {
			in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &info.StreamARN, ShardId: &info.ShardID,
				ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber, SequenceNumber: &info.StartSequenceNumber}
			if after != "" {
				in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, &after
			}
			out, err := api.GetShardIterator(ctx, in)
			if terr := trimmed(err); terr != nil {
				return "", terr
			}
			if err != nil {
				return "", clientErr(ctx, what+": GetShardIterator "+string(in.ShardIteratorType), err)
			}
			return aws.ToString(out.ShardIterator), nil
		},
		func(it string) (page, error) {
			out, err := api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: &it})
			var expired *streamtypes.ExpiredIteratorException
			if errors.As(err, &expired) {
				return page{expired: true}, nil
			}
			if terr := trimmed(err); terr != nil {
				return page{}, terr
			}
			if err != nil {
				return page{}, clientErr(ctx, what+": GetRecords", err)
			}
			p := page{next: out.NextShardIterator}
			for _, r := range out.Records {
				sr, err := source.DynamoDBEventRecord(r, info.StreamARN, region)
				if err != nil {
					return page{}, err
				}
				p.recs = append(p.recs, sr)
			}
			return p, nil
		})
	if err != nil {
		return nil, err
	}
	b := base(rec, sevents.SourceDynamoDB, info.StreamARN)
	envs := make([]*dlq.Envelope, len(recs))
	for i, r := range recs {
		var id struct {
			EventID string `json:"eventID"`
		}
		_ = json.Unmarshal(r.Event, &id)
		e := b
		e.RecordID, e.EventID, e.SequenceNumber = r.SequenceNumber, id.EventID, r.SequenceNumber
		e.PartitionKey, e.ArrivalTime, e.Record = r.PartitionKey, r.Arrival.UTC(), r.Event
		envs[i] = &e
	}
	return envs, nil
}

func (f *Fetcher) kafka(ctx context.Context, rec *sevents.OnFailureRecord) ([]*dlq.Envelope, error) {
	info := rec.KafkaBatchInfo
	if f.opts.Kafka == nil {
		return nil, errors.New("fetching Kafka records needs a Kafka reader")
	}
	seeds := f.opts.KafkaSeeds
	if len(seeds) == 0 {
		for _, s := range strings.Split(info.BootstrapServers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				seeds = append(seeds, s)
			}
		}
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%w: KafkaBatchInfo names no bootstrapServers: name the brokers", ErrNotOnFailure)
	}
	if len(info.RecordsInfo) == 0 {
		return nil, fmt.Errorf("%w: KafkaBatchInfo has no recordsInfo", ErrNotOnFailure)
	}
	b := base(rec, sevents.SourceKafka, info.EventSourceARN)
	var envs []*dlq.Envelope
	for _, pk := range slices.Sorted(maps.Keys(info.RecordsInfo)) {
		r := info.RecordsInfo[pk]
		topic, n, err := sevents.ParseKafkaPartitionKey(pk)
		if err != nil {
			return nil, fmt.Errorf("%w: KafkaBatchInfo.recordsInfo key %q: %v", ErrNotOnFailure, pk, err)
		}
		first, err1 := strconv.ParseInt(r.FirstRecordOffset, 10, 64)
		last, err2 := strconv.ParseInt(r.LastRecordOffset, 10, 64)
		if err1 != nil || err2 != nil || first < 0 || last < first {
			return nil, fmt.Errorf("%w: KafkaBatchInfo.recordsInfo[%q]: offsets %q to %q", ErrNotOnFailure, pk, r.FirstRecordOffset, r.LastRecordOffset)
		}
		what := fmt.Sprintf("Kafka %s offsets %d to %d", pk, first, last)
		recs, err := f.opts.Kafka(ctx, seeds, topic, int32(n), first, last)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(recs) > 0 && recs[0].Offset > first {
			return nil, fmt.Errorf("%s: the first record still in the partition is at offset %d: %w", what, recs[0].Offset, ErrTrimmed)
		}
		for _, kr := range recs {
			if kr.Offset < first || kr.Offset > last {
				continue
			}
			e := b
			p, o := n, kr.Offset
			e.Topic, e.Partition, e.Offset = topic, &p, &o
			e.RecordID = pk + "@" + strconv.FormatInt(o, 10)
			e.EventID = fmt.Sprintf("%s-%d-%d", topic, n, o)
			e.ArrivalTime = kr.Timestamp.UTC()
			e.Record = kr.JSON
			envs = append(envs, &e)
		}
	}
	return envs, nil
}

// clientErr wraps an SDK error without exposing its type.
func clientErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	return fmt.Errorf("%s: %v", what, err)
}
