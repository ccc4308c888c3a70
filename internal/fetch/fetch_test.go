package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/redrive"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func onFailure(info *sevents.StreamBatchInfo, ddb bool) *sevents.OnFailureRecord {
	fe := "Unhandled"
	rec := &sevents.OnFailureRecord{
		RequestContext: sevents.OnFailureRequestContext{RequestID: "c9b8fa9f-0000-4000-8000-000000000001",
			FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:orders", Condition: sevents.ConditionRetryAttemptsExhausted, ApproximateInvokeCount: 4},
		ResponseContext: &sevents.OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: &fe},
		Version:         "1.0", Timestamp: "2025-05-01T10:00:00.123Z",
	}
	if ddb {
		rec.DDBStreamInfo = info
	} else {
		rec.KinesisBatchInfo = info
	}
	return rec
}

// kinesisStream creates a one-shard stream on kinesalite and puts n
// records; it returns the stream ARN, shard and sequence numbers.
func kinesisStream(t *testing.T, client *kinesis.Client, n int) (arn, shard string, seqs []string) {
	t.Helper()
	ctx := testCtx(t)
	name := servers.UniqueName(t, "orders")
	if _, err := client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatal(err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			arn = aws.ToString(d.StreamDescriptionSummary.StreamARN)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range n {
		out, err := client.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: aws.String(fmt.Sprint("pk", i)), Data: []byte(fmt.Sprintf(`{"id":"k%d"}`, i))})
		if err != nil {
			t.Fatal(err)
		}
		shard = aws.ToString(out.ShardId)
		seqs = append(seqs, aws.ToString(out.SequenceNumber))
	}
	return arn, shard, seqs
}

func TestFetchKinesis(t *testing.T) {
	srv := servers.Kinesis(t)
	client := kinesis.NewFromConfig(srv.AWSConfig())
	arn, shard, seqs := kinesisStream(t, client, 6)
	f := New(Options{Kinesis: func(string) KinesisAPI { return client }})
	rec := onFailure(&sevents.StreamBatchInfo{ShardID: shard, StartSequenceNumber: seqs[2], EndSequenceNumber: seqs[4], BatchSize: 3, StreamARN: arn}, false)
	envs, err := f.Fetch(testCtx(t), rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 3 {
		t.Fatalf("%d envelopes, want 3", len(envs))
	}
	for i, e := range envs {
		if e.RecordID != seqs[2+i] || e.Shard != shard || e.EventID != shard+":"+seqs[2+i] || e.SourceARN != arn || e.Source != sevents.SourceKinesis ||
			e.Attempts != 4 || e.Reason != ReasonOnFailure || e.FunctionName != "orders" || e.PartitionKey != fmt.Sprint("pk", 2+i) || e.ArrivalTime.IsZero() {
			t.Errorf("envelope %d: %+v", i, e)
		}
		var r events.KinesisEventRecord
		if err := json.Unmarshal(e.Record, &r); err != nil || string(r.Kinesis.Data) != fmt.Sprintf(`{"id":"k%d"}`, 2+i) || r.EventSourceArn != arn {
			t.Errorf("record %d: %s (%v)", i, e.Record, err)
		}
	}
	// What fetch-failed writes, redrive replays.
	if _, err := redrive.Event(envs); err != nil {
		t.Fatal(err)
	}
	// A range of one record.
	rec.KinesisBatchInfo.StartSequenceNumber, rec.KinesisBatchInfo.EndSequenceNumber = seqs[5], seqs[5]
	if envs, err := f.Fetch(testCtx(t), rec); err != nil || len(envs) != 1 || envs[0].RecordID != seqs[5] {
		t.Fatalf("one record: %v %v", envs, err)
	}
}

// fakeKinesis serves records from a fixed list, as a trimmed shard does:
// the iterator starts at the first record it still holds.
type fakeKinesis struct {
	seqs []string
}

func (f *fakeKinesis) GetShardIterator(ctx context.Context, in *kinesis.GetShardIteratorInput, _ ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	return &kinesis.GetShardIteratorOutput{ShardIterator: aws.String("0")}, nil
}

func (f *fakeKinesis) GetRecords(ctx context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	out := &kinesis.GetRecordsOutput{NextShardIterator: aws.String("1")}
	if aws.ToString(in.ShardIterator) == "0" {
		for _, s := range f.seqs {
			out.Records = append(out.Records, kintypes.Record{SequenceNumber: aws.String(s), PartitionKey: aws.String("pk"), Data: []byte("x"), ApproximateArrivalTimestamp: aws.Time(time.Now())})
		}
	}
	return out, nil
}

func TestFetchKinesisTrimmedAndShort(t *testing.T) {
	arn := "arn:aws:kinesis:us-east-1:123456789012:stream/s"
	f := New(Options{Kinesis: func(string) KinesisAPI { return &fakeKinesis{seqs: []string{"105", "106"}} }})
	_, err := f.Fetch(testCtx(t), onFailure(&sevents.StreamBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: "100", EndSequenceNumber: "106", StreamARN: arn}, false))
	if !errors.Is(err, ErrTrimmed) || !strings.Contains(err.Error(), "first record still in the shard is 105") {
		t.Fatalf("trimmed: %v", err)
	}
	_, err = f.Fetch(testCtx(t), onFailure(&sevents.StreamBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: "105", EndSequenceNumber: "110", StreamARN: arn}, false))
	if err == nil || errors.Is(err, ErrTrimmed) || !strings.Contains(err.Error(), "empty reads in a row before the batch's end sequence number 110 (read records up to 106)") {
		t.Fatalf("short: %v", err)
	}
}

