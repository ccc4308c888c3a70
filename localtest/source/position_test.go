package source_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/source"
)

func seqsOf(recs []invocation.StreamRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.SequenceNumber)
	}
	return out
}

// AT_SEQUENCE_NUMBER starts at the record named (itself included), on
// kinesalite; the stream's retention and ARN come from
// DescribeStreamSummary.
func TestAWSKinesisAtSequenceNumber(t *testing.T) {
	t.Parallel()
	srv := servers.Kinesis(t)
	ctx := awsCtx(t, 30*time.Second)
	cfg := srv.AWSConfig()
	k := kinesis.NewFromConfig(cfg)
	name := servers.UniqueName(t, "stream")
	if _, err := k.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := k.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatal(err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var seqs []string
	var shard string
	for i := range 5 {
		out, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: aws.String("pk"), Data: []byte(fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		seqs, shard = append(seqs, aws.ToString(out.SequenceNumber)), aws.ToString(out.ShardId)
	}
	src := source.KinesisStream(cfg, name, "AT_SEQUENCE_NUMBER", source.KinesisStartingSequenceNumbers(map[string]string{shard: seqs[2]}))
	recs, err := src.Read(ctx, shard, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(recs); !slices.Equal(got, seqs[2:]) {
		t.Fatalf("AT_SEQUENCE_NUMBER %s read %v, want %v", seqs[2], got, seqs[2:])
	}
	if _, err := src.Read(ctx, "shardId-000000000009", "", 10); err == nil || !strings.Contains(err.Error(), "names no sequence number for shard shardId-000000000009") {
		t.Fatalf("a shard without a sequence number: %v", err)
	}
	if ret, err := src.Retention(ctx); err != nil || ret != 24*time.Hour {
		t.Fatalf("Retention = %v, %v; want kinesalite's default 24h", ret, err)
	}
	if arn, err := src.StreamARN(ctx); err != nil || !strings.HasSuffix(arn, ":stream/"+name) {
		t.Fatalf("StreamARN = %q, %v", arn, err)
	}
}

// The same on a DynamoDB stream (DynamoDB Local).
func TestAWSDynamoDBAtSequenceNumber(t *testing.T) {
	t.Parallel()
	srv := servers.DynamoDB(t)
	ctx := awsCtx(t, 45*time.Second)
	cfg := srv.AWSConfig()
	db := dynamodb.NewFromConfig(cfg)
	table := servers.UniqueName(t, "orders")
	out, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            &table,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewImage},
	})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.TableDescription.LatestStreamArn)
	for i := range 4 {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprint("k", i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	all := source.DynamoDBStream(cfg, arn, "TRIM_HORIZON")
	shards, err := all.Shards(ctx)
	if err != nil || len(shards) != 1 {
		t.Fatalf("Shards = %v, %v; want one", shards, err)
	}
	var every []invocation.StreamRecord
	for len(every) < 4 {
		recs, err := all.Read(ctx, shards[0], "", 10)
		if err != nil {
			t.Fatal(err)
		}
		every = append(every, recs...)
		if len(recs) == 0 {
			break
		}
	}
	if len(every) != 4 {
		t.Fatalf("read %d records from TRIM_HORIZON, want 4", len(every))
	}
	seqs := seqsOf(every)
	src := source.DynamoDBStream(cfg, arn, "AT_SEQUENCE_NUMBER", source.DynamoDBStartingSequenceNumbers(map[string]string{shards[0]: seqs[1]}))
	recs, err := src.Read(ctx, shards[0], "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(recs); !slices.Equal(got, seqs[1:]) {
		t.Fatalf("AT_SEQUENCE_NUMBER %s read %v, want %v", seqs[1], got, seqs[1:])
	}
	if _, err := source.DynamoDBStream(cfg, arn, "AT_SEQUENCE_NUMBER").Read(ctx, shards[0], "", 1); err == nil || errors.Is(err, source.ErrTrimmed) {
		t.Fatalf("AT_SEQUENCE_NUMBER without a sequence number: %v", err)
	}
}

// OffsetRange and OffsetAt on kfake: the log start and end offsets, and
// the first offset at or after a time (the end offset past the last).
func TestKafkaClusterOffsets(t *testing.T) {
	t.Parallel()
	ctx := awsCtx(t, 30*time.Second)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 4 {
		r := &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	src, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	start, end, err := src.OffsetRange(ctx, "orders-0")
	if err != nil || start != 0 || end != 4 {
		t.Fatalf("OffsetRange = %d, %d, %v; want 0, 4", start, end, err)
	}
	for _, tt := range []struct {
		at   time.Time
		want int64
	}{
		{base.Add(-time.Minute), 0},
		{base, 0},
		{base.Add(90 * time.Second), 2},
		{base.Add(3 * time.Minute), 3},
		{base.Add(time.Hour), 4},
	} {
		if got, err := src.OffsetAt(ctx, "orders-0", tt.at); err != nil || got != tt.want {
			t.Errorf("OffsetAt(%v after the first record) = %d, %v; want %d", tt.at.Sub(base), got, err, tt.want)
		}
	}
	if _, _, err := src.OffsetRange(ctx, "orders"); err == nil {
		t.Error("OffsetRange of a key that is no partition: no error")
	}
}
