package handlers

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/slicepool"
)

// deaggregate replaces each KPL aggregated record of ev by its user
// records (eventscan.Deaggregate, which says what fails how), and fills
// ev.users. An event without aggregates (and without redrive markers) is
// left as it is, ev.users nil: the price of the plain path is a look at
// four bytes per record.
func (ev *kinesisEvent) deaggregate() {
	if !eventscan.HasAggregates(ev.records, ev.only) {
		return
	}
	recs := ev.records
	ev.records, ev.users, ev.dataErrs = eventscan.Deaggregate(recs, ev.dataErrs, ev.only, kinesisUserRecords.Get(), kinesisUsers.Get())
	ev.parents = recs
}

// kinesisUserRecords and kinesisUsers keep a deaggregated event's slices
// for the next (KinesisHandler.Invoke puts them back).
var (
	kinesisUserRecords slicepool.Pool[events.KinesisEventRecord]
	kinesisUsers       slicepool.Pool[eventscan.KinesisUser]
)

// release gives the event's slices back to their pools; nothing may use
// them afterwards.
func (ev *kinesisEvent) release() {
	if ev.users != nil {
		kinesisUserRecords.Put(ev.records)
		kinesisUsers.Put(ev.users)
		kinesisRecords.Put(ev.parents)
		return
	}
	kinesisRecords.Put(ev.records)
}

// user returns where record i of the (deaggregated) event comes from.
func (ev *kinesisEvent) user(i int) eventscan.KinesisUser {
	if ev.users == nil {
		return eventscan.KinesisUser{Parent: int32(i)}
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
