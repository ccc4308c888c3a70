package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// The payloads below are shaped exactly as the AWS services write them.

// s3Record is one record of an S3 event notification, version 2.1 of
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html;
// key is as S3 writes it, URL-encoded.
func s3Record(key, sequencer string) string {
	return `{
      "eventVersion":"2.1",
      "eventSource":"aws:s3",
      "awsRegion":"us-west-2",
      "eventTime":"2024-05-01T10:00:00.000Z",
      "eventName":"ObjectCreated:Put",
      "userIdentity":{"principalId":"AWS:AIDAJDPLRKLG7UEXAMPLE"},
      "requestParameters":{"sourceIPAddress":"127.0.0.1"},
      "responseElements":{"x-amz-request-id":"C3D13FE58DE4C810","x-amz-id-2":"FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},
      "s3":{
        "s3SchemaVersion":"1.0",
        "configurationId":"testConfigRule",
        "bucket":{"name":"amzn-s3-demo-bucket","ownerIdentity":{"principalId":"A3NL1KOZZKExample"},"arn":"arn:aws:s3:::amzn-s3-demo-bucket"},
        "object":{"key":"` + key + `","size":1024,"eTag":"d41d8cd98f00b204e9800998ecf8427e","versionId":"096fKKXTRTtl3on89fVO.nfljtsv6qko","sequencer":"` + sequencer + `"}
      }
    }`
}

func s3Notification(records ...string) string {
	return `{"Records":[` + strings.Join(records, ",") + `]}`
}

// s3TestEvent is the message S3 sends when a notification is configured
// (the same page, "test message").
const s3TestEvent = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2014-10-13T15:57:02.089Z","Bucket":"amzn-s3-demo-bucket",` +
	`"RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`

// ddbChange is a change record as Kinesis Data Streams for DynamoDB writes
// it into a Kinesis record's data:
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/kds.html
// (the record format, with ApproximateCreationDateTime in milliseconds).
func ddbChange(eventID, name, newImage, oldImage string) string {
	images := ""
	if newImage != "" {
		images += `,"NewImage":` + newImage
	}
	if oldImage != "" {
		images += `,"OldImage":` + oldImage
	}
	return `{"awsRegion":"us-west-2","dynamodb":{"ApproximateCreationDateTime":1714557600123,` +
		`"Keys":{"Artist":{"S":"No One You Know"},"SongTitle":{"S":"Call Me Today"}}` + images +
		`,"SizeBytes":161,"ApproximateCreationDateTimePrecision":"MILLISECOND"},"eventID":"` + eventID + `","eventName":"` + name + `",` +
		`"userIdentity":null,"recordFormat":"application/json","tableName":"Music","eventSource":"aws:dynamodb"}`
}

type song struct {
	Artist    string `dynamodbav:"Artist"`
	SongTitle string `dynamodbav:"SongTitle"`
	Plays     int    `dynamodbav:"Plays"`
}

func sqsEventOf(t testing.TB, bodies ...string) ([]byte, []string) {
	t.Helper()
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-west-2:123456789012:orders"}
	for _, body := range bodies {
		b.Add(body)
	}
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ev.Records))
	for i, r := range ev.Records {
		ids[i] = r.MessageId
	}
	return raw, ids
}

func kinesisEventOf(t testing.TB, datas ...string) ([]byte, []string) {
	t.Helper()
	b := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-west-2:123456789012:stream/music"}
	var seqs []string
	for _, d := range datas {
		b.Add("pk", []byte(d))
		seqs = append(seqs, b.Last().Kinesis.SequenceNumber)
	}
	raw, err := json.Marshal(b.Event())
	if err != nil {
		t.Fatal(err)
	}
	return raw, seqs
}

func invoke(t *testing.T, h interface {
	Invoke(context.Context, []byte) ([]byte, error)
}, ev []byte) []string {
	t.Helper()
	out, err := h.Invoke(context.Background(), ev)
	if err != nil {
		t.Fatalf("function error: %v", err)
	}
	return failures(t, out)
}

