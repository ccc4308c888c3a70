package eventscan

import (
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Where a batch comes from, for the handlers' DimensionResource: read from
// its first record without allocating (DynamoDBTable is in
// dynamodb_event.go); "" for an empty batch.

// KinesisShard returns the shard of a batch's first record, from its event
// id (SHARD:SEQUENCE).
func KinesisShard(recs []events.KinesisEventRecord) string {
	if len(recs) == 0 {
		return ""
	}
	id, _, _ := strings.Cut(recs[0].EventID, ":")
	return id
}

// SQSQueue returns the queue of a batch's first message, from its ARN
// (arn:aws:sqs:REGION:ACCOUNT:NAME).
func SQSQueue(recs []events.SQSMessage) string {
	if len(recs) == 0 {
		return ""
	}
	arn := recs[0].EventSourceARN
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

// KafkaTopic returns the topic of the first "<topic>-<partition>".
func KafkaTopic(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	p := parts[0]
	if i := strings.LastIndexByte(p, '-'); i > 0 {
		return p[:i]
	}
	return p
}

// UnixMilli reads an SQS timestamp attribute (SentTimestamp: milliseconds
// since the epoch in decimal), or the zero time when it is not one.
func UnixMilli(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
