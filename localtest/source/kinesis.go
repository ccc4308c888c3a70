package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/remote"
)

// kinesisAPI is the part of the Kinesis client KinesisStreamSource uses.
type kinesisAPI interface {
	ListShards(context.Context, *kinesis.ListShardsInput, ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(context.Context, *kinesis.GetShardIteratorInput, ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(context.Context, *kinesis.GetRecordsInput, ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
	DescribeStreamSummary(context.Context, *kinesis.DescribeStreamSummaryInput, ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
}

// KinesisStreamSource reads a real Kinesis data stream (AWS, kinesalite,
// LocalStack) and delivers its records in the shape Lambda does. It is safe
// for concurrent use; Read calls for different shards run in parallel.
type KinesisStreamSource struct {
	api       kinesisAPI
	region    string
	name      string
	position  string
	timestamp time.Time
	sequences map[string]string // shard -> AT_SEQUENCE_NUMBER start

	arnMu     sync.Mutex
	arn       string
	retention time.Duration

	cursors shardCursors
}

// KinesisStreamOption configures KinesisStream.
type KinesisStreamOption func(*KinesisStreamSource)

// KinesisStartingTimestamp sets the time an AT_TIMESTAMP starting position
// starts at.
func KinesisStartingTimestamp(t time.Time) KinesisStreamOption {
	return func(s *KinesisStreamSource) { s.timestamp = t }
}

// KinesisStartingSequenceNumbers sets, per shard id, the sequence number an
// AT_SEQUENCE_NUMBER starting position starts at (the record itself
// included). A Read of a shard it does not name fails.
func KinesisStartingSequenceNumbers(seqs map[string]string) KinesisStreamOption {
	return func(s *KinesisStreamSource) { s.sequences = seqs }
}

// KinesisStream returns a StreamSource for the Kinesis data stream
// streamName at the endpoint and region of cfg. startingPosition is where a
// Read with after == "" begins: TRIM_HORIZON, LATEST, AT_TIMESTAMP (with
// KinesisStartingTimestamp) or AT_SEQUENCE_NUMBER (with
// KinesisStartingSequenceNumbers). An unknown position fails the first Read.
//
// The stream is addressed by name, never by ARN, because kinesalite refuses
// StreamARN. Records carry the stream ARN from DescribeStreamSummary, the
// region of that ARN and invokeIdentityArn
// arn:aws:iam::<account>:role/lambda-role.
//
// A Read continuing from the last record a previous Read returned (or, after
// an empty Read, from the same after) reuses that call's NextShardIterator, so
// a LATEST position is fixed by the first Read of a shard and records put
// later are not skipped. Any other after gets a fresh AFTER_SEQUENCE_NUMBER
// iterator.
func KinesisStream(cfg aws.Config, streamName, startingPosition string, opts ...KinesisStreamOption) *KinesisStreamSource {
	s := &KinesisStreamSource{
		api:      kinesis.NewFromConfig(cfg),
		region:   cfg.Region,
		name:     streamName,
		position: startingPosition,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Shards lists the stream's shard ids, sorted (a parent shard sorts before
// its children, which are created after it).
func (s *KinesisStreamSource) Shards(ctx context.Context) ([]string, error) {
	var ids []string
	in := &kinesis.ListShardsInput{StreamName: &s.name}
	for {
		out, err := s.api.ListShards(ctx, in)
		if err != nil {
			return nil, remote.Err(ctx, fmt.Sprintf("localtest: Kinesis stream %q: ListShards", s.name), err)
		}
		for _, sh := range out.Shards {
			ids = append(ids, aws.ToString(sh.ShardId))
		}
		if out.NextToken == nil {
			break
		}
		// NextToken excludes StreamName.
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
	slices.Sort(ids)
	return ids, nil
}

// Read returns up to max records (at most 10,000) of shard after sequence
// number after, or from the starting position when after is "".
func (s *KinesisStreamSource) Read(ctx context.Context, shard, after string, max int) ([]invocation.StreamRecord, error) {
	if max <= 0 {
		return nil, nil
	}
	arn, err := s.streamARN(ctx)
	if err != nil {
		return nil, err
	}
	return s.cursors.read(ctx, shard, after,
		func() (string, error) { return s.iterator(ctx, shard, after) },
		func(it string, left int) (shardPage, error) {
			out, err := s.api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: &it, Limit: aws.Int32(int32(min(left, 10000)))})
			var expired *kintypes.ExpiredIteratorException
			if errors.As(err, &expired) {
				return shardPage{expired: true}, nil
			}
			if err != nil {
				return shardPage{}, remote.Err(ctx, fmt.Sprintf("localtest: Kinesis stream %q shard %s: GetRecords", s.name, shard), err)
			}
			p := shardPage{next: out.NextShardIterator, atTip: aws.ToInt64(out.MillisBehindLatest) == 0}
			for _, r := range out.Records {
				rec, err := kinesisRecord(r, shard, arn, s.region)
				if err != nil {
					return shardPage{}, err
				}
				p.recs = append(p.recs, rec)
			}
			return p, nil
		}, max)
}

// iterator gets a fresh shard iterator for a Read after after.
func (s *KinesisStreamSource) iterator(ctx context.Context, shard, after string) (string, error) {
	in := &kinesis.GetShardIteratorInput{StreamName: &s.name, ShardId: &shard}
	switch {
	case after != "":
		in.ShardIteratorType = kintypes.ShardIteratorTypeAfterSequenceNumber
		in.StartingSequenceNumber = &after
	case s.position == "TRIM_HORIZON":
		in.ShardIteratorType = kintypes.ShardIteratorTypeTrimHorizon
	case s.position == "LATEST":
		in.ShardIteratorType = kintypes.ShardIteratorTypeLatest
	case s.position == "AT_TIMESTAMP":
		if s.timestamp.IsZero() {
			return "", fmt.Errorf("localtest: Kinesis stream %q: starting position AT_TIMESTAMP needs a time; pass KinesisStartingTimestamp", s.name)
		}
		in.ShardIteratorType = kintypes.ShardIteratorTypeAtTimestamp
		in.Timestamp = &s.timestamp
	case s.position == "AT_SEQUENCE_NUMBER":
		seq := s.sequences[shard]
		if seq == "" {
			return "", fmt.Errorf("localtest: Kinesis stream %q: starting position AT_SEQUENCE_NUMBER names no sequence number for shard %s; pass KinesisStartingSequenceNumbers", s.name, shard)
		}
		in.ShardIteratorType = kintypes.ShardIteratorTypeAtSequenceNumber
		in.StartingSequenceNumber = &seq
	default:
		return "", fmt.Errorf("localtest: Kinesis stream %q: starting position %q is not TRIM_HORIZON, LATEST, AT_TIMESTAMP or AT_SEQUENCE_NUMBER", s.name, s.position)
	}
	out, err := s.api.GetShardIterator(ctx, in)
	if err != nil {
		return "", remote.Err(ctx, fmt.Sprintf("localtest: Kinesis stream %q shard %s: GetShardIterator %s", s.name, shard, in.ShardIteratorType), err)
	}
	return aws.ToString(out.ShardIterator), nil
}

func (s *KinesisStreamSource) streamARN(ctx context.Context) (string, error) {
	s.arnMu.Lock()
	defer s.arnMu.Unlock()
	if s.arn != "" {
		return s.arn, nil
	}
	out, err := s.api.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &s.name})
	if err != nil {
		return "", remote.Err(ctx, fmt.Sprintf("localtest: Kinesis stream %q: DescribeStreamSummary", s.name), err)
	}
	s.arn = aws.ToString(out.StreamDescriptionSummary.StreamARN)
	s.retention = time.Duration(aws.ToInt32(out.StreamDescriptionSummary.RetentionPeriodHours)) * time.Hour
	return s.arn, nil
}

// StreamARN returns the stream's ARN (DescribeStreamSummary, once).
func (s *KinesisStreamSource) StreamARN(ctx context.Context) (string, error) { return s.streamARN(ctx) }

// Retention returns the stream's retention period (RetentionPeriodHours of
// DescribeStreamSummary): records older than that are trimmed.
func (s *KinesisStreamSource) Retention(ctx context.Context) (time.Duration, error) {
	if _, err := s.streamARN(ctx); err != nil {
		return 0, err
	}
	s.arnMu.Lock()
	defer s.arnMu.Unlock()
	return s.retention, nil
}

// kinesisRecord converts a GetRecords record to the Lambda event record.
func kinesisRecord(r kintypes.Record, shard, streamARN, region string) (invocation.StreamRecord, error) {
	seq := aws.ToString(r.SequenceNumber)
	arrival := aws.ToTime(r.ApproximateArrivalTimestamp).Truncate(time.Millisecond)
	ev := events.KinesisEventRecord{
		AwsRegion:         arnField(streamARN, 3, region),
		EventID:           shard + ":" + seq,
		EventName:         "aws:kinesis:record",
		EventSource:       "aws:kinesis",
		EventSourceArn:    streamARN,
		EventVersion:      "1.0",
		InvokeIdentityArn: "arn:aws:iam::" + arnField(streamARN, 4, "123456789012") + ":role/lambda-role",
		Kinesis: events.KinesisRecord{
			ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: arrival},
			Data:                        r.Data,
			PartitionKey:                aws.ToString(r.PartitionKey),
			SequenceNumber:              seq,
			KinesisSchemaVersion:        "1.0",
		},
	}
	if r.EncryptionType == kintypes.EncryptionTypeKms {
		ev.Kinesis.EncryptionType = string(r.EncryptionType)
	}
	if ev.Kinesis.Data == nil {
		ev.Kinesis.Data = []byte{} // "data": "" rather than null
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return invocation.StreamRecord{}, fmt.Errorf("localtest: encode Kinesis record %s: %w", ev.EventID, err)
	}
	return invocation.StreamRecord{SequenceNumber: seq, PartitionKey: ev.Kinesis.PartitionKey, Arrival: arrival, Event: b}, nil
}

// arnField returns field i of an ARN (3: region, 4: account, 5: resource), or
// def if the ARN has no such non-empty field.
func arnField(arn string, i int, def string) string {
	f := strings.SplitN(arn, ":", 6)
	if len(f) == 6 && f[0] == "arn" && f[i] != "" {
		return f[i]
	}
	return def
}
