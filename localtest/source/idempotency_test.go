package source_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
