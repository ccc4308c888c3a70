package handlers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/idempotency"
)

// eventBridgeReplayed is an event EventBridge replayed from an archive:
// the event of
// https://docs.aws.amazon.com/eventbridge/latest/ref/overiew-event-structure.html
// with the replay-name EventBridge adds to a replayed event, as
// aws-powertools/powertools-lambda-typescript
// packages/parser/tests/events/eventbridge/base.json (commit
// 1e5fe1b497003615377ceb8e03b4321ce6260815) and
// powertools-lambda-python tests/events/eventBridgeEvent.json write it.
const eventBridgeReplayed = `{
  "version": "0",
  "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
  "detail-type": "EC2 Instance State-change Notification",
  "source": "aws.ec2",
  "account": "111122223333",
  "time": "2017-12-22T18:43:48Z",
  "region": "us-west-1",
  "resources": [
    "arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"
  ],
  "detail": {
    "instance_id": "i-1234567890abcdef0",
    "state": "terminated"
  },
  "replay-name": "replay_archive"
}`

// eventBridgeWithout is the same event as EventBridge writes it to a
// target, with its detail replaced by detail ("" leaves the member out):
// the shapes that reach a function only when someone wrote or reshaped
// the event (EventBridge always sends detail).
func eventBridgeWithout(detail string) string {
	ev := `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification",` +
		`"source":"aws.ec2","account":"111122223333","time":"2017-12-22T18:43:48Z","region":"us-west-1",` +
		`"resources":["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"]`
	if detail != "" {
		ev += `,"detail":` + detail
	}
	return ev + `}`
}

type ec2State struct {
	InstanceID string `json:"instance_id"`
	State      string `json:"state"`
}

// An event without detail, or with "detail": null, fails its record
// permanently with an error that names detail, through the reader and
// through the general decoder (an unknown key sends an event there), with
// either codec; the function never sees it.
func TestEventBridgeEventWithoutDetail(t *testing.T) {
	for _, body := range []string{
		eventBridgeWithout(""), eventBridgeWithout("null"), eventBridgeWithout(" null "),
		strings.Replace(eventBridgeWithout(""), `"version"`, `"extra":1,"version"`, 1),
		strings.Replace(eventBridgeWithout("null"), `"version"`, `"extra":1,"version"`, 1),
	} {
		for _, codec := range []Codec{JSON(), StdJSON()} {
			for _, decode := range []func([]byte) error{
				func(b []byte) error { var v EventBridgeEvent[ec2State]; return decodeValue(codec, b, &v) },
				func(b []byte) error { var v EventBridgeEvent[*ec2State]; return decodeValue(codec, b, &v) },
				func(b []byte) error { var v EventBridgeEvent[[]byte]; return decodeValue(codec, b, &v) },
			} {
				err := decode([]byte(body))
				if err == nil || !strings.Contains(err.Error(), `"detail"`) || !strings.Contains(err.Error(), "7bf73129-1428-4cd3-a780-95db273d1602") {
					t.Errorf("%s: error %v, want one that names detail and the event", body, err)
				}
			}
		}
	}
	ev, ids := sqsEventOf(t, eventBridgeWithout(`{"instance_id":"i-1","state":"running"}`), eventBridgeWithout(""), eventBridgeWithout("null"))
	var ran []string
	var errs []error
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[EventBridgeEvent[ec2State]]) error {
		ran = append(ran, r.Value.Detail.State)
		return nil
	}, opts(WithConcurrency(1), WithOnBatch(func(_ context.Context, r BatchReport) {
		for _, o := range r.Records {
			errs = append(errs, o.Err)
		}
	}))...))
	if f := invoke(t, h, ev); !slices.Equal(f, ids[1:]) || !slices.Equal(ran, []string{"running"}) {
		t.Fatalf("reported %v, ran %v; want the two without a detail reported and not run", f, ran)
	}
	for _, err := range errs[1:] {
		var de *batch.DecodeError
		if !errors.As(err, &de) || batch.Classify(err) != batch.ClassPermanent {
			t.Errorf("error %v: want a permanent decode error", err)
		}
	}
}

