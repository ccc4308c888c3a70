package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/jsonshape"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/source"
)

// awsShape lists the key paths of a JSON document (see internal/testsupport/jsonshape).
func awsShape(t *testing.T, doc []byte) []string {
	t.Helper()
	p, err := jsonshape.Paths(doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// awsGolden reads a sample event from events/testdata.
func awsGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// awsRecordsEvent assembles {"Records":[...]} from event records.
func awsRecordsEvent(t *testing.T, recs ...json.RawMessage) []byte {
	t.Helper()
	b, err := json.Marshal(map[string][]json.RawMessage{"Records": recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// awsSameShape fails unless doc has exactly the key paths of want.
func awsSameShape(t *testing.T, doc []byte, want []string) {
	t.Helper()
	if got := awsShape(t, doc); !slices.Equal(got, want) {
		t.Errorf("shape differs from the AWS sample\n got: %v\nwant: %v\n doc: %s", got, want, doc)
	}
}

func awsCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestAWSKinesisStream(t *testing.T) {
	t.Parallel()
	srv := servers.Kinesis(t)
	ctx := awsCtx(t, 30*time.Second)
	cfg := srv.AWSConfig()
	k := kinesis.NewFromConfig(cfg)

	name := servers.UniqueName(t, "stream")
	if _, err := k.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(2)}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	for {
		d, err := k.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatalf("DescribeStreamSummary: %v", err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now().Add(-time.Second)
	put := func(pk, data string) string {
		t.Helper()
		out, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: &pk, Data: []byte(data)})
		if err != nil {
			t.Fatalf("PutRecord: %v", err)
		}
		return aws.ToString(out.ShardId)
	}
	var shard string
	for i := range 7 {
		shard = put("same-key", fmt.Sprintf(`{"n":%d}`, i))
	}

	src := source.KinesisStream(cfg, name, "TRIM_HORIZON")
	shards, err := src.Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 || !slices.Contains(shards, shard) || !slices.IsSorted(shards) {
		t.Fatalf("Shards = %v, want 2 sorted ids including %s", shards, shard)
	}

	read := func(after string, max int) []invocation.StreamRecord {
		t.Helper()
		recs, err := src.Read(ctx, shard, after, max)
		if err != nil {
			t.Fatalf("Read(after %q, %d): %v", after, max, err)
		}
		return recs
	}
	data := func(recs []invocation.StreamRecord) []string {
		var out []string
		for _, r := range recs {
			var ev events.KinesisEventRecord
			if err := json.Unmarshal(r.Event, &ev); err != nil {
				t.Fatalf("record does not decode as events.KinesisEventRecord: %v\n%s", err, r.Event)
			}
			out = append(out, string(ev.Kinesis.Data))
		}
		return out
	}

	first := read("", 3)
	if got := data(first); !slices.Equal(got, []string{`{"n":0}`, `{"n":1}`, `{"n":2}`}) {
		t.Fatalf("first page %v", got)
	}
	// Continue after the last record: the cached iterator.
	second := read(first[2].SequenceNumber, 3)
	if got := data(second); !slices.Equal(got, []string{`{"n":3}`, `{"n":4}`, `{"n":5}`}) {
		t.Fatalf("second page %v", got)
	}
	// Go back: a fresh AFTER_SEQUENCE_NUMBER iterator.
	if got := data(read(first[0].SequenceNumber, 2)); !slices.Equal(got, []string{`{"n":1}`, `{"n":2}`}) {
		t.Fatalf("re-read after the first record: %v", got)
	}
	all := append(append(first, second...), read(second[2].SequenceNumber, 10)...)
	if len(all) != 7 {
		t.Fatalf("read %d records, want 7", len(all))
	}
	if tail := read(all[6].SequenceNumber, 10); len(tail) != 0 {
		t.Fatalf("read past the end: %v", data(tail))
	}
	put("same-key", `{"n":7}`)
	if got := data(read(all[6].SequenceNumber, 10)); !slices.Equal(got, []string{`{"n":7}`}) {
		t.Fatalf("after a new put: %v", got)
	}

	want := awsShape(t, awsGolden(t, "kinesis.json"))
	for i, r := range all {
		var ev events.KinesisEventRecord
		if err := json.Unmarshal(r.Event, &ev); err != nil {
			t.Fatal(err)
		}
		if i > 0 && r.SequenceNumber <= all[i-1].SequenceNumber {
			t.Errorf("sequence numbers out of order: %s then %s", all[i-1].SequenceNumber, r.SequenceNumber)
		}
		if ev.EventID != shard+":"+r.SequenceNumber || ev.Kinesis.SequenceNumber != r.SequenceNumber ||
			ev.EventSource != "aws:kinesis" || ev.EventName != "aws:kinesis:record" || ev.EventVersion != "1.0" ||
			ev.AwsRegion != servers.Region || !strings.HasSuffix(ev.EventSourceArn, ":stream/"+name) ||
			ev.InvokeIdentityArn == "" || ev.Kinesis.PartitionKey != "same-key" || r.PartitionKey != "same-key" ||
			ev.Kinesis.KinesisSchemaVersion != "1.0" {
			t.Errorf("record %d: %s", i, r.Event)
		}
		if at := ev.Kinesis.ApproximateArrivalTimestamp.Time; at.Before(start) || at.After(time.Now()) || at.Sub(r.Arrival).Abs() > time.Microsecond || r.Arrival.Nanosecond()%1e6 != 0 {
			t.Errorf("record %d: arrival %v (StreamRecord.Arrival %v), want since %v", i, at, r.Arrival, start)
		}
		awsSameShape(t, awsRecordsEvent(t, r.Event), want)
	}
	t.Logf("record: %s", all[0].Event)

	// A Sluice handler takes the records as Lambda would deliver them.
	var seen []int
	h, err := handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[struct{ N int }]) error {
		seen = append(seen, r.Value.N)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var raws []json.RawMessage
	for _, r := range all {
		raws = append(raws, r.Event)
	}
	resp, err := h.Invoke(ctx, awsRecordsEvent(t, raws...))
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	var kr events.KinesisEventResponse
	if err := json.Unmarshal(resp, &kr); err != nil || len(kr.BatchItemFailures) != 0 {
		t.Fatalf("handler response %s (%v)", resp, err)
	}
	if !slices.Equal(seen, []int{0, 1, 2, 3, 4, 5, 6}) {
		t.Fatalf("handler saw %v", seen)
	}
}

// TestAWSKinesisStreamLatest: a LATEST position is fixed by the first Read,
// so a record put between two empty Reads is delivered.
func TestAWSKinesisStreamLatest(t *testing.T) {
	t.Parallel()
	srv := servers.Kinesis(t)
	ctx := awsCtx(t, 30*time.Second)
	cfg := srv.AWSConfig()
	k := kinesis.NewFromConfig(cfg)
	name := servers.UniqueName(t, "latest")
	if _, err := k.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(1)}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	for {
		d, err := k.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatalf("DescribeStreamSummary: %v", err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	put := func(data string) {
		t.Helper()
		if _, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: aws.String("k"), Data: []byte(data)}); err != nil {
			t.Fatalf("PutRecord: %v", err)
		}
	}
	put("old")
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	put("mid")

	latest := source.KinesisStream(cfg, name, "LATEST")
	shards, err := latest.Shards(ctx)
	if err != nil || len(shards) != 1 {
		t.Fatalf("Shards = %v, %v", shards, err)
	}
	if recs, err := latest.Read(ctx, shards[0], "", 10); err != nil || len(recs) != 0 {
		t.Fatalf("LATEST first Read = %d records, %v; want none", len(recs), err)
	}
	put("new")
	recs, err := latest.Read(ctx, shards[0], "", 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("LATEST second Read = %d records, %v; want the one put after the first Read", len(recs), err)
	}

	at := source.KinesisStream(cfg, name, "AT_TIMESTAMP", source.KinesisStartingTimestamp(mid))
	recs, err = at.Read(ctx, shards[0], "", 10)
	if err != nil {
		t.Fatalf("AT_TIMESTAMP Read: %v", err)
	}
	var got []string
	for _, r := range recs {
		var ev events.KinesisEventRecord
		if err := json.Unmarshal(r.Event, &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev.Kinesis.Data))
	}
	if !slices.Equal(got, []string{"mid", "new"}) {
		t.Errorf("AT_TIMESTAMP read %v, want [mid new]", got)
	}

	if _, err := source.KinesisStream(cfg, name, "AT_TIMESTAMP").Read(ctx, shards[0], "", 1); err == nil {
		t.Error("AT_TIMESTAMP without a timestamp: no error")
	}
	if _, err := source.KinesisStream(cfg, name, "EARLIEST").Read(ctx, shards[0], "", 1); err == nil {
		t.Error("unknown starting position: no error")
	}
}
