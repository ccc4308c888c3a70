package handlers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

func sqsEvent(bodies ...string) []byte {
	b := &sevents.SQSBuilder{}
	for _, body := range bodies {
		b.Add(body)
	}
	ev, _ := sevents.MarshalEvent(b.Event())
	return ev
}

// Orders published to an SNS topic reach the queue as SNS notifications
// (raw message delivery off): SNSMessage decodes the notification and the
// order inside it, and keeps the notification's metadata. With
// idempotency on, the default key is SNS's MessageId.
func ExampleSNSMessage() {
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[handlers.SNSMessage[Order]]) error {
		n := r.Value
		fmt.Println(n.MessageID, n.TopicArn, n.Subject, n.MessageAttributes()["tenant"].Value)
		return charge(n.Message)
	}, exampleOpts...)

	body := `{"Type":"Notification","MessageId":"63a3f6b6-d533-4a47-aef9-fcf5cf758c76",` +
		`"TopicArn":"arn:aws:sns:us-west-2:123456789012:orders","Subject":"new order",` +
		`"Message":"{\"orderId\":\"o-1\",\"amount\":10}","Timestamp":"2012-03-29T05:12:16.901Z",` +
		`"SignatureVersion":"1","Signature":"EXAMPLEnTrFPa3...","SigningCertURL":"https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",` +
		`"UnsubscribeURL":"https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe",` +
		`"MessageAttributes":{"tenant":{"Type":"String","Value":"acme"}}}`
	out, err := h.Invoke(context.Background(), sqsEvent(body))
	fmt.Println(string(out), err)
	// Output:
	// 63a3f6b6-d533-4a47-aef9-fcf5cf758c76 arn:aws:sns:us-west-2:123456789012:orders new order acme
	// charged o-1
	// {"batchItemFailures":[]} <nil>
}

// An EventBridge rule that targets the queue (or a Kinesis stream): the
// event's detail is decoded into the type given, beside detail-type,
// source and id (the default idempotency key).
func ExampleEventBridgeEvent() {
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[handlers.EventBridgeEvent[Order]]) error {
		e := r.Value
		fmt.Println(e.DetailType, e.Source, e.ID)
		return charge(e.Detail)
	}, exampleOpts...)
	body := `{"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":"OrderPlaced","source":"com.example.shop",` +
		`"account":"111122223333","time":"2017-12-22T18:43:48Z","region":"us-west-1","resources":[],"detail":{"orderId":"o-7","amount":3}}`
	out, err := h.Invoke(context.Background(), sqsEvent(body))
	fmt.Println(string(out), err)
	// Output:
	// OrderPlaced com.example.shop 6a7e8feb-b491-4cf7-a9f1-bf3703467718
	// charged o-7
	// {"batchItemFailures":[]} <nil>
}

// S3 event notifications sent to a queue: one message may hold several
// records; keys come URL-encoded and URLDecodedKey has them decoded. The
// s3:TestEvent message S3 sends when the notification is set up is
// acknowledged without running the function.
func ExampleS3Notification() {
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[handlers.S3Notification]) error {
		for _, rec := range r.Value.Records {
			fmt.Println(rec.EventName, rec.S3.Bucket.Name, rec.S3.Object.URLDecodedKey)
		}
		return nil
	}, exampleOpts...)
	test := `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2014-10-13T15:57:02.089Z","Bucket":"uploads","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`
	notification := `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-west-2","eventTime":"2024-05-01T10:00:00.000Z",` +
		`"eventName":"ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"uploads","arn":"arn:aws:s3:::uploads"},` +
		`"object":{"key":"invoices/May+2024%3A+final.pdf","size":1024,"eTag":"d41d8cd98f00b204e9800998ecf8427e","sequencer":"0055AED6DCD90281E5"}}}]}`
	out, err := h.Invoke(context.Background(), sqsEvent(test, notification))
	fmt.Println(string(out), err)
	// Output:
	// ObjectCreated:Put uploads invoices/May 2024: final.pdf
	// {"batchItemFailures":[]} <nil>
}