func TestSNSMessageInSQS(t *testing.T) {
	ev, ids := sqsEventOf(t, awsevents.SNSNotification("63a3f6b6-d533-4a47-aef9-fcf5cf758c76", `{"id":"o-1","action":"ok"}`),
		awsevents.SNSNotification("8b1d1a51-0001-4a47-aef9-fcf5cf758c76", `{"id":"o-2","action":"fail"}`))
	var got []SNSMessage[msg]
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[SNSMessage[msg]]) error {
		got = append(got, r.Value)
		return act(r.Value.Message.Action)
	}, opts(WithConcurrency(1))...))
	if f := invoke(t, h, ev); !slices.Equal(f, ids[1:]) {
		t.Fatalf("reported %v, want the failed message %v", f, ids[1:])
	}
	if len(got) != 2 {
		t.Fatalf("ran %d records, want 2", len(got))
	}
	m := got[0]
	want := SNSMessage[msg]{Message: msg{"o-1", "ok"}, Text: `{"id":"o-1","action":"ok"}`, Type: "Notification",
		MessageID: "63a3f6b6-d533-4a47-aef9-fcf5cf758c76", TopicArn: "arn:aws:sns:us-west-2:123456789012:MyTopic",
		Subject: "Testing publish to subscribed queues", Timestamp: time.Date(2012, 3, 29, 5, 12, 16, 901e6, time.UTC),
		SignatureVersion: "1", Signature: "EXAMPLEnTrFPa3...",
		SigningCertURL: "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
		UnsubscribeURL: "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:us-west-2:123456789012:MyTopic:c7fe3a54-ab0e-4ec2-88e0-db410a0f2bee"}
	if !m.Timestamp.Equal(want.Timestamp) {
		t.Errorf("Timestamp %v, want %v", m.Timestamp, want.Timestamp)
	}
	m.Timestamp = want.Timestamp
	if !equalJSON(m, want) {
		t.Errorf("got\n %+v\nwant\n %+v", m, want)
	}
	if a := m.MessageAttributes(); !equalJSON(a, map[string]SNSMessageAttribute{"myKey1": {"String", "myValue1"}, "myKey2": {"String", "myValue2"}}) {
		t.Errorf("attributes %v", a)
	}
	if a := got[1].MessageAttributes(); len(a) != 2 {
		t.Errorf("attributes %v", a)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A body that is not an SNS notification (raw message delivery on, or
// another producer) fails alone, with an error that says what to do.
func TestSNSMessageNotANotification(t *testing.T) {
	ev, ids := sqsEventOf(t, `{"id":"o-1","action":"ok"}`, awsevents.SNSNotification("a", `"x"`), `{"Type":"SubscriptionConfirmation","MessageId":"b","Message":"m"}`)
	var errs []error
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[SNSMessage[string]]) error { return nil },
		opts(WithConcurrency(1), WithOnBatch(func(_ context.Context, r BatchReport) {
			for _, o := range r.Records {
				errs = append(errs, o.Err)
			}
		}))...))
	if f := invoke(t, h, ev); !slices.Equal(f, []string{ids[0], ids[2]}) {
		t.Fatalf("reported %v, want %v", f, []string{ids[0], ids[2]})
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "raw message delivery must be off") ||
		errs[2] == nil || !strings.Contains(errs[2].Error(), `Type "SubscriptionConfirmation"`) || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
}

