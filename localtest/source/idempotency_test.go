package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest/source"
)

// TestAWSIdempotencyTable: the runner reads the keys a function's
// idempotency table on DynamoDB Local holds completed: not those in
// progress, not those expired, across pages.
func TestAWSIdempotencyTable(t *testing.T) {
	t.Parallel()
	srv := servers.DynamoDB(t)
	ctx := awsCtx(t, 60*time.Second)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "idem")
	if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	store, err := dynamodbstore.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claim := func(key string, expires time.Time) {
		t.Helper()
		if _, err := store.Claim(ctx, idempotency.Claim{Key: key, Owner: "o", Now: now, LeaseUntil: now.Add(time.Minute), Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := range 1200 { // keys of 1 KB: more than a Scan page (1 MB) holds
		key := fmt.Sprintf("fn#%04d-%01000d", i, i)
		claim(key, now.Add(time.Hour))
		if err := store.Complete(ctx, key, "o", nil, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		want = append(want, key)
	}
	claim("fn#in-progress", now.Add(time.Hour))
	claim("fn#expired", now.Add(-time.Hour))
	if err := store.Complete(ctx, "fn#expired", "o", nil, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, err := source.IdempotencyTable(srv.AWSConfig(), table).CompletedKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Fatalf("%d keys, want %d (first %v)", len(keys), len(want), keys[:min(3, len(keys))])
	}
	if _, err := source.IdempotencyTable(srv.AWSConfig(), "no-such-table").CompletedKeys(ctx); err == nil {
		t.Fatal("a table that does not exist read as empty")
	}
}

// TestAWSIdempotencyTableLanes: the runner reads the lanes a Kinesis
// handler's checkpoints wrote to DynamoDB Local, by their key as stored (a
// lane key past DynamoDB's 2,048 bytes by its digest, as StoredKey gives
// it), and each says which positions completed.
func TestAWSIdempotencyTableLanes(t *testing.T) {
	t.Parallel()
	srv := servers.DynamoDB(t)
	ctx := awsCtx(t, 60*time.Second)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "lanes")
	if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	store, err := dynamodbstore.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	b := &sevents.KinesisBuilder{}
	for i := range 3 {
		b.Add("k", []byte(fmt.Sprintf(`{"n":%d}`, i)))
	}
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	reader := source.IdempotencyTable(srv.AWSConfig(), table)
	shard, _, _ := strings.Cut(ev.Records[0].EventID, ":")
	for _, prefix := range []string{"fn", strings.Repeat("p", 2100)} {
		h, err := handlers.NewKinesis(func(context.Context, handlers.KinesisRecord[json.RawMessage]) error { return nil },
			handlers.WithIdempotency(store), handlers.WithIdempotencyKeyPrefix(prefix), handlers.WithParallelizationFactor(1), handlers.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Invoke(ctx, raw); err != nil {
			t.Fatal(err)
		}
		lanes, err := reader.Lanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lane := prefix + "#lane#kinesis#" + ev.Records[0].EventSourceArn + "#" + shard
		rec := lanes[reader.StoredKey(lane)]
		if rec == nil || (len(lane) > dynamodbstore.PartitionKeyLimit) == (rec.Lane == lane) {
			t.Fatalf("lanes %v: want %.60q… as the table keeps it", slices.Collect(maps.Keys(lanes)), lane)
		}
		now := time.Now()
		for i, r := range ev.Records {
			pos, _ := idempotency.Position(r.Kinesis.SequenceNumber)
			if covered, known, err := idempotency.LaneCovers(rec, pos, now); !covered || !known || err != nil {
				t.Fatalf("record %d: covered %v known %v (%v)", i, covered, known, err)
			}
		}
		next, _ := idempotency.Position(ev.Records[2].Kinesis.SequenceNumber + "0")
		if covered, known, _ := idempotency.LaneCovers(rec, next, now); covered || !known {
			t.Fatalf("a later position: covered %v known %v", covered, known)
		}
	}
	if _, err := source.IdempotencyTable(srv.AWSConfig(), "no-such-table").Lanes(ctx); err == nil {
		t.Fatal("a table that does not exist read as empty")
	}
}
