package eventscan

import (
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func kinesisSeeds(f *testing.F) {
	f.Add(kinesisTestEvent("ok", "fail", "ok"))
	f.Add(kinesisFixture(f, 3))
	for _, s := range []string{
		`{}`, `{"Records":null}`, `{"Records":[]}`, `{"Records":[{}]}`, ` {"Records" : [ { "kinesis" : { "data" : "" } } ] } `,
		`{"Records":[{"eventID":"a\u0062c","kinesis":{"data":"eyJ9"}}]}`,
		`{"Records":[{"EventID":"x","kinesis":{"Data":"eyJ9"}}]}`,
		`{"Records":[{"kinesis":{"data":"ey\/J9"}}]}`,
		`{"Records":[{"kinesis":{"data":"eyJ9\n"}}]}`,
		`{"Records":[{"kinesis":{"data":"%%%"}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":1545084650.987,"sequenceNumber":"1"}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":1e3}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":-1.5}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":null}}]}`,
		`{"Records":[{"kinesis":{"partitionKey":"é"}}]}`,
		`{"Records":[{"kinesis":{}}],"Records":[]}`,
		`{"Records":[{"awsRegion":"a"},{"awsRegion":"a"},{"awsRegion":"b"}]}`,
		`{"Records":[]} x`, `{"Records":[`, `{"Records":[{"kinesis":{"data":"eyJ9"}}]`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzKinesisDecode checks that the hand-written scanner and the
// encoding/json reference decoder agree on every input the scanner accepts.
func FuzzKinesisDecode(f *testing.F) {
	kinesisSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := scanKinesisEvent(in, nil)
		ref, err := refDecodeKinesisEvent(in)
		if !ok {
			return // the reference decides
		}
		if err != nil {
			t.Fatalf("scanner accepted what encoding/json rejects (%v): %q", err, in)
		}
		if ref.DataErrs != nil {
			t.Fatalf("scanner accepted data the reference cannot decode: %v", ref.DataErrs)
		}
		if len(fast.Records) != len(ref.Records) {
			t.Fatalf("%d records, reference %d", len(fast.Records), len(ref.Records))
		}
		for i := range fast.Records {
			a, b := fast.Records[i], ref.Records[i]
			if !a.Kinesis.ApproximateArrivalTimestamp.Equal(b.Kinesis.ApproximateArrivalTimestamp.Time) {
				t.Fatalf("record %d arrival %v, reference %v", i, a.Kinesis.ApproximateArrivalTimestamp, b.Kinesis.ApproximateArrivalTimestamp)
			}
			a.Kinesis.ApproximateArrivalTimestamp, b.Kinesis.ApproximateArrivalTimestamp = events.SecondsEpochTime{}, events.SecondsEpochTime{}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("record %d:\n scanner %+v\nreference %+v", i, a, b)
			}
		}
	})
}
