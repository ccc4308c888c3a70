package redrive

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/localtest"
)

// TestRunKPLUserRecords: the envelopes of two user records of one KPL
// aggregate (the record the KPL writes:
// github.com/awslabs/amazon-kinesis-producer/blob/master/aggregation-format.md)
// are two records to a redrive: each replays its user record alone, and
// neither is taken for a duplicate of the other.
func TestRunKPLUserRecords(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	var users []kpl.Record
	for _, id := range []string{"r0", "bad1", "r2", "bad3"} {
		users = append(users, kpl.Record{PartitionKey: id, Data: []byte(`{"id":"` + id + `"}`)})
	}
	ev := b.AddAggregated(users...).Event()
	parent := envelopes(t, marshal(t, ev))[0]
	var envs []*dlq.Envelope
	for _, sub := range []int64{1, 3} {
		e := *parent
		e.SubSequenceNumber = &sub
		e.EventID = parent.EventID + ":" + string(rune('0'+sub))
		envs = append(envs, &e)
	}
	content := lines(t, envs)
	for _, tc := range []struct {
		name   string
		batch  int
		broken bool
		left   int
	}{
		{"still broken, one per event", 1, true, 2},
		{"still broken, one event", 10, true, 2},
		{"fixed, one per event", 1, false, 0},
		{"fixed, one event", 10, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, content)
			var c calls
			var subs []int
			h, err := handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[msg]) error {
				c.add(r.Value.ID)
				subs = append(subs, r.SubSequenceNumber())
				if tc.broken && strings.HasPrefix(r.Value.ID, "bad") {
					return json.Unmarshal([]byte("x"), new(int))
				}
				return nil
			}, handlers.WithoutRetry())
			if err != nil {
				t.Fatal(err)
			}
			sum := redriveFile(t, path, Options{Invoker: localtest.InProcess(h), BatchSize: tc.batch})
			ids, _ := fileRecords(t, path)
			if len(ids) != tc.left || sum.Read != 2 || sum.Repeated != 0 {
				t.Fatalf("left %v, totals %+v", ids, sum.Totals)
			}
			if c.get("r0") != 0 || c.get("r2") != 0 || c.get("bad1") != 1 {
				t.Fatalf("calls %v: want the quarantined user records only", c.n)
			}
			if !tc.broken && (c.get("bad3") != 1 || len(subs) != 2 || subs[0] != 1 || subs[1] != 3) {
				t.Fatalf("calls %v, sub-sequence numbers %v", c.n, subs)
			}
		})
	}
}
