// Package awsevents builds test payloads shaped exactly as the AWS services
// write them, for the tests of handlers and internal/eventscan (each page
// cited where its shape comes from). Test support: no shipped package
// imports it.
package awsevents

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// SNSNotification is an SNS notification as SNS delivers it to a
// subscribed SQS queue with raw message delivery off: the document of
// https://docs.aws.amazon.com/sns/latest/dg/sns-sqs-as-subscriber.html
// (Fanout to Amazon SQS queues), with the MessageAttributes of
// https://docs.aws.amazon.com/sns/latest/dg/sns-large-payload-raw-message-delivery.html
// and message as Message.
func SNSNotification(id, message string) string {
	m, _ := json.Marshal(message)
	return `{
  "Type" : "Notification",
  "MessageId" : "` + id + `",
  "TopicArn" : "arn:aws:sns:us-west-2:123456789012:MyTopic",
  "Subject" : "Testing publish to subscribed queues",
  "Message" : ` + string(m) + `,
  "Timestamp" : "2012-03-29T05:12:16.901Z",
  "SignatureVersion" : "1",
  "Signature" : "EXAMPLEnTrFPa3...",
  "SigningCertURL" : "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
  "UnsubscribeURL" : "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c7fe3a54-ab0e-4ec2-88e0-db410a0f2bee",
  "MessageAttributes" : {
    "myKey1" : {"Type":"String","Value":"myValue1"},
    "myKey2" : {"Type":"String","Value":"myValue2"}
  }
}`
}

// EventBridgeEvent is an event as EventBridge delivers it to a target: the
// structure of
// https://docs.aws.amazon.com/eventbridge/latest/ref/overiew-event-structure.html
// (the EC2 example), with detail as its detail.
func EventBridgeEvent(id, detail string) string {
	return `{
  "version": "0",
  "id": "` + id + `",
  "detail-type": "EC2 Instance State-change Notification",
  "source": "aws.ec2",
  "account": "111122223333",
  "time": "2017-12-22T18:43:48Z",
  "region": "us-west-1",
  "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],
  "detail": ` + detail + `
}`
}

// KafkaSchemaEvent is a Kafka event with one record per value, each with
// the schema metadata an event source mapping with a schema registry adds
// (keyMeta, valueMeta: the metadata objects' JSON, or "" for none; key ""
// for records without a key).
func KafkaSchemaEvent(key string, keyMeta string, values []string, valueMeta string) []byte {
	var recs []string
	for i, v := range values {
		r := fmt.Sprintf(`{"topic":"orders","partition":0,"offset":%d,"timestamp":1545084650987,"timestampType":"CREATE_TIME","headers":[]`, i)
		if key != "" {
			r += `,"key":"` + base64.StdEncoding.EncodeToString([]byte(key)) + `"`
		}
		r += `,"value":"` + base64.StdEncoding.EncodeToString([]byte(v)) + `"`
		if keyMeta != "" {
			r += `,"keySchemaMetadata":` + keyMeta
		}
		if valueMeta != "" {
			r += `,"valueSchemaMetadata":` + valueMeta
		}
		recs = append(recs, r+"}")
	}
	return []byte(`{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:us-east-1:123456789012:cluster/c/abc","bootstrapServers":"b-1:9092","records":{"orders-0":[` + strings.Join(recs, ",") + `]}}`)
}