type fakeStreams struct{ err error }

func (f fakeStreams) GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return nil, f.err
}

func (f fakeStreams) GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return nil, f.err
}

func TestFetchDynamoDBTrimmed(t *testing.T) {
	f := New(Options{DynamoDBStreams: func(string) DynamoDBStreamsAPI {
		return fakeStreams{err: &streamtypes.TrimmedDataAccessException{Message: aws.String("trimmed")}}
	}})
	_, err := f.Fetch(testCtx(t), onFailure(&sevents.StreamBatchInfo{ShardID: "shardId-1", StartSequenceNumber: "1", EndSequenceNumber: "2",
		StreamARN: "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2025-01-01T00:00:00.000"}, true))
	if !errors.Is(err, ErrTrimmed) {
		t.Fatalf("got %v", err)
	}
}

func TestFetchDynamoDB(t *testing.T) {
	srv := servers.DynamoDB(t)
	ctx := testCtx(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	streams := dynamodbstreams.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "orders")
	out, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.TableDescription.LatestStreamArn)
	for i := range 5 {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint("item-", i)}, "n": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(i)},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &arn})
	if err != nil {
		t.Fatal(err)
	}
	shard := aws.ToString(d.StreamDescription.Shards[0].ShardId)
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn, ShardId: &shard, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	got, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil || len(got.Records) != 5 {
		t.Fatalf("%v, %d records", err, len(got.Records))
	}
	seq := func(i int) string { return aws.ToString(got.Records[i].Dynamodb.SequenceNumber) }

	f := New(Options{DynamoDBStreams: func(string) DynamoDBStreamsAPI { return streams }})
	rec := onFailure(&sevents.StreamBatchInfo{ShardID: shard, StartSequenceNumber: seq(1), EndSequenceNumber: seq(3), BatchSize: 3, StreamARN: arn}, true)
	rec.ResponseContext.FunctionError = nil
	envs, err := f.Fetch(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 3 {
		t.Fatalf("%d envelopes, want 3", len(envs))
	}
	for i, e := range envs {
		var r events.DynamoDBEventRecord
		if err := json.Unmarshal(e.Record, &r); err != nil {
			t.Fatal(err)
		}
		if e.RecordID != seq(1+i) || e.Source != sevents.SourceDynamoDB || e.EventID != aws.ToString(got.Records[1+i].EventID) || e.EventID != r.EventID ||
			r.Change.Keys["pk"].String() != fmt.Sprint("item-", 1+i) || !strings.Contains(e.Error, "failed it through the response") {
			t.Errorf("envelope %d: %+v", i, e)
		}
	}
	if _, err := redrive.Event(envs); err != nil {
		t.Fatal(err)
	}
}