// A replayed event carries its replay's name, and its default idempotency
// key is kept apart from the live event's: the replay runs the event
// again; a redelivery of the replayed event does not.
func TestEventBridgeReplay(t *testing.T) {
	live := strings.Replace(eventBridgeReplayed, `,
  "replay-name": "replay_archive"`, "", 1)
	for _, codec := range []Codec{JSON(), StdJSON()} {
		var v EventBridgeEvent[ec2State]
		if err := decodeValue(codec, []byte(eventBridgeReplayed), &v); err != nil {
			t.Fatal(err)
		}
		if v.ReplayName != "replay_archive" || v.Detail.State != "terminated" || v.ID != "6a7e8feb-b491-4cf7-a9f1-bf3703467718" {
			t.Fatalf("%+v", v)
		}
		if k := v.envelopeKey(); k != "6a7e8feb-b491-4cf7-a9f1-bf3703467718/replay/replay_archive" {
			t.Fatalf("key %q", k)
		}
		var l EventBridgeEvent[ec2State]
		if err := decodeValue(codec, []byte(live), &l); err != nil || l.ReplayName != "" || l.envelopeKey() != l.ID {
			t.Fatalf("live event %+v: %v", l, err)
		}
	}
	ev, _ := kinesisEventOf(t, live, eventBridgeReplayed, eventBridgeReplayed, live)
	runs := 0
	h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[EventBridgeEvent[ec2State]]) error { runs++; return nil },
		opts(WithIdempotency(idempotency.NewMemoryStore()))...))
	if f := invoke(t, h, ev); len(f) != 0 || runs != 2 {
		t.Fatalf("reported %v, ran %d times; want the live event once and the replay once", f, runs)
	}
}

// The S3 events EventBridge delivers, as
// aws-powertools/powertools-lambda-typescript
// packages/parser/tests/events/s3/eventbridge-object-created.json,
// -object-deleted.json, -object-expired.json and -object-restored.json
// (commit 1e5fe1b497003615377ceb8e03b4321ce6260815) write them, and the
// Object Created example of
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html
// (with its version-id and event-version).
var s3EventBridgeEvents = map[string]string{
	"created": `{
  "version": "0",
  "id": "f5f1e65c-dc3a-93ca-6c1e-b1647eac7963",
  "detail-type": "Object Created",
  "source": "aws.s3",
  "account": "123456789012",
  "time": "2023-03-08T17:50:14Z",
  "region": "eu-west-1",
  "resources": ["arn:aws:s3:::example-bucket"],
  "detail": {
    "version": "0",
    "bucket": {
      "name": "example-bucket"
    },
    "object": {
      "key": "IMG_m7fzo3.jpg",
      "size": 184662,
      "etag": "4e68adba0abe2dc8653dc3354e14c01d",
      "sequencer": "006408CAD69598B05E"
    },
    "request-id": "57H08PA84AB1JZW0",
    "requester": "123456789012",
    "source-ip-address": "34.252.34.74",
    "reason": "PutObject"
  }
}`,
	"deleted": `{
  "version": "0",
  "id": "2ee9cc15-d022-99ea-1fb8-1b1bac4850f9",
  "detail-type": "Object Deleted",
  "source": "aws.s3",
  "account": "111122223333",
  "time": "2021-11-12T00:00:00Z",
  "region": "ca-central-1",
  "resources": ["arn:aws:s3:::example-bucket"],
  "detail": {
    "version": "0",
    "bucket": {
      "name": "example-bucket"
    },
    "object": {
      "key": "IMG_m7fzo3.jpg",
      "sequencer": "006408CAD69598B05E"
    },
    "request-id": "0BH729840619AG5K",
    "requester": "123456789012",
    "source-ip-address": "34.252.34.74",
    "reason": "DeleteObject",
    "deletion-type": "Delete Marker Created"
  }
}`,
	"expired": `{
  "version": "0",
  "id": "ad1de317-e409-eba2-9552-30113f8d88e3",
  "detail-type": "Object Deleted",
  "source": "aws.s3",
  "account": "111122223333",
  "time": "2021-11-12T00:00:00Z",
  "region": "ca-central-1",
  "resources": ["arn:aws:s3:::example-bucket"],
  "detail": {
    "version": "0",
    "bucket": {
      "name": "example-bucket"
    },
    "object": {
      "key": "IMG_m7fzo3.jpg",
      "size": 184662,
      "etag": "4e68adba0abe2dc8653dc3354e14c01d",
      "sequencer": "006408CAD69598B05E"
    },
    "request-id": "20EB74C14654DC47",
    "requester": "s3.amazonaws.com",
    "reason": "Lifecycle Expiration",
    "deletion-type": "Delete Marker Created"
  }
}`,
	"restored": `{
  "version": "0",
  "id": "6924de0d-13e2-6bbf-c0c1-b903b753565e",
  "detail-type": "Object Restore Completed",
  "source": "aws.s3",
  "account": "111122223333",
  "time": "2021-11-12T00:00:00Z",
  "region": "ca-central-1",
  "resources": ["arn:aws:s3:::example-bucket"],
  "detail": {
    "version": "0",
    "bucket": {
      "name": "example-bucket"
    },
    "object": {
      "key": "IMG_m7fzo3.jpg",
      "size": 184662,
      "etag": "4e68adba0abe2dc8653dc3354e14c01d",
      "sequencer": "006408CAD69598B05E"
    },
    "request-id": "189F19CB7FB1B6A4",
    "requester": "s3.amazonaws.com",
    "restore-expiry-time": "2021-11-13T00:00:00Z",
    "source-storage-class": "GLACIER"
  }
}`,
	"docs": `{
  "version": "0",
  "id": "17793124-05d4-b198-2fde-7ededc63b103",
  "detail-type": "Object Created",
  "source": "aws.s3",
  "account": "111122223333",
  "time": "2021-11-12T00:00:00Z",
  "region": "ca-central-1",
  "resources": [
    "arn:aws:s3:::amzn-s3-demo-bucket1"
  ],
  "detail": {
    "version": "0",
    "event-version": "1.0",
    "bucket": {
      "name": "amzn-s3-demo-bucket1"
    },
    "object": {
      "key": "example-key",
      "size": 5,
      "etag": "b1946ac92492d2347c6235b4d2611184",
      "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
      "sequencer": "617f08299329d189"
    },
    "request-id": "N4N7GDK58NMKJ12R",
    "requester": "123456789012",
    "source-ip-address": "1.2.3.4",
    "reason": "PutObject"
  }
}`,
}

