package dynamodbattempts_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/attemptstest"
	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	db := dynamodb.NewFromConfig(servers.DynamoDB(t).AWSConfig())
	table := servers.UniqueName(t, "attempts")
	for range 2 { // the second call finds the table and succeeds
		if err := dynamodbattempts.CreateTable(testCtx(t), db, table); err != nil {
			t.Fatal(err)
		}
	}
	return db, table
}

func TestStore(t *testing.T) {
	t.Parallel()
	db, table := newTable(t)
	store, err := dynamodbattempts.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	attemptstest.Run(t, func(*testing.T) dlq.AttemptsStore { return store })
}

// TestLayout reads an item back to check the documented layout.
func TestLayout(t *testing.T) {
	t.Parallel()
	db, table := newTable(t)
	store, err := dynamodbattempts.New(db, table, dynamodbattempts.WithTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	now := time.UnixMilli(1_800_000_000_123)
	key := "orders#arn:aws:kinesis:us-east-1:1:stream/s#4960"
	if _, err := store.Begin(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Second)
	if _, err := store.Fail(ctx, key, true, dlq.Failure{Time: later, Error: "boom", Class: "plain"}); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"id": "S:" + key, "attempts": "N:1", "isolated": "N:0", "firstFailure": "N:1800000001123", "lastFailure": "N:1800000001123",
		"lastError": "S:boom", "lastClass": "S:plain", "expiration": "N:1800003601",
	}
	if len(out.Item) != len(want) {
		t.Fatalf("item has %d attributes, want %d: %v", len(out.Item), len(want), out.Item)
	}
	for name, w := range want {
		var got string
		switch v := out.Item[name].(type) {
		case *types.AttributeValueMemberS:
			got = "S:" + v.Value
		case *types.AttributeValueMemberN:
			got = "N:" + v.Value
		}
		if got != w {
			t.Errorf("%s = %q, want %q", name, got, w)
		}
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expiration" {
		t.Fatalf("TTL %+v, %v", ttl, err)
	}
}

func TestNewRejects(t *testing.T) {
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	for name, f := range map[string]func() error{
		"nil client": func() error { _, err := dynamodbattempts.New(nil, "t"); return err },
		"no table":   func() error { _, err := dynamodbattempts.New(db, ""); return err },
		"short TTL": func() error {
			_, err := dynamodbattempts.New(db, "t", dynamodbattempts.WithTTL(time.Second))
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
