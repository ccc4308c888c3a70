package localtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// TestEmulatedRecordsArriveAtTheRunsStart: an emulated source's records
// arrive when the run starts, not before it, so a common
// MaximumRecordAgeInSeconds (3600) gives up on none of them before the
// function sees them (issue 30: the first record went to on-failure as
// RecordAgeExceeded before any invocation).
func TestEmulatedRecordsArriveAtTheRunsStart(t *testing.T) {
	m := kinesisMapping(10, func(m *Mapping) { m.MaximumRecordAgeInSeconds = ptr(3600) })
	var mu sync.Mutex
	var arrivals []time.Time
	h := fn(func(_ context.Context, p []byte) ([]byte, error) {
		var ev events.KinesisEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			arrivals = append(arrivals, r.Kinesis.ApproximateArrivalTimestamp.Time)
		}
		return nil, nil
	})
	before := time.Now().Add(-time.Millisecond) // arrival times are float seconds, to the millisecond
	rep, tr := run(t, Options{Mapping: m, Records: kinesisRecords(5, oneKey), Invoker: InProcess(h)})
	after := time.Now()
	if len(rep.OnFailureRecords) != 0 || rep.Totals.Processed != 5 || len(tr.entries) != 1 {
		t.Fatalf("on-failure %+v, totals %+v, trace %+v: want the 5 records processed in one invocation", rep.OnFailureRecords, rep.Totals, tr.entries)
	}
	if len(arrivals) != 5 || arrivals[0].Before(before) || arrivals[0].After(after) {
		t.Fatalf("first arrival %v, want within the run (%v to %v)", arrivals, before, after)
	}
}

// TestEmulatedTimeOfEachSource: every emulated source dates its first
// record at the run's start (DynamoDB to the second, as it writes times).
func TestEmulatedTimeOfEachSource(t *testing.T) {
	firstTime := map[sevents.Source]func(p []byte) (time.Time, error){
		sevents.SourceKinesis: func(p []byte) (time.Time, error) {
			var ev events.KinesisEvent
			err := json.Unmarshal(p, &ev)
			return ev.Records[0].Kinesis.ApproximateArrivalTimestamp.Time, err
		},
		sevents.SourceDynamoDB: func(p []byte) (time.Time, error) {
			var ev events.DynamoDBEvent
			err := json.Unmarshal(p, &ev)
			return ev.Records[0].Change.ApproximateCreationDateTime.Time, err
		},
		sevents.SourceSQS: func(p []byte) (time.Time, error) {
			var ev events.SQSEvent
			if err := json.Unmarshal(p, &ev); err != nil {
				return time.Time{}, err
			}
			ms, err := strconv.ParseInt(ev.Records[0].Attributes["SentTimestamp"], 10, 64)
			return time.UnixMilli(ms), err
		},
		sevents.SourceKafka: func(p []byte) (time.Time, error) {
			var ev events.KafkaEvent
			if err := json.Unmarshal(p, &ev); err != nil {
				return time.Time{}, err
			}
			for _, recs := range ev.Records {
				return recs[0].Timestamp.Time, nil
			}
			return time.Time{}, fmt.Errorf("no records in %s", p)
		},
	}
	mappings := map[sevents.Source]*Mapping{
		sevents.SourceKinesis:  kinesisMapping(10, nil),
		sevents.SourceDynamoDB: {EventSource: sevents.SourceDynamoDB, StartingPosition: "TRIM_HORIZON"},
		sevents.SourceSQS:      {EventSource: sevents.SourceSQS},
		sevents.SourceKafka:    {EventSource: sevents.SourceKafka, StartingPosition: "TRIM_HORIZON"},
	}
	records := map[sevents.Source][]InputRecord{
		sevents.SourceKinesis:  kinesisRecords(1, oneKey),
		sevents.SourceDynamoDB: {{Keys: json.RawMessage(`{"pk":"a"}`)}},
		sevents.SourceSQS:      sqsRecords(1, nil),
		sevents.SourceKafka:    kafkaRecords(1, 1),
	}
	for source, first := range firstTime {
		t.Run(string(source), func(t *testing.T) {
			var got time.Time
			var gotErr error
			h := fn(func(_ context.Context, p []byte) ([]byte, error) {
				got, gotErr = first(p)
				return nil, nil
			})
			before := time.Now().Truncate(time.Second)
			rep, _ := run(t, Options{Mapping: mappings[source], Records: records[source], Invoker: InProcess(h)})
			if gotErr != nil || rep.Totals.Processed != 1 {
				t.Fatalf("%v, totals %+v", gotErr, rep.Totals)
			}
			if got.Before(before) || got.After(time.Now()) {
				t.Fatalf("the first record is dated %v, want the run's start (after %v)", got, before)
			}
		})
	}
}