type Song struct {
	Artist string `dynamodbav:"Artist"`
	Title  string `dynamodbav:"SongTitle"`
	Plays  int    `dynamodbav:"Plays"`
}

// A table's changes delivered through Kinesis Data Streams for DynamoDB:
// a Kinesis handler with DynamoDBChange values gets the images typed, as
// the DynamoDB Streams handler gives them.
func ExampleDynamoDBChange() {
	h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[handlers.DynamoDBChange[Song]]) error {
		c := r.Value
		fmt.Println(c.EventName, c.TableName, c.Old.Plays, "->", c.New.Plays, c.CreationTime.UTC().Format("15:04:05.000"))
		return nil
	}, exampleOpts...)
	change := `{"awsRegion":"us-west-2","dynamodb":{"ApproximateCreationDateTime":1714557600123,` +
		`"Keys":{"Artist":{"S":"No One You Know"},"SongTitle":{"S":"Call Me Today"}},` +
		`"NewImage":{"Artist":{"S":"No One You Know"},"SongTitle":{"S":"Call Me Today"},"Plays":{"N":"11"}},` +
		`"OldImage":{"Artist":{"S":"No One You Know"},"SongTitle":{"S":"Call Me Today"},"Plays":{"N":"10"}},` +
		`"SizeBytes":161,"ApproximateCreationDateTimePrecision":"MILLISECOND"},"eventID":"4b25bd0da9a181a155114127e4837252",` +
		`"eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":"Music","eventSource":"aws:dynamodb"}`
	b := &sevents.KinesisBuilder{}
	b.Add("5B7E5E0F1A6A4C3D", []byte(change))
	event, _ := json.Marshal(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)
	// Output:
	// MODIFY Music 10 -> 11 10:00:00.123
	// {"batchItemFailures":[]} <nil>
}

// A string value gets the payload's text as it is: log lines, CSV, any
// payload that is not JSON.
func ExampleMustSQS_plainText() {
	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[string]) error {
		fmt.Printf("%q\n", r.Value)
		return nil
	}, exampleOpts...)
	out, err := h.Invoke(context.Background(), sqsEvent("Hello World"))
	fmt.Println(string(out), err)
	// Output:
	// "Hello World"
	// {"batchItemFailures":[]} <nil>
}

type Click struct {
	Customer string `json:"customer"`
	Bot      bool   `json:"bot"`
}

// A Firehose stream's Lambda processor: each record answered Ok with its
// new data (and a dynamic partitioning key), Dropped, or, when the
// function fails, ProcessingFailed.
func ExampleMustFirehose() {
	h := handlers.MustFirehose(func(ctx context.Context, r handlers.FirehoseRecord[Click]) (handlers.FirehoseResult, error) {
		if r.Value.Bot {
			return handlers.Dropped(), nil
		}
		line := strings.ToUpper(r.Value.Customer) + "\n"
		return handlers.Transformed([]byte(line)).WithPartitionKeys(map[string]string{"customer": r.Value.Customer}), nil
	}, exampleOpts...)
	// In main: lambda.Start(h)

	data := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	event := `{"invocationId":"inv-1","deliveryStreamArn":"arn:aws:firehose:us-east-1:123456789012:deliverystream/clicks","region":"us-east-1",` +
		`"records":[{"recordId":"r1","approximateArrivalTimestamp":1495072949453,"data":"` + data(`{"customer":"acme"}`) + `"},` +
		`{"recordId":"r2","approximateArrivalTimestamp":1495072949453,"data":"` + data(`{"customer":"x","bot":true}`) + `"}]}`
	out, err := h.Invoke(context.Background(), []byte(event))
	fmt.Println(string(out), err)
	// Output:
	// {"records":[{"recordId":"r1","result":"Ok","data":"QUNNRQo=","metadata":{"partitionKeys":{"customer":"acme"}}},{"recordId":"r2","result":"Dropped","data":""}]} <nil>
}
