package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/internal/remote"
)

// dynamoDBStreamsAPI is the part of the DynamoDB Streams client
// DynamoDBStreamSource uses.
type dynamoDBStreamsAPI interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// DynamoDBStreamSource reads a real DynamoDB stream (AWS, DynamoDB Local,
// LocalStack) and delivers its records in the shape Lambda does. It is safe
// for concurrent use.
type DynamoDBStreamSource struct {
	api       dynamoDBStreamsAPI
	region    string
	arn       string
	position  string
	sequences map[string]string // shard -> AT_SEQUENCE_NUMBER start
	cursors   shardCursors
}

// ErrTrimmed is wrapped by the error of a read that asks for records past
// the stream's retention (DynamoDB Streams' TrimmedDataAccessException).
var ErrTrimmed = errors.New("the records are past the stream's retention")

// DynamoDBStreamOption configures DynamoDBStream.
type DynamoDBStreamOption func(*DynamoDBStreamSource)

// DynamoDBStartingSequenceNumbers sets, per shard id, the sequence number
// an AT_SEQUENCE_NUMBER starting position starts at (the record itself
// included). A Read of a shard it does not name fails.
func DynamoDBStartingSequenceNumbers(seqs map[string]string) DynamoDBStreamOption {
	return func(s *DynamoDBStreamSource) { s.sequences = seqs }
}

// DynamoDBStream returns a StreamSource for the DynamoDB stream streamARN
// (a table's LatestStreamArn) at the endpoint and region of cfg.
// startingPosition is TRIM_HORIZON, LATEST or AT_SEQUENCE_NUMBER (with
// DynamoDBStartingSequenceNumbers); another value fails the first Read. A
// read of trimmed records fails with an error wrapping ErrTrimmed.
//
// Records carry eventSourceARN = streamARN and the awsRegion the server puts
// in the record (DynamoDB Local says "ddblocal", also in its ARNs), or cfg's
// region when it puts none. StreamRecord.PartitionKey is the record's Keys
// as canonical JSON (attribute names sorted), e.g. {"pk":{"S":"a"}}, so equal
// keys give equal strings. Iterators are reused as KinesisStream does.
func DynamoDBStream(cfg aws.Config, streamARN, startingPosition string, opts ...DynamoDBStreamOption) *DynamoDBStreamSource {
	s := &DynamoDBStreamSource{
		api:      dynamodbstreams.NewFromConfig(cfg),
		region:   cfg.Region,
		arn:      streamARN,
		position: startingPosition,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// trimmed wraps ErrTrimmed around a TrimmedDataAccessException, or is nil.
func (s *DynamoDBStreamSource) trimmed(what string, err error) error {
	var t *streamtypes.TrimmedDataAccessException
	if errors.As(err, &t) {
		return fmt.Errorf("%s: %w (%s)", what, ErrTrimmed, aws.ToString(t.Message))
	}
	return nil
}

// Shards lists the stream's shards, parents before their children and
// otherwise sorted by id.
func (s *DynamoDBStreamSource) Shards(ctx context.Context) ([]string, error) {
	var shards []streamtypes.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: &s.arn}
	for {
		out, err := s.api.DescribeStream(ctx, in)
		if err != nil {
			return nil, remote.Err(ctx, fmt.Sprintf("localtest: DynamoDB stream %s: DescribeStream", s.arn), err)
		}
		if out.StreamDescription == nil {
			break
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			break
		}
		in = &dynamodbstreams.DescribeStreamInput{StreamArn: &s.arn, ExclusiveStartShardId: out.StreamDescription.LastEvaluatedShardId}
	}
	return parentsFirst(shards), nil
}

// parentsFirst orders shard ids so that each comes after its parent (when the
// parent is listed), breaking ties by id.
func parentsFirst(shards []streamtypes.Shard) []string {
	parent := map[string]string{}
	var ids []string
	for _, sh := range shards {
		id := aws.ToString(sh.ShardId)
		if _, dup := parent[id]; dup {
			continue
		}
		parent[id] = aws.ToString(sh.ParentShardId)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]string, 0, len(ids))
	done := map[string]bool{}
	var visit func(id string, depth int)
	visit = func(id string, depth int) {
		if done[id] {
			return
		}
		if p, ok := parent[id]; ok && p != "" && depth < len(ids) {
			if _, listed := parent[p]; listed {
				visit(p, depth+1)
			}
		}
		if !done[id] {
			done[id] = true
			out = append(out, id)
		}
	}
	for _, id := range ids {
		visit(id, 0)
	}
	return out
}