// Run over a file: the on-failure record fetched is removed, the line that
// is not one stays; the envelopes are appended to the sink's file.
func TestRunFile(t *testing.T) {
	srv := servers.Kinesis(t)
	client := kinesis.NewFromConfig(srv.AWSConfig())
	arn, shard, seqs := kinesisStream(t, client, 3)
	dir := t.TempDir()
	good, _ := json.Marshal(onFailure(&sevents.StreamBatchInfo{ShardID: shard, StartSequenceNumber: seqs[0], EndSequenceNumber: seqs[2], StreamARN: arn}, false))
	in := filepath.Join(dir, "onfailure.jsonl")
	if err := os.WriteFile(in, []byte(string(good)+"\n{\"version\":\"1.0\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := File(in)
	if err != nil {
		t.Fatal(err)
	}
	outPath := filepath.Join(dir, "envelopes.jsonl")
	sum, err := Run(testCtx(t), src, New(Options{Kinesis: func(string) KinesisAPI { return client }}), fileSink(t, outPath), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 2 || sum.Fetched != 1 || sum.Records != 3 || sum.Failed != 1 || !strings.Contains(sum.Leftovers[0].Reason, "not a Lambda on-failure record") {
		t.Fatalf("summary %+v", sum)
	}
	if left, _ := os.ReadFile(in); string(left) != "{\"version\":\"1.0\"}\n" {
		t.Errorf("left in the input: %q", left)
	}
	data, _ := os.ReadFile(outPath)
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		e, err := dlq.Unmarshal([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.RecordID)
	}
	if strings.Join(ids, " ") != strings.Join(seqs, " ") {
		t.Errorf("envelopes for %v, want %v", ids, seqs)
	}
}

func TestFetchKafka(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 5 {
		r := &kgo.Record{Topic: "orders", Partition: 1, Key: []byte("k"), Value: []byte(fmt.Sprintf(`{"id":"o%d"}`, i))}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rec := &sevents.OnFailureRecord{
		RequestContext: sevents.OnFailureRequestContext{Condition: sevents.ConditionRetryAttemptsExhausted, ApproximateInvokeCount: 2},
		Timestamp:      "2025-05-01T10:00:00.000Z",
		KafkaBatchInfo: &sevents.KafkaBatchInfo{BatchSize: 3, EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1",
			BootstrapServers: strings.Join(cluster.ListenAddrs(), ","),
			RecordsInfo:      map[string]sevents.KafkaPartitionRecords{"orders-1": {FirstRecordOffset: "1", LastRecordOffset: "3"}}},
	}
	f := New(Options{Kafka: FranzKafka(5 * time.Second)})
	envs, err := f.Fetch(testCtx(t), rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 3 {
		t.Fatalf("%d envelopes", len(envs))
	}
	for i, e := range envs {
		if e.RecordID != fmt.Sprintf("orders-1@%d", 1+i) || *e.Partition != 1 || *e.Offset != int64(1+i) || e.Topic != "orders" || e.Attempts != 2 {
			t.Errorf("envelope %d: %+v", i, e)
		}
	}
	payload, err := redrive.Event(envs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `"value":"eyJpZCI6Im8xIn0="`) {
		t.Errorf("event %s", payload)
	}
	// Offsets past the partition's end.
	rec.KafkaBatchInfo.RecordsInfo["orders-1"] = sevents.KafkaPartitionRecords{FirstRecordOffset: "4", LastRecordOffset: "9"}
	if _, err := New(Options{Kafka: FranzKafka(time.Second)}).Fetch(testCtx(t), rec); err == nil || !strings.Contains(err.Error(), "not in the partition") {
		t.Fatalf("past the end: %v", err)
	}
}

func fileSink(t *testing.T, path string) *dlq.File {
	t.Helper()
	f, err := dlq.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
