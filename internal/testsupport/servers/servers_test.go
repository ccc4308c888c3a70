package servers_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := servers.StopAll(); err != nil {
		println(err.Error())
		code = 1
	}
	os.Exit(code)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestDynamoDBStreams creates a table with a NEW_AND_OLD_IMAGES stream, writes
// an item three times (insert, modify, remove) and reads the three stream
// records back through the DynamoDB Streams API at the same endpoint.
func TestDynamoDBStreams(t *testing.T) {
	t.Parallel()
	srv := servers.DynamoDB(t)
	ctx := ctxFor(t, 30*time.Second)

	// The usual SDK setup works too: LoadDefaultConfig + BaseEndpoint option.
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(servers.Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("fake", "fake", "")))
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.Endpoint) })
	streams := dynamodbstreams.NewFromConfig(srv.AWSConfig())

	table := servers.UniqueName(t, "tbl")
	out, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification: &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	streamArn := aws.ToString(out.TableDescription.LatestStreamArn)
	t.Logf("table status %s, stream %s (label %s)", out.TableDescription.TableStatus, streamArn, aws.ToString(out.TableDescription.LatestStreamLabel))
	if streamArn == "" {
		t.Fatal("CreateTable returned no LatestStreamArn")
	}

	key := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k1"}}
	for i, n := range []string{"1", "2"} {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]ddbtypes.AttributeValue{
			"pk": key["pk"], "n": &ddbtypes.AttributeValueMemberN{Value: n},
		}}); err != nil {
			t.Fatalf("PutItem %d: %v", i, err)
		}
	}
	if _, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: key}); err != nil {
		t.Fatalf("DeleteItem: %v", err)
	}

	desc, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &streamArn})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	sd := desc.StreamDescription
	t.Logf("stream status %s, view %s, %d shard(s), table %s", sd.StreamStatus, sd.StreamViewType, len(sd.Shards), aws.ToString(sd.TableName))
	if len(sd.Shards) == 0 {
		t.Fatal("DescribeStream: no shards")
	}
	var recs []streamtypes.Record
	for _, sh := range sd.Shards {
		it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: &streamArn, ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatalf("GetShardIterator: %v", err)
		}
		iter := it.ShardIterator
		for iter != nil && len(recs) < 3 && ctx.Err() == nil {
			got, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatalf("GetRecords: %v", err)
			}
			recs = append(recs, got.Records...)
			if len(got.Records) == 0 {
				time.Sleep(50 * time.Millisecond)
			}
			iter = got.NextShardIterator
		}
	}
	if len(recs) != 3 {
		t.Fatalf("got %d stream records, want 3 (INSERT, MODIFY, REMOVE)", len(recs))
	}
	for i, want := range []streamtypes.OperationType{streamtypes.OperationTypeInsert, streamtypes.OperationTypeModify, streamtypes.OperationTypeRemove} {
		r := recs[i]
		if r.EventName != want {
			t.Errorf("record %d: EventName %s, want %s", i, r.EventName, want)
		}
		if r.Dynamodb == nil || r.Dynamodb.Keys["pk"] == nil || r.Dynamodb.SequenceNumber == nil {
			t.Errorf("record %d: missing Keys/SequenceNumber: %+v", i, r.Dynamodb)
			continue
		}
		if r.Dynamodb.StreamViewType != streamtypes.StreamViewTypeNewAndOldImages {
			t.Errorf("record %d: StreamViewType %q", i, r.Dynamodb.StreamViewType)
		}
		hasNew, hasOld := r.Dynamodb.NewImage != nil, r.Dynamodb.OldImage != nil
		if wantNew, wantOld := want != streamtypes.OperationTypeRemove, want != streamtypes.OperationTypeInsert; hasNew != wantNew || hasOld != wantOld {
			t.Errorf("record %d (%s): NewImage %v OldImage %v, want %v %v", i, want, hasNew, hasOld, wantNew, wantOld)
		}
		b, _ := json.Marshal(map[string]any{
			"eventID": r.EventID, "eventName": r.EventName, "eventSource": r.EventSource, "eventVersion": r.EventVersion,
			"awsRegion": r.AwsRegion, "userIdentity": r.UserIdentity, "approxCreation": r.Dynamodb.ApproximateCreationDateTime,
			"seq": r.Dynamodb.SequenceNumber, "size": r.Dynamodb.SizeBytes,
		})
		t.Logf("record %d: %s", i, b)
	}
	if m, ok := recs[1].Dynamodb.OldImage["n"].(*streamtypes.AttributeValueMemberN); !ok || m.Value != "1" {
		t.Errorf("MODIFY OldImage n = %#v, want 1", recs[1].Dynamodb.OldImage["n"])
	}
}

// TestKinesis creates a 2-shard stream, waits for ACTIVE, puts a record and
// reads it back from TRIM_HORIZON.
func TestKinesis(t *testing.T) {
	t.Parallel()
	srv := servers.Kinesis(t)
	ctx := ctxFor(t, 30*time.Second)
	k := kinesis.NewFromConfig(srv.AWSConfig())

	name := servers.UniqueName(t, "stream")
	if _, err := k.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(2)}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	var arn string
	for {
		d, err := k.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatalf("DescribeStreamSummary: %v", err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			arn = aws.ToString(d.StreamDescriptionSummary.StreamARN)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("stream ARN %s", arn)

	put, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: aws.String("pk-1"), Data: []byte("hello")})
	if err != nil {
		t.Fatalf("PutRecord: %v", err)
	}
	shards, err := k.ListShards(ctx, &kinesis.ListShardsInput{StreamName: &name})
	if err != nil {
		t.Fatalf("ListShards: %v", err)
	}
	if len(shards.Shards) != 2 {
		t.Fatalf("ListShards: %d shards, want 2", len(shards.Shards))
	}
	for _, s := range shards.Shards {
		t.Logf("shard %s hash %s..%s seq start %s", aws.ToString(s.ShardId), aws.ToString(s.HashKeyRange.StartingHashKey),
			aws.ToString(s.HashKeyRange.EndingHashKey), aws.ToString(s.SequenceNumberRange.StartingSequenceNumber))
	}
	it, err := k.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
		StreamName: &name, ShardId: put.ShardId, ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatalf("GetShardIterator: %v", err)
	}
	got, err := k.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
	if len(got.Records) != 1 || string(got.Records[0].Data) != "hello" ||
		aws.ToString(got.Records[0].SequenceNumber) != aws.ToString(put.SequenceNumber) {
		t.Fatalf("GetRecords = %+v, want the one record put (seq %s)", got.Records, aws.ToString(put.SequenceNumber))
	}
	r := got.Records[0]
	t.Logf("record: pk %s seq %s arrival %v millisBehind %d nextIterator? %v",
		aws.ToString(r.PartitionKey), aws.ToString(r.SequenceNumber), aws.ToTime(r.ApproximateArrivalTimestamp),
		aws.ToInt64(got.MillisBehindLatest), got.NextShardIterator != nil)

	// kinesalite addresses streams by name only: StreamARN is refused.
	if _, err := k.ListShards(ctx, &kinesis.ListShardsInput{StreamARN: &arn}); err == nil {
		t.Logf("ListShards by StreamARN: accepted")
	} else {
		t.Logf("ListShards by StreamARN: %v", err)
	}
}
