package localtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/events/kpl"
)

// captured is a BytesHandler that keeps the Kinesis records it is given.
type captured struct {
	mu   sync.Mutex
	recs []events.KinesisEventRecord
}

func (c *captured) Invoke(_ context.Context, p []byte) ([]byte, error) {
	var ev events.KinesisEvent
	if err := json.Unmarshal(p, &ev); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.recs = append(c.recs, ev.Records...)
	c.mu.Unlock()
	return []byte(`{"batchItemFailures":[]}`), nil
}

func runKinesisRecords(t *testing.T, recs []InputRecord) []events.KinesisEventRecord {
	t.Helper()
	size := 10
	m := &Mapping{EventSource: sevents.SourceKinesis, BatchSize: &size, StartingPosition: "TRIM_HORIZON", FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	var c captured
	rep, err := Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: InProcess(&c), RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := 0 // the records of the run: each user record of an aggregate is one
	for _, r := range recs {
		want += max(1, len(r.Aggregate))
	}
	if rep.Totals.Records != want {
		t.Fatalf("totals %+v, want %d records", rep.Totals, want)
	}
	return c.recs
}

// TestRecordsLineAggregate: a records line with "aggregate" is one Kinesis
// record holding those user records as the KPL aggregates them, with the
// first user record's partition key unless the line names one.
func TestRecordsLineAggregate(t *testing.T) {
	recs, err := ReadRecords(strings.NewReader(`{"partitionKey":"p","data":{"orderId":"p-1"}}
{"aggregate":[{"partitionKey":"cust-1","data":{"orderId":"o-1"}},{"partitionKey":"cust-2","explicitHashKey":"42","data":"text"}]}
{"partitionKey":"own","aggregate":[{"partitionKey":"cust-3","data":{"orderId":"o-3"}}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := runKinesisRecords(t, recs)
	if len(got) != 3 {
		t.Fatalf("%d records", len(got))
	}
	if got[0].Kinesis.PartitionKey != "p" || string(got[0].Kinesis.Data) != `{"orderId":"p-1"}` {
		t.Fatalf("plain record: %+v", got[0].Kinesis)
	}
	users, ok, err := kpl.Deaggregate(got[1].Kinesis.Data)
	if !ok || err != nil || got[1].Kinesis.PartitionKey != "cust-1" || len(users) != 2 ||
		users[0].PartitionKey != "cust-1" || string(users[0].Data) != `{"orderId":"o-1"}` ||
		users[1].PartitionKey != "cust-2" || users[1].ExplicitHashKey != "42" || string(users[1].Data) != "text" {
		t.Fatalf("aggregate: ok %v err %v key %q users %+v", ok, err, got[1].Kinesis.PartitionKey, users)
	}
	if got[2].Kinesis.PartitionKey != "own" || !kpl.IsAggregated(got[2].Kinesis.Data) {
		t.Fatalf("third record: %+v", got[2].Kinesis)
	}
}

func TestRecordsLineAggregateErrors(t *testing.T) {
	for _, tc := range []struct{ line, err string }{
		{`{"partitionKey":"p","data":"x","aggregate":[{"partitionKey":"a","data":"y"}]}`, `a Kinesis record has "data" or "aggregate", not both`},
		{`{"aggregate":[{"data":"y"}]}`, "user record 0 of the aggregate needs a partitionKey"},
	} {
		recs, err := ReadRecords(strings.NewReader(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		size := 10
		m := &Mapping{EventSource: sevents.SourceKinesis, BatchSize: &size, StartingPosition: "TRIM_HORIZON"}
		_, err = Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: InProcess(&captured{})})
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), `"aggregate"`) {
			t.Errorf("%s: %v, want %q", tc.line, err, tc.err)
		}
	}
	if err := checkShape(sevents.SourceSQS, InputRecord{Aggregate: []UserRecord{{PartitionKey: "a"}}}); err == nil || !strings.Contains(err.Error(), `"aggregate" belongs to a Kinesis record`) {
		t.Fatalf("aggregate on an SQS mapping: %v", err)
	}
}

// TestEventFileAggregate: an event file holding a record the KPL
// aggregated becomes a records line with "aggregate", which the runner
// sends as the same bytes.
func TestEventFileAggregate(t *testing.T) {
	event := readFile(t, "../handlers/testdata/kinesis-kpl-event.json")
	f, err := ReadRecordsFile(bytes.NewReader(event))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Records) != 1 || len(f.Records[0].Aggregate) != 4 || len(f.Notes) != 0 || f.Records[0].PartitionKey != "a" ||
		f.Records[0].Aggregate[1].PartitionKey != "cae41b1c-ea61-43f2-90be-b8755ebf88e2" {
		t.Fatalf("records %+v, notes %v", f.Records, f.Notes)
	}
	var ev events.KinesisEvent
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	got := runKinesisRecords(t, f.Records)
	if len(got) != 1 || !bytes.Equal(got[0].Kinesis.Data, ev.Records[0].Kinesis.Data) {
		t.Fatalf("sent %s, want the KPL's %s", base64.StdEncoding.EncodeToString(got[0].Kinesis.Data), base64.StdEncoding.EncodeToString(ev.Records[0].Kinesis.Data))
	}
}
