package eventscan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

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

// FuzzKinesisDecode checks that DecodeKinesis and the encoding/json
// reference decoder agree on every input: both refuse it, or both decode
// the same records, data errors and redrive markers.
func FuzzKinesisDecode(f *testing.F) {
	kinesisSeeds(f)
	f.Add([]byte(`{"Records":[{"eventID":"e","newField":{"x":[1,"y"]},"kinesis":{"data":"eyJ9","extra":1}}],"more":true}`))
	f.Add([]byte(`{"Records":[{"kinesis":{"data":"eyJ9"},"sluiceSubSequenceNumber":2},{"sluiceSubSequenceNumber":-1}]}`))
	f.Add([]byte(`{"Records":[{"eventID":1}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, err := DecodeKinesis(in, nil)
		ref, rerr := refDecodeKinesisEvent(in)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%q: error %v, reference %v", in, err, rerr)
		}
		if err != nil {
			return
		}
		if len(fast.Records) != len(ref.Records) || (fast.Records == nil) != (ref.Records == nil) {
			t.Fatalf("%q: %d records (nil %t), reference %d", in, len(fast.Records), fast.Records == nil, len(ref.Records))
		}
		for i := range fast.Records {
			a, b := fast.Records[i], ref.Records[i]
			if !a.Kinesis.ApproximateArrivalTimestamp.Equal(b.Kinesis.ApproximateArrivalTimestamp.Time) {
				t.Fatalf("record %d arrival %v, reference %v", i, a.Kinesis.ApproximateArrivalTimestamp, b.Kinesis.ApproximateArrivalTimestamp)
			}
			a.Kinesis.ApproximateArrivalTimestamp, b.Kinesis.ApproximateArrivalTimestamp = events.SecondsEpochTime{}, events.SecondsEpochTime{}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("record %d of %q:\n  read %+v\nreference %+v", i, in, a, b)
			}
			if (errAt(fast.DataErrs, i) == nil) != (errAt(ref.DataErrs, i) == nil) {
				t.Fatalf("record %d of %q: data error %v, reference %v", i, in, errAt(fast.DataErrs, i), errAt(ref.DataErrs, i))
			}
			if at(fast.Only, i) != at(ref.Only, i) {
				t.Fatalf("record %d of %q: marker %d, reference %d", i, in, at(fast.Only, i), at(ref.Only, i))
			}
		}
	})
}

func errAt(errs []error, i int) error {
	if errs == nil {
		return nil
	}
	return errs[i]
}

func at(s []int64, i int) int64 {
	if s == nil {
		return 0
	}
	return s[i]
}

type refKinesisEvent struct {
	Records []refKinesisRecord `json:"Records"`
}

type refKinesisRecord struct {
	AwsRegion         string         `json:"awsRegion"`
	EventID           string         `json:"eventID"`
	EventName         string         `json:"eventName"`
	EventSource       string         `json:"eventSource"`
	EventSourceArn    string         `json:"eventSourceARN"`
	EventVersion      string         `json:"eventVersion"`
	InvokeIdentityArn string         `json:"invokeIdentityArn"`
	Kinesis           refKinesisData `json:"kinesis"`
	SubSequenceNumber *int64         `json:"sluiceSubSequenceNumber"`
}

type refKinesisData struct {
	ApproximateArrivalTimestamp epochSeconds `json:"approximateArrivalTimestamp"`
	Data                        string       `json:"data"`
	EncryptionType              string       `json:"encryptionType"`
	PartitionKey                string       `json:"partitionKey"`
	SequenceNumber              string       `json:"sequenceNumber"`
	KinesisSchemaVersion        string       `json:"kinesisSchemaVersion"`
}

// epochSeconds is the reference's arrival timestamp: a JSON number
// converted by secondsEpoch; null leaves it zero.
type epochSeconds struct{ time.Time }

func (e *epochSeconds) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	t, ok := secondsEpoch(b)
	if !ok {
		return fmt.Errorf("approximateArrivalTimestamp %s is not a number of seconds", b)
	}
	e.Time = t
	return nil
}

// refDecodeKinesisEvent is the reference decoder: encoding/json, with the
// base64 data decoded per record so one bad record does not fail the batch.
func refDecodeKinesisEvent(payload []byte) (KinesisEvent, error) {
	var ref refKinesisEvent
	if err := json.Unmarshal(payload, &ref); err != nil {
		return KinesisEvent{}, err
	}
	if ref.Records == nil {
		return KinesisEvent{}, nil
	}
	ev := KinesisEvent{Records: make([]events.KinesisEventRecord, len(ref.Records))}
	for i, r := range ref.Records {
		var data []byte
		var err error
		if r.Kinesis.Data != "" {
			data, err = base64.StdEncoding.DecodeString(r.Kinesis.Data)
		}
		if len(data) == 0 {
			data = nil
		}
		if err != nil {
			if ev.DataErrs == nil {
				ev.DataErrs = make([]error, len(ref.Records))
			}
			ev.DataErrs[i] = err
			data = nil
		}
		if n := r.SubSequenceNumber; n != nil {
			if ev.Only == nil {
				ev.Only = make([]int64, len(ref.Records))
			}
			if *n < 0 || *n >= 1<<31-1 {
				if ev.DataErrs == nil {
					ev.DataErrs = make([]error, len(ref.Records))
				}
				ev.DataErrs[i] = fmt.Errorf("bad marker %d", *n)
			} else {
				ev.Only[i] = *n + 1
			}
		}
		ev.Records[i] = events.KinesisEventRecord{
			AwsRegion: r.AwsRegion, EventID: r.EventID, EventName: r.EventName, EventSource: r.EventSource,
			EventSourceArn: r.EventSourceArn, EventVersion: r.EventVersion, InvokeIdentityArn: r.InvokeIdentityArn,
			Kinesis: events.KinesisRecord{
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: r.Kinesis.ApproximateArrivalTimestamp.Time},
				Data:                        data, EncryptionType: r.Kinesis.EncryptionType, PartitionKey: r.Kinesis.PartitionKey,
				SequenceNumber: r.Kinesis.SequenceNumber, KinesisSchemaVersion: r.Kinesis.KinesisSchemaVersion,
			},
		}
	}
	return ev, nil
}