func TestSNSMessageIdempotencyKey(t *testing.T) {
	// SNS delivers one notification twice (at-least-once): two SQS
	// messages, one SNS MessageId. The function runs once.
	n := awsevents.SNSNotification("63a3f6b6-d533-4a47-aef9-fcf5cf758c76", `{"id":"o-1","action":"ok"}`)
	ev, _ := sqsEventOf(t, n, n, awsevents.SNSNotification("other", `{"id":"o-2","action":"ok"}`))
	var runs []string
	var mu sync.Mutex
	var dups int
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[SNSMessage[msg]]) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, r.Value.Message.ID)
		return nil
	}, opts(WithConcurrency(1), WithIdempotency(idempotency.NewMemoryStore()), WithOnBatch(func(_ context.Context, r BatchReport) { dups = r.Duplicates }))...))
	if f := invoke(t, h, ev); len(f) != 0 {
		t.Fatalf("reported %v", f)
	}
	if !slices.Equal(runs, []string{"o-1", "o-2"}) || dups != 1 {
		t.Fatalf("ran %v with %d duplicates; want o-1 once, o-2, 1 duplicate", runs, dups)
	}
}

// A plain-text SNS message (the documentation's "Hello world!") into a
// string.
func TestSNSMessageString(t *testing.T) {
	ev, _ := sqsEventOf(t, awsevents.SNSNotification("a", "Hello world!"))
	var got string
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[SNSMessage[string]]) error { got = r.Value.Message; return nil }, quiet()...))
	if f := invoke(t, h, ev); len(f) != 0 || got != "Hello world!" {
		t.Fatalf("reported %v, message %q", f, got)
	}
}

type instanceState struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

func TestEventBridgeEventInSQSAndKinesis(t *testing.T) {
	detail := `{"instance-id": "i-1234567890abcdef0", "state": "terminated"}`
	want := EventBridgeEvent[instanceState]{Detail: instanceState{"i-1234567890abcdef0", "terminated"}, Version: "0",
		ID: "6a7e8feb-b491-4cf7-a9f1-bf3703467718", DetailType: "EC2 Instance State-change Notification", Source: "aws.ec2",
		Account: "111122223333", Time: time.Date(2017, 12, 22, 18, 43, 48, 0, time.UTC), Region: "us-west-1",
		Resources: []string{"arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"}}
	check := func(t *testing.T, got EventBridgeEvent[instanceState]) {
		if !got.Time.Equal(want.Time) {
			t.Errorf("Time %v", got.Time)
		}
		got.Time = want.Time
		if !equalJSON(got, want) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
	}
	t.Run("sqs", func(t *testing.T) {
		ev, ids := sqsEventOf(t, awsevents.EventBridgeEvent(want.ID, detail), awsevents.EventBridgeEvent("x", `"not an object"`), `{"detail":{}}`)
		var got []EventBridgeEvent[instanceState]
		h := must(NewSQS(func(ctx context.Context, r SQSRecord[EventBridgeEvent[instanceState]]) error {
			got = append(got, r.Value)
			return nil
		}, opts(WithConcurrency(1))...))
		if f := invoke(t, h, ev); !slices.Equal(f, ids[1:]) {
			t.Fatalf("reported %v, want %v (a detail of the wrong type, and no EventBridge event)", f, ids[1:])
		}
		if len(got) != 1 {
			t.Fatalf("ran %d", len(got))
		}
		check(t, got[0])
	})
	t.Run("kinesis", func(t *testing.T) {
		ev, _ := kinesisEventOf(t, awsevents.EventBridgeEvent(want.ID, detail))
		var got []EventBridgeEvent[instanceState]
		h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[EventBridgeEvent[instanceState]]) error {
			got = append(got, r.Value)
			return nil
		}, quiet()...))
		if f := invoke(t, h, ev); len(f) != 0 || len(got) != 1 {
			t.Fatalf("reported %v, ran %d", f, len(got))
		}
		check(t, got[0])
	})
	t.Run("idempotency key", func(t *testing.T) {
		// An event delivered twice to a Kinesis stream (two records, one id).
		ev, _ := kinesisEventOf(t, awsevents.EventBridgeEvent(want.ID, detail), awsevents.EventBridgeEvent(want.ID, detail))
		runs := 0
		h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[EventBridgeEvent[instanceState]]) error {
			runs++
			return nil
		}, opts(WithIdempotency(idempotency.NewMemoryStore()))...))
		if f := invoke(t, h, ev); len(f) != 0 || runs != 1 {
			t.Fatalf("reported %v, ran %d times; want once", f, runs)
		}
	})
}

