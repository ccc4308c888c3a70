package eventscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzS3 checks DecodeS3 against encoding/json.
func FuzzS3(f *testing.F) {
	for _, s := range []string{
		`{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-west-2","eventTime":"2024-05-01T10:00:00.000Z","eventName":"ObjectCreated:Put",` +
			`"s3":{"bucket":{"name":"b","arn":"arn:aws:s3:::b"},"object":{"key":"a+b%2Fc","size":1024,"sequencer":"0055AED6DCD90281E5"}}}]}`,
		`{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2014-10-13T15:57:02.089Z","Bucket":"b","RequestId":"r","HostId":"h"}`,
		`{"Records":[]}`, `{"Records":null}`, `{"Records":[{"s3":{"object":{"key":"%zz"}}}]}`, `{"Time":"x"}`, `{}`, `[]`, `{"records":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var ref S3
		refErr := json.Unmarshal(in, &ref)
		got, err := DecodeS3(in)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: DecodeS3 error %v, encoding/json %v", in, err, refErr)
		}
		if err == nil && !reflect.DeepEqual(got, ref) {
			t.Fatalf("%q:\nDecodeS3 %#v\nreference %#v", in, got, ref)
		}
	})
}
