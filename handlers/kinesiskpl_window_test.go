package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/internal/windowstate"
	"github.com/sluicehq/sluice/localtest"
)

// winAggregates is winOrders in KPL aggregates of per orders each, as
// records lines with "aggregate".
func winAggregates(n, per int) ([]localtest.InputRecord, winAgg) {
	var recs []localtest.InputRecord
	var want winAgg
	for i := 0; i < n; i += per {
		var users []localtest.UserRecord
		for j := i; j < min(n, i+per); j++ {
			o := winOrder{ID: j + 1, Customer: fmt.Sprintf("c%d", j%5), Amount: int64(j%7 + 1)}
			data, _ := json.Marshal(o)
			users = append(users, localtest.UserRecord{PartitionKey: o.Customer, Data: data})
			want = want.add(o)
		}
		recs = append(recs, localtest.InputRecord{PartitionKey: "orders", Aggregate: users})
	}
	return recs, want
}

// TestWindowKPLFoldsEachUserRecordOnce: user records fail once, in the
// middle of their aggregates, after the fold changed the aggregate: the
// window handler reports the aggregate with the state of the records
// before it, so when Lambda (the local runner) redelivers the aggregate
// its earlier user records are folded once, not twice.
func TestWindowKPLFoldsEachUserRecordOnce(t *testing.T) {
	recs, want := winAggregates(300, 7)
	var mu sync.Mutex
	failed := map[int]bool{}
	fold := func(_ context.Context, s winAgg, r KinesisRecord[winOrder]) (winAgg, error) {
		s = s.add(r.Value)
		mu.Lock()
		defer mu.Unlock()
		if id := r.Value.ID; !failed[id] && id%23 == 5 && r.SubSequenceNumber() > 0 {
			failed[id] = true
			return s, fmt.Errorf("order %d (user record %d): failed once", id, r.SubSequenceNumber())
		}
		return s, nil
	}
	var f windowFinals
	h, err := NewKinesisWindow(fold, f.final, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	rep, trace := runWindow(t, winMapping(10, 900, nil), recs, h)
	if rep.Totals.OnFailure != 0 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	partial := 0
	for _, e := range trace {
		if e.Result == localtest.ResultPartial {
			partial++
		}
	}
	if partial == 0 || len(failed) == 0 {
		t.Fatal("no partial response: the test did not exercise failures inside aggregates")
	}
	if !maps.Equal(f.total.Count, want.Count) || !maps.Equal(f.total.Sum, want.Sum) {
		t.Fatalf("the window's total is %+v, want %+v: a user record was folded twice or lost", f.total, want)
	}
}

// TestWindowKPLStateOverflowReportsAggregate: when a user record makes the
// state too large, the aggregate is reported with the state before it
// (the user records before the one that did not fit are redelivered).
func TestWindowKPLStateOverflowReportsAggregate(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	for i := range 4 {
		var users []kpl.Record
		for j := range 10 {
			users = append(users, kpl.Record{PartitionKey: fmt.Sprint(j), Data: fmt.Appendf(nil, `{"id":%d}`, 10*i+j+1)})
		}
		b.AddAggregated(users...)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ev := events.KinesisTimeWindowEvent{KinesisEvent: b.Event(), TimeWindowProperties: events.TimeWindowProperties{
		Window:  events.Window{Start: events.RFC3339EpochTime{Time: start}, End: events.RFC3339EpochTime{Time: start.Add(5 * time.Minute)}},
		ShardID: "shardId-000000000000"}}
	payload, _ := json.Marshal(ev)
	type list struct{ IDs []int }
	fold := func(_ context.Context, s list, r KinesisRecord[winOrder]) (list, error) {
		s.IDs = append(s.IDs, r.Value.ID)
		return s, nil
	}
	h, err := NewKinesisWindow(fold, func(context.Context, Window, list) error { return nil }, opts(WithWindowStateLimit(100))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		State    map[string]string `json:"state"`
		Failures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Failures) != 1 {
		t.Fatalf("answer %s", out)
	}
	s, err := windowstate.Decode[list](resp.State)
	if err != nil {
		t.Fatal(err)
	}
	// The state holds whole aggregates only: a multiple of 10 orders.
	if len(s.IDs)%10 != 0 || len(s.IDs) == 0 {
		t.Fatalf("state holds %v: part of an aggregate", s.IDs)
	}
	if got, want := resp.Failures[0].ItemIdentifier, ev.Records[len(s.IDs)/10].Kinesis.SequenceNumber; got != want {
		t.Fatalf("reported %s, want aggregate %d (%s)", got, len(s.IDs)/10, want)
	}
}
