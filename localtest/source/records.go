package source

import (
	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/invocation"
)

// The conversions the sources use, for other readers of the same streams
// (sluice fetch-failed reads back the records an on-failure record names):
// one record of the source's API in, the record of a Lambda event out,
// exactly as the sources deliver it.

// KinesisEventRecord converts a record that GetRecords returned for shard
// of the stream streamARN; region is used when the ARN names none.
func KinesisEventRecord(r kintypes.Record, shard, streamARN, region string) (invocation.StreamRecord, error) {
	return kinesisRecord(r, shard, streamARN, region)
}

// DynamoDBEventRecord converts a record that DynamoDB Streams GetRecords
// returned for the stream streamARN; region is used when the record names
// none.
func DynamoDBEventRecord(r streamtypes.Record, streamARN, region string) (invocation.StreamRecord, error) {
	return dynamoDBRecord(r, streamARN, region)
}

// KafkaEventRecord converts a record franz-go fetched.
func KafkaEventRecord(r *kgo.Record) events.KafkaRecord { return kafkaRecord(r) }
