package eventscan

import (
	"crypto/md5"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/events/kpl"
)

func kinesisRec(pk string, data []byte) events.KinesisEventRecord {
	var r events.KinesisEventRecord
	r.Kinesis.PartitionKey, r.Kinesis.Data = pk, data
	return r
}

func TestDeaggregate(t *testing.T) {
	agg := kpl.Encode([]kpl.Record{{PartitionKey: "a", Data: []byte("1")}, {PartitionKey: "b", ExplicitHashKey: "7", Data: []byte("2")}})
	// A matching checksum over bytes that are not an AggregatedRecord.
	junk := []byte{0xff, 0xff, 0xff}
	sum := md5.Sum(junk)
	bad := append(append([]byte(kpl.Magic), junk...), sum[:]...)
	plain := kinesisRec("p", []byte("plain"))
	if HasAggregates([]events.KinesisEventRecord{plain}, nil) {
		t.Fatal("a plain record has no aggregate")
	}
	if !HasAggregates([]events.KinesisEventRecord{plain}, []int64{0}) || !HasAggregates([]events.KinesisEventRecord{kinesisRec("k", agg)}, nil) {
		t.Fatal("a redrive marker or an aggregate is work")
	}
	for _, tc := range []struct {
		name  string
		recs  []events.KinesisEventRecord
		marks []int64
		pks   []string
		errs  []string // per output record, "" for none
	}{
		{"aggregate between plain records", []events.KinesisEventRecord{plain, kinesisRec("k", agg), plain}, nil,
			[]string{"p", "a", "b", "p"}, []string{"", "", "", ""}},
		{"malformed aggregate fails whole", []events.KinesisEventRecord{kinesisRec("k", bad)}, nil,
			[]string{"k"}, []string{"cannot be read"}},
		{"marker names one user record", []events.KinesisEventRecord{kinesisRec("k", agg)}, []int64{2},
			[]string{"b"}, []string{""}},
		{"marker past the aggregate", []events.KinesisEventRecord{kinesisRec("k", agg)}, []int64{3},
			[]string{"k"}, []string{"the aggregate holds 2"}},
		{"marker on a plain record", []events.KinesisEventRecord{plain}, []int64{1},
			[]string{"p"}, []string{"not an aggregate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, users, errs := Deaggregate(tc.recs, nil, tc.marks, nil, nil)
			if len(out) != len(tc.pks) || len(users) != len(out) {
				t.Fatalf("%d records, %d users, want %d", len(out), len(users), len(tc.pks))
			}
			for i := range out {
				if out[i].Kinesis.PartitionKey != tc.pks[i] {
					t.Errorf("record %d: partition key %q, want %q", i, out[i].Kinesis.PartitionKey, tc.pks[i])
				}
				var err error
				if errs != nil {
					err = errs[i]
				}
				if tc.errs[i] == "" && err != nil || tc.errs[i] != "" && (err == nil || !strings.Contains(err.Error(), tc.errs[i])) {
					t.Errorf("record %d: error %v, want %q", i, err, tc.errs[i])
				}
			}
		})
	}
	out, users, _ := Deaggregate([]events.KinesisEventRecord{plain, kinesisRec("k", agg)}, nil, nil, nil, nil)
	if u := users[2]; u.Parent != 1 || u.Sub != 1 || !u.Agg || u.EHK != "7" || string(out[2].Kinesis.Data) != "2" || users[0].Agg {
		t.Fatalf("users %+v", users)
	}
}