func TestS3EventBridgeDetail(t *testing.T) {
	names := []string{"created", "deleted", "expired", "restored", "docs"}
	bodies := make([]string, len(names))
	for i, n := range names {
		bodies[i] = s3EventBridgeEvents[n]
	}
	ec2 := eventBridgeWithout(`{"instance_id":"i-1","state":"running"}`)
	ev, ids := sqsEventOf(t, append(bodies, ec2)...)
	var got []EventBridgeEvent[S3EventBridgeDetail]
	var errs []error
	h := must(NewSQS(func(ctx context.Context, r SQSRecord[EventBridgeEvent[S3EventBridgeDetail]]) error {
		got = append(got, r.Value)
		return nil
	}, opts(WithConcurrency(1), WithOnBatch(func(_ context.Context, r BatchReport) {
		for _, o := range r.Records {
			errs = append(errs, o.Err)
		}
	}))...))
	if f := invoke(t, h, ev); !slices.Equal(f, ids[len(names):]) || len(got) != len(names) {
		t.Fatalf("reported %v, ran %d; want the EC2 event reported, not run", f, len(got))
	}
	if err := errs[len(names)]; err == nil || !strings.Contains(err.Error(), `source is "aws.ec2", not "aws.s3"`) {
		t.Fatalf("EC2 event: %v", err)
	}
	c, d, x, r, doc := got[0], got[1], got[2], got[3], got[4]
	if c.DetailType != "Object Created" || c.Detail.Bucket.Name != "example-bucket" || c.Detail.Object != (S3EventBridgeObject{Key: "IMG_m7fzo3.jpg", Size: 184662,
		ETag: "4e68adba0abe2dc8653dc3354e14c01d", Sequencer: "006408CAD69598B05E"}) || c.Detail.Reason != "PutObject" || c.Detail.SourceIPAddress != "34.252.34.74" ||
		c.Detail.RequestID != "57H08PA84AB1JZW0" || c.Detail.Requester != "123456789012" || c.envelopeKey() != "f5f1e65c-dc3a-93ca-6c1e-b1647eac7963" {
		t.Errorf("created: %+v", c)
	}
	if d.DetailType != "Object Deleted" || d.Detail.DeletionType != "Delete Marker Created" || d.Detail.Reason != "DeleteObject" || d.Detail.Object.Size != 0 {
		t.Errorf("deleted: %+v", d)
	}
	if x.Detail.Reason != "Lifecycle Expiration" || x.Detail.Requester != "s3.amazonaws.com" || x.Detail.SourceIPAddress != "" {
		t.Errorf("expired: %+v", x)
	}
	if r.DetailType != "Object Restore Completed" || r.Detail.RestoreExpiryTime != "2021-11-13T00:00:00Z" || r.Detail.SourceStorageClass != "GLACIER" {
		t.Errorf("restored: %+v", r)
	}
	if doc.Detail.Object.VersionID != "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e" || doc.Detail.Version != "0" || doc.Resources[0] != "arn:aws:s3:::amzn-s3-demo-bucket1" {
		t.Errorf("docs: %+v", doc)
	}
}
