package localtest

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/events/kpl"
)

func gzipped(t *testing.T, s string) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(s))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPayloadShows(t *testing.T) {
	test := `{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"b"}`
	sns := `{"Type":"Notification","MessageId":"m","Message":` + strconv.Quote(test) + `}`
	for _, tt := range []struct {
		name    string
		payload []byte
		reason  string
		want    bool
	}{
		{"test event", []byte(test), SkipS3TestEvent, true},
		{"through SNS", []byte(sns), SkipS3TestEvent, true},
		{"an order", []byte(`{"id":"o1"}`), SkipS3TestEvent, false},
		{"not JSON", []byte(`s3:TestEvent`), SkipS3TestEvent, false},
		{"control message", gzipped(t, `{"messageType":"CONTROL_MESSAGE","owner":"CloudwatchLogs","logEvents":[]}`), SkipControlMessage, true},
		{"data message", gzipped(t, `{"messageType":"DATA_MESSAGE","logEvents":[]}`), SkipControlMessage, false},
		{"not gzip", []byte(`{"messageType":"CONTROL_MESSAGE"}`), SkipControlMessage, false},
		{"a duplicate is not shown by its payload", []byte(test), SkipDuplicate, false},
	} {
		if got := payloadShows(tt.payload, tt.reason); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPayloadItems(t *testing.T) {
	two := `{"Records":[{"eventSource":"aws:s3","s3":{}},{"eventSource":"aws:s3","s3":{}}]}`
	for _, tt := range []struct {
		payload string
		want    int
	}{
		{two, 2},
		{`{"Type":"Notification","Message":` + strconv.Quote(two) + `}`, 2},
		{`{"Records":[{"eventSource":"aws:s3"},{"eventSource":"aws:sqs"}]}`, 0},
		{`{"id":"aws:s3"}`, 0},
		{`{"Service":"Amazon S3","Event":"s3:TestEvent"}`, 0},
		{`not json aws:s3`, 0},
	} {
		if got := payloadItems([]byte(tt.payload)); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.payload, got, tt.want)
		}
	}
}

// A Kinesis record from a real stream that holds a KPL aggregate stands
// for its user records; one whose aggregate does not parse stays one
// record, as the handlers fail it whole.
func TestDeaggregated(t *testing.T) {
	data := kpl.Encode([]kpl.Record{{PartitionKey: "a", Data: []byte(`{"id":"u0"}`)}, {PartitionKey: "b", Data: []byte(`{"id":"u1"}`)}})
	ref := deaggregated(inputRef{id: "49", key: "a", payload: data})
	if len(ref.users) != 2 || ref.users[1].id != "49:1" || ref.users[1].key != "b" || ref.users[1].name() != "49:1 (id u1)" {
		t.Fatalf("%+v", ref.users)
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)-1] ^= 1 // the checksum no longer matches
	if ref := deaggregated(inputRef{id: "50", payload: bad}); ref.users != nil {
		t.Fatalf("a bad aggregate: %+v", ref.users)
	}
	recs := runRecords([]inputRef{{id: "48"}, ref, {id: "51"}})
	if len(recs) != 4 || recs[1].id != "49:0" || recs[3].id != "51" {
		t.Fatalf("%+v", recs)
	}
	fates, aggs := runFates([]inputRef{{id: "48"}, ref}, map[string]string{"48": FateProcessed, "49": FateOnFailure})
	if len(fates) != 3 || fates["49:1"] != FateOnFailure || fates["48"] != FateProcessed || aggs["49"] != 2 {
		t.Fatalf("%v %v", fates, aggs)
	}
}
