package handlers

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events/kpl"
)

// kinesisUser says where the user record at the same index of a
// deaggregated event comes from.
type kinesisUser struct {
	parent int32 // the index of its Kinesis record in the event
	sub    int32 // its index in the aggregate
	agg    bool  // it is a user record of an aggregate
	ehk    string
}

// deaggregate replaces each KPL aggregated record of ev by its user
// records, each a copy of the Kinesis record with the user record's data
// and partition key, and fills ev.users. An event without aggregates (and
// without redrive markers) is left as it is, ev.users nil: the price of
// the plain path is a look at four bytes per record.
//
// A record whose data is an aggregate with a matching checksum but a
// malformed protobuf stays one record, which fails to decode with the
// reason; so does a redrive marker naming a user record the record does not
// hold.
func (ev *kinesisEvent) deaggregate() {
	recs := ev.records
	found := ev.only != nil
	for i := range recs {
		if d := recs[i].Kinesis.Data; len(d) > len(kpl.Magic)+16 && string(d[:len(kpl.Magic)]) == kpl.Magic {
			found = true
			break
		}
	}
	if !found {
		return
	}
	type parsed struct {
		a   *kpl.Aggregate
		err error
	}
	aggs := make([]parsed, len(recs))
	store := make([]kpl.Aggregate, len(recs))
	total := 0
	for i := range recs {
		only := ev.onlyOf(i)
		if ev.dataErrs != nil && ev.dataErrs[i] != nil {
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
	out, users := kinesisUserRecords.get(), kinesisUsers.get()
	if cap(out) < total {
		out = make([]events.KinesisEventRecord, 0, total)
	}
	if cap(users) < total {
		users = make([]kinesisUser, 0, total)
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
			users = append(users, kinesisUser{parent: int32(i)})
			if ev.dataErrs != nil && ev.dataErrs[i] != nil {
				addErr(ev.dataErrs[i])
			} else if p.err != nil {
				addErr(p.err)
			}
			continue
		}
		from, to := 0, p.a.Len()
		if only := ev.onlyOf(i); only >= 0 {
			from, to = only, only+1
		}
		for k := from; k < to; k++ {
			pk, ehk, data, err := p.a.Keys(k)
			out = append(out, recs[i])
			u := &out[len(out)-1].Kinesis
			u.Data, u.PartitionKey = data, pk
			users = append(users, kinesisUser{parent: int32(i), sub: int32(k), agg: true, ehk: ehk})
			if err != nil {
				u.Data, u.PartitionKey = recs[i].Kinesis.Data, recs[i].Kinesis.PartitionKey
				addErr(fmt.Errorf("kinesis data is a KPL aggregated record whose user record %d cannot be read: %w; "+
					"that user record fails: fix its producer, and replay it from the dead-letter destination", k, err))
			}
		}
	}
	ev.parents, ev.records, ev.users, ev.dataErrs = recs, out, users, errs
}

// kinesisUserRecords and kinesisUsers keep a deaggregated event's slices
// for the next (KinesisHandler.Invoke puts them back).
var (
	kinesisUserRecords slicePool[events.KinesisEventRecord]
	kinesisUsers       slicePool[kinesisUser]
)

// release gives the event's slices back to their pools; nothing may use
// them afterwards.
func (ev *kinesisEvent) release() {
	if ev.users != nil {
		kinesisUserRecords.put(ev.records)
		kinesisUsers.put(ev.users)
		kinesisRecords.put(ev.parents)
		return
	}
	kinesisRecords.put(ev.records)
}

// onlyOf is the user record that record i's redrive marker names, or -1.
func (ev *kinesisEvent) onlyOf(i int) int {
	if ev.only == nil || ev.only[i] == 0 {
		return -1
	}
	return int(ev.only[i] - 1)
}

// user returns where record i of the (deaggregated) event comes from.
func (ev *kinesisEvent) user(i int) kinesisUser {
	if ev.users == nil {
		return kinesisUser{parent: int32(i)}
	}
	return ev.users[i]
}

// parentRecords is the event's Kinesis records as Lambda sent them.
func (ev *kinesisEvent) parentRecords() []events.KinesisEventRecord {
	if ev.users == nil {
		return ev.records
	}
	return ev.parents
}
