package idemlatency_test

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
)

// s3Notification is an S3 event notification of one object, shaped as S3
// writes it into an SQS message (the object key URL-encoded, spaces as
// "+"): https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html
func s3Notification(objectKey, sequencer string) string {
	return `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-west-2",` +
		`"eventTime":"2024-05-01T10:00:00.000Z","eventName":"ObjectCreated:Put",` +
		`"userIdentity":{"principalId":"AWS:AIDAJDPLRKLG7UEXAMPLE"},"requestParameters":{"sourceIPAddress":"127.0.0.1"},` +
		`"responseElements":{"x-amz-request-id":"C3D13FE58DE4C810","x-amz-id-2":"FMyUVURIY8/IgAtTv8xRjskZQpcIZ9KG4V5Wp6S7S/JRWeUWerMUE5JgHvANOjpD"},` +
		`"s3":{"s3SchemaVersion":"1.0","configurationId":"photos",` +
		`"bucket":{"name":"amzn-s3-demo-bucket","ownerIdentity":{"principalId":"A3NL1KOZZKExample"},"arn":"arn:aws:s3:::amzn-s3-demo-bucket"},` +
		`"object":{"key":"` + url.QueryEscape(objectKey) + `","size":1024,"eTag":"d41d8cd98f00b204e9800998ecf8427e","sequencer":"` + sequencer + `"}}}]}`
}

// TestLongKeys: keys no store may refuse, through a handler, on DynamoDB
// Local and redis-server. S3 allows object keys of 1,024 bytes of UTF-8;
// S3Notification's default idempotency key holds the key URL-encoded, so
// a 1,000-byte name of accented Latin or CJK characters makes a key of
// about 3,000 bytes, past DynamoDB's 2,048-byte partition key. Before
// idempotency.StoredKey, DynamoDB refused its claim on every receive, and
// the batch's lookup (one request for every message) failed with it. A
// business key (WithIdempotencyKey) can be as long. Each batch runs its
// messages once, and again not at all.
func TestLongKeys(t *testing.T) {
	accented := strings.Repeat("é", 499) + "x.jpg"      // 1,002 bytes of UTF-8
	cjk := strings.Repeat("\u7ea2", 331) + "/photo.jpg" // 1,003 bytes
	if len(accented) < 1000 || len(cjk) < 1000 {
		t.Fatalf("object keys of %d and %d bytes, want 1,000 or more", len(accented), len(cjk))
	}
	sb := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:photos"}
	sb.Add(s3Notification(accented, "0055AED6DCD90281E5"))
	sb.Add(s3Notification(cjk, "0055AED6DCD90281E6"))
	sb.Add(s3Notification("short.jpg", "0055AED6DCD90281E7"))
	notifications, err := sevents.MarshalEvent(sb.Event())
	if err != nil {
		t.Fatal(err)
	}
	type order struct {
		Ref string `json:"ref"`
	}
	ob := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	ob.Add(`{"ref":"` + strings.Repeat("ref-", 1500) + `1"}`) // a 6,001-byte business key
	ob.Add(`{"ref":"` + strings.Repeat("ref-", 1500) + `2"}`) // the same head, another key
	ob.Add(`{"ref":"short"}`)
	orders, err := sevents.MarshalEvent(ob.Event())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, be := range backends(t, 0) {
		t.Run(be.name, func(t *testing.T) {
			defer be.close()
			var runs atomic.Int64
			s3h, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[handlers.S3Notification]) error {
				runs.Add(1)
				return nil
			}, handlers.WithIdempotency(be.fresh(t)), quiet)
			if err != nil {
				t.Fatal(err)
			}
			keyed, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[order]) error {
				runs.Add(1)
				return nil
			}, handlers.WithIdempotency(be.fresh(t)), quiet,
				handlers.WithIdempotencyKey(func(r handlers.SQSRecord[order]) string { return r.Value.Ref }))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name   string
				invoke func(context.Context, []byte) ([]byte, error)
				event  []byte
			}{{"S3Notification", s3h.Invoke, notifications}, {"WithIdempotencyKey", keyed.Invoke, orders}} {
				for pass, want := range []int64{3, 0} {
					runs.Store(0)
					out, err := tc.invoke(ctx, tc.event)
					if err != nil || string(out) != `{"batchItemFailures":[]}` {
						t.Fatalf("%s, pass %d: %s %v; want every message done", tc.name, pass+1, out, err)
					}
					if runs.Load() != want {
						t.Fatalf("%s, pass %d: the function ran %d times, want %d", tc.name, pass+1, runs.Load(), want)
					}
				}
			}
		})
	}
	if n := len(idempotency.StoredKey("fn#amzn-s3-demo-bucket/"+url.QueryEscape(cjk)+"@0055AED6DCD90281E6", 2048)); n > 2048 {
		t.Fatalf("the stored form of the CJK key has %d bytes", n)
	}
}
