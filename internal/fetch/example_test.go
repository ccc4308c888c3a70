package fetch_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/sluicehq/sluice/internal/fetch"
)

// onFailure is what a Kinesis mapping's on-failure destination receives
// when it gives up on a batch: the batch's coordinates, not its records.
const onFailure = `{
  "requestContext": {"requestId": "c9b8fa9f-5a7f-4c4c-af9c-0c604cde93a5",
    "functionArn": "arn:aws:lambda:us-east-2:123456789012:function:orders",
    "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
  "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
  "version": "1.0", "timestamp": "2026-12-01T00:38:06.021Z",
  "KinesisBatchInfo": {"shardId": "shardId-000000000001",
    "startSequenceNumber": "100", "endSequenceNumber": "200",
    "approximateArrivalOfFirstRecord": "2026-12-01T00:38:04.835Z",
    "approximateArrivalOfLastRecord": "2026-12-01T00:38:05.580Z",
    "batchSize": 2, "streamArn": "arn:aws:kinesis:us-east-2:123456789012:stream/orders"}
}`

// Parse reads an on-failure record and checks that it names a batch.
func ExampleParse() {
	rec, err := fetch.Parse([]byte(onFailure))
	if err != nil {
		panic(err)
	}
	info := rec.KinesisBatchInfo
	fmt.Println(info.StreamARN, info.ShardID, info.StartSequenceNumber, info.EndSequenceNumber)
	// Output:
	// arn:aws:kinesis:us-east-2:123456789012:stream/orders shardId-000000000001 100 200
}

// shard stands in for *kinesis.Client (kinesis.NewFromConfig(cfg), one per
// region): a shard that still retains three records, read one a page.
type shard []types.Record

func (s shard) GetShardIterator(_ context.Context, in *kinesis.GetShardIteratorInput, _ ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	for i, r := range s {
		seq := aws.ToString(r.SequenceNumber)
		if in.ShardIteratorType == types.ShardIteratorTypeAtSequenceNumber && seq >= aws.ToString(in.StartingSequenceNumber) ||
			in.ShardIteratorType == types.ShardIteratorTypeAfterSequenceNumber && seq > aws.ToString(in.StartingSequenceNumber) {
			return &kinesis.GetShardIteratorOutput{ShardIterator: aws.String(strconv.Itoa(i))}, nil
		}
	}
	return &kinesis.GetShardIteratorOutput{ShardIterator: aws.String(strconv.Itoa(len(s)))}, nil
}

func (s shard) GetRecords(_ context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	i, _ := strconv.Atoi(aws.ToString(in.ShardIterator))
	out := &kinesis.GetRecordsOutput{NextShardIterator: aws.String(strconv.Itoa(min(i+1, len(s))))}
	if i < len(s) {
		out.Records = s[i : i+1]
	}
	return out, nil
}

// A Fetcher reads the batch the on-failure record names back from the
// stream and turns each record into a dead-letter envelope, as `sluice
// fetch-failed` does before `sluice redrive` replays them.
func ExampleFetcher_Fetch() {
	at := time.Date(2026, 12, 1, 0, 38, 5, 0, time.UTC)
	retained := shard{
		{SequenceNumber: aws.String("100"), PartitionKey: aws.String("order-41"), Data: []byte(`{"id":41}`), ApproximateArrivalTimestamp: &at},
		{SequenceNumber: aws.String("200"), PartitionKey: aws.String("order-42"), Data: []byte(`{"id":42}`), ApproximateArrivalTimestamp: &at},
		{SequenceNumber: aws.String("300"), PartitionKey: aws.String("order-43"), Data: []byte(`{"id":43}`), ApproximateArrivalTimestamp: &at},
	}
	f := fetch.New(fetch.Options{Kinesis: func(region string) fetch.KinesisAPI { return retained }})
	rec, err := fetch.Parse([]byte(onFailure))
	if err != nil {
		panic(err)
	}
	envs, err := f.Fetch(context.Background(), rec)
	if err != nil {
		panic(err)
	}
	for _, e := range envs {
		fmt.Println(e.Source, e.EventID, e.PartitionKey, e.Reason, e.Attempts, e.FunctionName)
	}
	// Output:
	// kinesis shardId-000000000001:100 order-41 on-failure 3 orders
	// kinesis shardId-000000000001:200 order-42 on-failure 3 orders
}
