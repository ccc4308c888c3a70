package eventscan

import (
	"strings"
	"testing"
	"time"
)

// An MSK source's record: sourceMSKArn, kafkaRecordValue as the data, and
// mskRecordMetadata's offset and partitionId as Firehose writes them
// (strings; a number taken as its text, null as ""); a record with data
// is not one, whatever else it carries.
func TestDecodeFirehoseMSK(t *testing.T) {
	in := `{"invocationId":"i","sourceMSKArn":"arn:aws:kafka:x","region":"r","records":[
		{"recordId":"a","kafkaRecordValue":"SGk=","mskRecordMetadata":{"offset":"12","partitionId":"3","approximateArrivalTimestamp":1716369573887}},
		{"recordId":"b","kafkaRecordValue":"SGk=","mskRecordMetadata":{"offset":12,"partitionId":null,"Unknown":[1]}},
		{"recordId":"c","data":"SGk=","kafkaRecordValue":"not base64"},
		{"recordId":"d","kafkaRecordValue":"SGk="}]}`
	ev, err := DecodeFirehose([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if ev.SourceMSKArn != "arn:aws:kafka:x" || ev.InvocationID != "i" || ev.Region != "r" || len(ev.Records) != 4 || len(ev.MSK) != 4 {
		t.Fatalf("%+v", ev)
	}
	for i, r := range ev.Records {
		if string(r.Data) != "Hi" {
			t.Errorf("record %s: data %q", r.RecordID, r.Data)
		}
		if (ev.MSK[i] != nil) != (r.RecordID != "c") {
			t.Errorf("record %s: MSK %+v", r.RecordID, ev.MSK[i])
		}
	}
	if m := ev.MSK[0]; m.Offset != "12" || m.PartitionID != "3" || !m.ApproximateArrivalTimestamp.Equal(time.UnixMilli(1716369573887)) {
		t.Errorf("record a: %+v", m)
	}
	if m := ev.MSK[1]; m.Offset != "12" || m.PartitionID != "" || !m.ApproximateArrivalTimestamp.IsZero() {
		t.Errorf("record b: %+v", m)
	}
	if m := ev.MSK[3]; *m != (FirehoseMSK{}) {
		t.Errorf("record d: %+v", m)
	}

	// Events without an MSK record have no MSK slice.
	ev, err = DecodeFirehose([]byte(`{"records":[{"recordId":"a","data":"SGk="}]}`))
	if err != nil || ev.MSK != nil || ev.SourceMSKArn != "" {
		t.Fatalf("%+v %v", ev, err)
	}

	for in, want := range map[string]string{
		`{"records":[{"recordId":"a","kafkaRecordValue":"@"}]}`:                                    "record a: kafkaRecordValue is not base64",
		`{"records":[{"recordId":"a","kafkaRecordValue":1}]}`:                                      "kafkaRecordValue",
		`{"records":[{"recordId":"a","kafkaRecordValue":"SGk=","mskRecordMetadata":"x"}]}`:         "mskRecordMetadata",
		`{"records":[{"recordId":"a","kafkaRecordValue":"SGk=","mskRecordMetadata":{"offset":}}]}`: "invalid",
		`{"sourceMSKArn":1,"records":[]}`:                                                          "sourceMSKArn",
	} {
		if _, err := DecodeFirehose([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", in, err, want)
		}
	}
}
