package events_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// The builders write events exactly as Lambda delivers them, for a
// handler's unit tests: sequence numbers, event ids, ARNs and attributes
// filled in, data base64-encoded by the JSON encoding.
func ExampleKinesisBuilder() {
	b := &sevents.KinesisBuilder{Clock: func() time.Time { return time.Unix(1700000000, 0) }}
	b.Add("customer-1", []byte(`{"orderId":"o-1"}`)).Add("customer-2", []byte(`{"orderId":"o-2"}`))
	ev := b.Event()
	for _, r := range ev.Records {
		fmt.Println(r.EventID, r.Kinesis.PartitionKey, string(r.Kinesis.Data))
	}
	out, _ := sevents.MarshalEvent(ev)
	var back events.KinesisEvent
	fmt.Println(json.Unmarshal(out, &back), len(back.Records))
	// Output:
	// shardId-000000000000:49590338271490256608559690000000000000000000000000000000 customer-1 {"orderId":"o-1"}
	// shardId-000000000000:49590338271490256608559690000000000000000000000000000001 customer-2 {"orderId":"o-2"}
	// <nil> 2
}

// A FIFO queue's messages carry their group, sequence number and
// deduplication id.
func ExampleSQSBuilder() {
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:payments.fifo"}
	b.AddFIFO(`{"paymentId":"pay-001"}`, "customer-1", "pay-001")
	m := b.Event().Records[0]
	fmt.Println(m.MessageId, m.Attributes["MessageGroupId"], m.Attributes["MessageDeduplicationId"], m.Attributes["ApproximateReceiveCount"])
	// Output:
	// 00000001-0000-4000-8000-000000000001 customer-1 pay-001 1
}

// Images decode into structs with dynamodbav tags, by the rules of
// aws-sdk-go-v2's attributevalue, without linking the SDK.
func ExampleUnmarshalImage() {
	type Order struct {
		ID     string  `dynamodbav:"pk"`
		Amount float64 `dynamodbav:"amount"`
	}
	image := map[string]events.DynamoDBAttributeValue{
		"pk":     events.NewStringAttribute("order#1"),
		"amount": events.NewNumberAttribute("12.5"),
	}
	var o Order
	fmt.Println(sevents.UnmarshalImage(image, &o), o.ID, o.Amount)
	// Output:
	// <nil> order#1 12.5
}

// The record Lambda sends to a stream's on-failure destination names the
// batch it gave up on; sluice fetch-failed reads the records back from it.
func ExampleOnFailureRecord() {
	doc := `{"requestContext":{"requestId":"c9b8fa9f-5a7f-4b9a-9b0e-1d3c6f0a8e21","functionArn":"arn:aws:lambda:us-east-2:123456789012:function:orders",
	 "condition":"RetryAttemptsExhausted","approximateInvokeCount":4},
	 "responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},
	 "version":"1.0","timestamp":"2019-11-14T00:38:06.021Z",
	 "KinesisBatchInfo":{"shardId":"shardId-000000000001","startSequenceNumber":"49601189658422359378836298521827638475320189012309704722",
	  "endSequenceNumber":"49601189658422359378836298522902373528957594348623495186","approximateArrivalOfFirstRecord":"2019-11-14T00:38:04.835Z",
	  "approximateArrivalOfLastRecord":"2019-11-14T00:38:05.580Z","batchSize":500,"streamArn":"arn:aws:kinesis:us-east-2:123456789012:stream/orders"}}`
	var rec sevents.OnFailureRecord
	if err := json.Unmarshal([]byte(doc), &rec); err != nil {
		panic(err)
	}
	fmt.Println(rec.RequestContext.Condition, rec.RequestContext.ApproximateInvokeCount, rec.KinesisBatchInfo.ShardID, rec.KinesisBatchInfo.BatchSize)
	// Output:
	// RetryAttemptsExhausted 4 shardId-000000000001 500
}