func TestS3NotificationInSQS(t *testing.T) {
	two := s3Notification(s3Record("photos/my+summer%3D2024.jpg", "0055AED6DCD90281E5"), s3Record("a%2Fb+c.txt", "0055AED6DCD90281E6"))
	ev, ids := sqsEventOf(t, s3TestEvent, two, s3Notification(s3Record("fail.txt", "01")), `{"Records":[]}`)
	var got []S3Notification
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[S3Notification]) error {
		got = append(got, r.Value)
		for _, rec := range r.Value.Records {
			if rec.S3.Object.Key == "fail.txt" {
				return errors.New("cannot read fail.txt")
			}
		}
		return nil
	}, opts(WithConcurrency(1))...))
	// The test event is acknowledged without running; the message whose
	// S3 record failed is reported whole; so is the one without records.
	if f := invoke(t, h, ev); !slices.Equal(f, ids[2:]) {
		t.Fatalf("reported %v, want %v", f, ids[2:])
	}
	if len(got) != 2 || len(got[0].Records) != 2 {
		t.Fatalf("ran %d messages (%+v); want the two-record one and the failing one", len(got), got)
	}
	var keys []string
	for _, r := range got[0].Records {
		keys = append(keys, r.S3.Object.URLDecodedKey)
	}
	if !slices.Equal(keys, []string{"photos/my summer=2024.jpg", "a/b c.txt"}) {
		t.Fatalf("decoded keys %q", keys)
	}
	if k := (&got[0]).envelopeKey(); k != "amzn-s3-demo-bucket/photos/my+summer%3D2024.jpg@0055AED6DCD90281E5 amzn-s3-demo-bucket/a%2Fb+c.txt@0055AED6DCD90281E6" {
		t.Fatalf("idempotency key %q", k)
	}
}

// S3 notifications published to an SNS topic that an SQS queue subscribes
// to: the test event is skipped through the SNS envelope too.
func TestS3NotificationThroughSNS(t *testing.T) {
	ev, ids := sqsEventOf(t, awsevents.SNSNotification("t", s3TestEvent), awsevents.SNSNotification("n", s3Notification(s3Record("k", "01"))))
	var got []SNSMessage[S3Notification]
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[SNSMessage[S3Notification]]) error {
		got = append(got, r.Value)
		return errors.New("fail to show which ran")
	}, opts(WithConcurrency(1))...))
	if f := invoke(t, h, ev); !slices.Equal(f, ids[1:]) {
		t.Fatalf("reported %v, want %v", f, ids[1:])
	}
	if len(got) != 1 || got[0].MessageID != "n" || got[0].Message.Records[0].S3.Object.Key != "k" {
		t.Fatalf("ran %+v", got)
	}
}

// A retry of a message with several S3 records runs none of them again
// once the message succeeded: the key covers the message's records.
func TestS3NotificationIdempotency(t *testing.T) {
	n := s3Notification(s3Record("a", "01"), s3Record("b", "02"))
	ev, _ := sqsEventOf(t, n, n) // S3 delivered the notification twice
	runs := 0
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[S3Notification]) error { runs++; return nil },
		opts(WithConcurrency(1), WithIdempotency(idempotency.NewMemoryStore()))...))
	if f := invoke(t, h, ev); len(f) != 0 || runs != 1 {
		t.Fatalf("reported %v, ran %d; want once", f, runs)
	}
}