// Read returns up to max records (at most 1,000) of shard after sequence
// number after, or from the starting position when after is "".
func (s *DynamoDBStreamSource) Read(ctx context.Context, shard, after string, max int) ([]invocation.StreamRecord, error) {
	if max <= 0 {
		return nil, nil
	}
	return s.cursors.read(ctx, shard, after,
		func() (string, error) { return s.iterator(ctx, shard, after) },
		func(it string, left int) (shardPage, error) {
			out, err := s.api.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: &it, Limit: aws.Int32(int32(min(left, 1000)))})
			var expired *streamtypes.ExpiredIteratorException
			if errors.As(err, &expired) {
				return shardPage{expired: true}, nil
			}
			what := fmt.Sprintf("localtest: DynamoDB stream %s shard %s: GetRecords", s.arn, shard)
			if terr := s.trimmed(what, err); terr != nil {
				return shardPage{}, terr
			}
			if err != nil {
				return shardPage{}, remote.Err(ctx, what, err)
			}
			// An open shard may answer empty pages before its records, and
			// DynamoDB Streams has no MillisBehindLatest: never at the tip.
			p := shardPage{next: out.NextShardIterator}
			for _, r := range out.Records {
				rec, err := dynamoDBRecord(r, s.arn, s.region)
				if err != nil {
					return shardPage{}, err
				}
				p.recs = append(p.recs, rec)
			}
			return p, nil
		}, max)
}

func (s *DynamoDBStreamSource) iterator(ctx context.Context, shard, after string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &s.arn, ShardId: &shard}
	switch {
	case after != "":
		in.ShardIteratorType = streamtypes.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = &after
	case s.position == "TRIM_HORIZON":
		in.ShardIteratorType = streamtypes.ShardIteratorTypeTrimHorizon
	case s.position == "LATEST":
		in.ShardIteratorType = streamtypes.ShardIteratorTypeLatest
	case s.position == "AT_SEQUENCE_NUMBER":
		seq := s.sequences[shard]
		if seq == "" {
			return "", fmt.Errorf("localtest: DynamoDB stream %s: starting position AT_SEQUENCE_NUMBER names no sequence number for shard %s; pass DynamoDBStartingSequenceNumbers", s.arn, shard)
		}
		in.ShardIteratorType = streamtypes.ShardIteratorTypeAtSequenceNumber
		in.SequenceNumber = &seq
	default:
		return "", fmt.Errorf("localtest: DynamoDB stream %s: starting position %q is not TRIM_HORIZON, LATEST or AT_SEQUENCE_NUMBER", s.arn, s.position)
	}
	out, err := s.api.GetShardIterator(ctx, in)
	what := fmt.Sprintf("localtest: DynamoDB stream %s shard %s: GetShardIterator %s", s.arn, shard, in.ShardIteratorType)
	if terr := s.trimmed(what, err); terr != nil {
		return "", terr
	}
	if err != nil {
		return "", remote.Err(ctx, what, err)
	}
	return aws.ToString(out.ShardIterator), nil
}

// dynamoDBRecord converts a DynamoDB Streams record to the Lambda event record.
func dynamoDBRecord(r streamtypes.Record, streamARN, region string) (invocation.StreamRecord, error) {
	ev := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(r.AwsRegion),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    aws.ToString(r.EventSource),
		EventVersion:   aws.ToString(r.EventVersion),
		EventSourceArn: streamARN,
	}
	if ev.AWSRegion == "" {
		ev.AWSRegion = region
	}
	if ev.EventSource == "" {
		ev.EventSource = "aws:dynamodb"
	}
	if u := r.UserIdentity; u != nil {
		ev.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(u.Type), PrincipalID: aws.ToString(u.PrincipalId)}
	}
	var arrival time.Time
	if d := r.Dynamodb; d != nil {
		arrival = aws.ToTime(d.ApproximateCreationDateTime)
		var err error
		ev.Change = events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: arrival.Truncate(time.Second)},
			SequenceNumber:              aws.ToString(d.SequenceNumber),
			SizeBytes:                   aws.ToInt64(d.SizeBytes),
			StreamViewType:              string(d.StreamViewType),
		}
		if ev.Change.Keys, err = streamImage(d.Keys); err == nil {
			if ev.Change.NewImage, err = streamImage(d.NewImage); err == nil {
				ev.Change.OldImage, err = streamImage(d.OldImage)
			}
		}
		if err != nil {
			return invocation.StreamRecord{}, fmt.Errorf("localtest: DynamoDB stream %s record %s: %w", streamARN, ev.EventID, err)
		}
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return invocation.StreamRecord{}, fmt.Errorf("localtest: encode DynamoDB stream record %s: %w", ev.EventID, err)
	}
	keys, err := json.Marshal(ev.Change.Keys) // map keys come out sorted
	if err != nil {
		return invocation.StreamRecord{}, fmt.Errorf("localtest: encode DynamoDB keys of record %s: %w", ev.EventID, err)
	}
	return invocation.StreamRecord{
		SequenceNumber: ev.Change.SequenceNumber,
		PartitionKey:   string(keys),
		Arrival:        arrival,
		Event:          b,
	}, nil
}

func streamImage(m map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		av, err := streamAttribute(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

func streamAttribute(v streamtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *streamtypes.AttributeValueMemberL:
		out := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			av, err := streamAttribute(e)
			if err != nil {
				return av, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = av
		}
		return events.NewListAttribute(out), nil
	case *streamtypes.AttributeValueMemberM:
		out, err := streamImage(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(out), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported DynamoDB attribute value %T", v)
}
