package source_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// TestAWSKinesisKPLAggregates: a stream on kinesalite holding records
// producers aggregated with the KPL (one written by the KPL itself, from
// awslabs/kinesis-aggregation's test suite, and others in its format),
// read by the runner as a real source: each user record is a record of
// the run. A function that does the work of only the first user record
// of each aggregate fails the run; one that does every user record's
// passes. Before, the runner named the aggregate by its sequence number:
// the dropping function passed.
func TestAWSKinesisKPLAggregates(t *testing.T) {
	t.Parallel()
	srv := servers.Kinesis(t)
	ctx := awsCtx(t, 60*time.Second)
	cfg := srv.AWSConfig()
	k := kinesis.NewFromConfig(cfg)
	name := servers.UniqueName(t, "kpl")
	if _, err := k.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: &name, ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := k.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: &name})
		if err != nil {
			t.Fatal(err)
		}
		if d.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	put := func(pk string, data []byte) {
		t.Helper()
		if _, err := k.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: &name, PartitionKey: &pk, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile("../../events/kpl/testdata/kpl-no-ehks.b64")
	if err != nil {
		t.Fatal(err)
	}
	written, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	put("78feb12a-dba0-45ca-a91e-bb1f2f1819b4", written) // 8 user records, as the KPL wrote them
	users := 8
	for i := range 3 {
		var recs []kpl.Record
		for j := range 4 {
			recs = append(recs, kpl.Record{PartitionKey: fmt.Sprintf("cust-%d", j%2), Data: fmt.Appendf(nil, `{"id":"o%d-%d"}`, i, j)})
		}
		put("cust-0", kpl.Encode(recs))
		users += len(recs)
		put("plain", fmt.Appendf(nil, `{"id":"p%d"}`, i))
	}
	want := users + 3

	for _, drop := range []bool{false, true} {
		var mu sync.Mutex
		var effects []localtest.Effect
		h, err := handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[[]byte]) error {
			if drop && r.SubSequenceNumber() > 0 {
				return nil // acknowledged; its work never done
			}
			mu.Lock()
			effects = append(effects, localtest.Effect{Record: r.RecordID()})
			mu.Unlock()
			return nil
		}, handlers.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: aws.Int(5),
			FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
		runCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		rep, err := localtest.Run(runCtx, localtest.Options{Mapping: m, Stream: source.KinesisStream(cfg, name, "TRIM_HORIZON"),
			Invoker: localtest.InProcess(h), Effects: func() ([]localtest.Effect, error) {
				mu.Lock()
				defer mu.Unlock()
				return effects, nil
			}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if rep.Totals.Records != want || rep.Totals.UserRecords != users || rep.Totals.Aggregates != 4 || rep.Totals.Processed != want {
			t.Fatalf("drop %v: totals %+v, want %d records, %d of them user records", drop, rep.Totals, want, users)
		}
		var loss localtest.InvariantResult
		for _, inv := range rep.Invariants {
			if inv.Name == localtest.InvariantNoLoss {
				loss = inv
			}
		}
		switch {
		case !drop && (!rep.Held() || loss.Status != localtest.StatusHeld):
			t.Fatalf("a correct function: %+v", rep.Invariants)
		case drop && (rep.Held() || loss.Status != localtest.StatusViolated || !strings.Contains(loss.Violations[0], ":1 was acknowledged")):
			t.Fatalf("a function that drops user records: %+v", rep.Invariants)
		}
	}
}