func TestDynamoDBChangeInKinesis(t *testing.T) {
	newImg := `{"Artist":{"S":"No One You Know"},"SongTitle":{"S":"Call Me Today"},"Plays":{"N":"11"}}`
	oldImg := `{"Artist":{"S":"No One You Know"},"SongTitle":{"S":"Call Me Today"},"Plays":{"N":"10"}}`
	ev, seqs := kinesisEventOf(t,
		ddbChange("4b25bd0da9a181a155114127e4837252", "MODIFY", newImg, oldImg),
		ddbChange("e2fd9c34eff2d779b297b26f5fef4206", "INSERT", `{"Artist":{"S":{"poison":"pill"}}}`, ""),
		ddbChange("0a9b0c4a5bbd3a9a7c4e9f8b0c3d2e1f", "REMOVE", "", oldImg))
	var got []DynamoDBChange[song]
	h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[DynamoDBChange[song]]) error {
		got = append(got, r.Value)
		return nil
	}, quiet()...))
	// The malformed image fails its record alone; the shard stops there.
	if f := invoke(t, h, ev); !slices.Equal(f, seqs[1:2]) {
		t.Fatalf("reported %v, want %v", f, seqs[1:2])
	}
	if len(got) != 1 {
		t.Fatalf("ran %d", len(got))
	}
	c := got[0]
	if c.EventName != "MODIFY" || c.EventID != "4b25bd0da9a181a155114127e4837252" || c.TableName != "Music" || c.SizeBytes != 161 ||
		c.New == nil || *c.New != (song{"No One You Know", "Call Me Today", 11}) || c.Old == nil || c.Old.Plays != 10 ||
		!c.CreationTime.Equal(time.UnixMilli(1714557600123)) || c.Expired() {
		t.Fatalf("got %+v (New %+v, Old %+v)", c, c.New, c.Old)
	}
	if k := c.Keys(); k["SongTitle"].String() != "Call Me Today" || c.NewImage()["Plays"].Number() != "11" {
		t.Fatalf("Keys %v", k)
	}

	// With the REMOVE alone, New is nil; with the record's own codec too.
	ev, _ = kinesisEventOf(t, ddbChange("r", "REMOVE", "", oldImg))
	got = nil
	h = must(NewKinesis(func(ctx context.Context, r KinesisRecord[DynamoDBChange[song]]) error {
		got = append(got, r.Value)
		return nil
	}, opts(WithCodec(StdJSON()))...))
	if f := invoke(t, h, ev); len(f) != 0 || len(got) != 1 || got[0].New != nil || got[0].Old.Plays != 10 {
		t.Fatalf("reported %v, got %+v", f, got)
	}
}

// The plain-text payload: a string value gets the payload's text as is,
// in an SQS body, Kinesis data and a Kafka value.
func TestStringValues(t *testing.T) {
	t.Run("sqs", func(t *testing.T) {
		ev, _ := sqsEventOf(t, "Hello World", "")
		var got []string
		h := must(NewSQS(func(ctx context.Context, r SQSRecord[string]) error { got = append(got, r.Value); return nil }, opts(WithConcurrency(1))...))
		if f := invoke(t, h, ev); len(f) != 0 || !slices.Equal(got, []string{"Hello World", ""}) {
			t.Fatalf("reported %v, got %q", f, got)
		}
	})
	t.Run("kinesis", func(t *testing.T) {
		ev, _ := kinesisEventOf(t, "Hello World", "2024-05-01 10:00:00 GET /index.html 200")
		var got []string
		h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[string]) error { got = append(got, r.Value); return nil }, quiet()...))
		if f := invoke(t, h, ev); len(f) != 0 || !slices.Equal(got, []string{"Hello World", "2024-05-01 10:00:00 GET /index.html 200"}) {
			t.Fatalf("reported %v, got %q", f, got)
		}
	})
	t.Run("kafka", func(t *testing.T) {
		b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-west-2:123456789012:cluster/c/1"}
		b.Add("logs", 0, nil, []byte("Hello World"))
		raw, err := json.Marshal(b.Event())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		h := must(NewKafka(func(ctx context.Context, r KafkaRecord[string]) error { got = append(got, r.Value); return nil }, quiet()...))
		if out, err := h.Invoke(context.Background(), raw); err != nil || !slices.Equal(got, []string{"Hello World"}) {
			t.Fatalf("%s %v, got %q", out, err, got)
		}
	})
}
