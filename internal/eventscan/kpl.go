package eventscan

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events/kpl"
)

// A KinesisUser says where the user record at the same index of a
// deaggregated event comes from.
type KinesisUser struct {
	Parent int32  // the index of its Kinesis record in the event
	Sub    int32  // its index in the aggregate
	Agg    bool   // it is a user record of an aggregate
	EHK    string // its explicit hash key, "" for none
}

// HasAggregates reports whether Deaggregate has work on recs: a record's
// data starts with the KPL magic (and is long enough for a checksum), or a
// record carries a redrive marker (only, of DecodeKinesis, is not nil).
func HasAggregates(recs []events.KinesisEventRecord, only []int64) bool {
	if only != nil {
		return true
	}
	for i := range recs {
		if d := recs[i].Kinesis.Data; len(d) > len(kpl.Magic)+16 && string(d[:len(kpl.Magic)]) == kpl.Magic {
			return true
		}
	}
	return false
}

// Deaggregate replaces each KPL aggregated record of recs by its user
// records, each a copy of the Kinesis record with the user record's data
// and partition key, appended to out (of length 0); users says where each
// comes from, errs (nil when none) why one fails. dataErrs and marks (Only) are
// those of DecodeKinesis: a record whose data did not decode, and one
// whose redrive marker names a user record, are kept as they are or cut to
// that user record. Call it when HasAggregates.
//
// A record whose data is an aggregate with a matching checksum but a
// malformed protobuf stays one record, which fails to decode with the
// reason; so does a redrive marker naming a user record the record does not
// hold.
func Deaggregate(recs []events.KinesisEventRecord, dataErrs []error, marks []int64,
	out []events.KinesisEventRecord, users []KinesisUser) ([]events.KinesisEventRecord, []KinesisUser, []error) {
	type parsed struct {
		a   *kpl.Aggregate
		err error
	}
	aggs := make([]parsed, len(recs))
	store := make([]kpl.Aggregate, len(recs))
	total := 0
	for i := range recs {
		only := onlyOf(marks, i)
		if dataErrs != nil && dataErrs[i] != nil {
			total++
			continue
		}
		a := &store[i]
		ok, err := a.Read(recs[i].Kinesis.Data)
		switch {
		case err != nil:
			aggs[i].err = fmt.Errorf("kinesis data is a KPL aggregated record (its MD5 matches) that cannot be read: %w; "+
				"the record fails as a whole: fix its producer, and replay the record from the dead-letter destination or the stream", err)
			total++
		case !ok && only >= 0:
			aggs[i].err = fmt.Errorf("the record names user record %d of a KPL aggregate (%s) but its data is not an aggregate", only, dlq.SubSequenceField)
			total++
		case !ok:
			total++
		case only >= a.Len():
			aggs[i].err = fmt.Errorf("the record names user record %d of a KPL aggregate (%s) but the aggregate holds %d", only, dlq.SubSequenceField, a.Len())
			total++
		case only >= 0:
			aggs[i].a = a
			total++
		default:
			aggs[i].a = a
			total += a.Len()
		}
	}
	if cap(out) < total {
		out = make([]events.KinesisEventRecord, 0, total)
	}
	if cap(users) < total {
		users = make([]KinesisUser, 0, total)
	}
	var errs []error
	addErr := func(err error) {
		if errs == nil {
			errs = make([]error, total)
		}
		errs[len(out)-1] = err
	}
	for i := range recs {
		p := aggs[i]
		if p.a == nil {
			out = append(out, recs[i])
			users = append(users, KinesisUser{Parent: int32(i)})
			if dataErrs != nil && dataErrs[i] != nil {
				addErr(dataErrs[i])
			} else if p.err != nil {
				addErr(p.err)
			}
			continue
		}
		from, to := 0, p.a.Len()
		if only := onlyOf(marks, i); only >= 0 {
			from, to = only, only+1
		}
		for k := from; k < to; k++ {
			pk, ehk, data, err := p.a.Keys(k)
			out = append(out, recs[i])
			u := &out[len(out)-1].Kinesis
			u.Data, u.PartitionKey = data, pk
			users = append(users, KinesisUser{Parent: int32(i), Sub: int32(k), Agg: true, EHK: ehk})
			if err != nil {
				u.Data, u.PartitionKey = recs[i].Kinesis.Data, recs[i].Kinesis.PartitionKey
				addErr(fmt.Errorf("kinesis data is a KPL aggregated record whose user record %d cannot be read: %w; "+
					"that user record fails: fix its producer, and replay it from the dead-letter destination", k, err))
			}
		}
	}
	return out, users, errs
}

// onlyOf is the user record that record i's redrive marker names, or -1.
func onlyOf(only []int64, i int) int {
	if only == nil || only[i] == 0 {
		return -1
	}
	return int(only[i] - 1)
}
