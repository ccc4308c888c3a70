package dynamodbstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/idempotency/storetest"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newTable(t *testing.T, opts ...dynamodbstore.Option) (*dynamodb.Client, string) {
	t.Helper()
	db := dynamodb.NewFromConfig(servers.DynamoDB(t).AWSConfig())
	table := servers.UniqueName(t, "idem")
	if err := dynamodbstore.CreateTable(testCtx(t), db, table, opts...); err != nil {
		t.Fatal(err)
	}
	return db, table
}

func TestStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []dynamodbstore.Option
	}{
		{"Default", nil},
		{"PartitionKey", []dynamodbstore.Option{dynamodbstore.WithPartitionKey("pk")}},
		{"SortKey", []dynamodbstore.Option{dynamodbstore.WithPartitionKey("pk"), dynamodbstore.WithSortKey("sk", "idempotency#orders")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, table := newTable(t, tc.opts...)
			store, err := dynamodbstore.New(db, table, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			storetest.Run(t, func(*testing.T) idempotency.Store { return store })
		})
	}
}

// TestLayout reads the items back to check the documented layout.
func TestLayout(t *testing.T) {
	t.Parallel()
	db, table := newTable(t)
	store, err := dynamodbstore.New(db, table)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	now := time.Unix(time.Now().Unix(), 0)
	c := idempotency.Claim{Key: "k1", Owner: "o1", PayloadHash: "h", Now: now, LeaseUntil: now.Add(1500 * time.Millisecond), Expires: now.Add(time.Hour)}
	if rec, err := store.Claim(ctx, c); rec != nil || err != nil {
		t.Fatalf("Claim = %v, %v", rec, err)
	}
	item := getItem(t, db, table, "k1")
	want := map[string]string{
		"id": "S:k1", "status": "S:INPROGRESS", "owner": "S:o1", "validation": "S:h",
		"expiration":             "N:" + itoa(now.Add(time.Hour).Unix()),
		"in_progress_expiration": "N:" + itoa(now.Add(1500*time.Millisecond).UnixMilli()),
	}
	checkItem(t, item, want)

	if err := store.Complete(ctx, "k1", "o1", []byte("res"), now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	item = getItem(t, db, table, "k1")
	delete(want, "in_progress_expiration")
	want["status"], want["data"], want["expiration"] = "S:COMPLETED", "B:res", "N:"+itoa(now.Add(2*time.Hour).Unix())
	checkItem(t, item, want)

	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "expiration" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Errorf("TTL = %+v, want enabled on expiration", d)
	}
}

func TestCreateTableAgain(t *testing.T) {
	t.Parallel()
	db, table := newTable(t)
	if err := dynamodbstore.CreateTable(testCtx(t), db, table); err != nil {
		t.Errorf("CreateTable on an existing table: %v", err)
	}
	err := dynamodbstore.CreateTable(testCtx(t), db, table, dynamodbstore.WithPartitionKey("pk"))
	if err == nil || !strings.Contains(err.Error(), "key schema") {
		t.Errorf("CreateTable with another key schema: %v, want a key schema error", err)
	}
}

func TestStoreErrors(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(servers.DynamoDB(t).AWSConfig())
	store, err := dynamodbstore.New(db, servers.UniqueName(t, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	_, err = store.Claim(testCtx(t), idempotency.Claim{Key: "k", Owner: "o", Now: now, LeaseUntil: now, Expires: now})
	var se *idempotency.StoreError
	if !errors.As(err, &se) || se.Op != "claim" || se.Key != "k" || se.Retryable {
		t.Errorf("Claim on a missing table: %#v, want a non-retryable *StoreError", err)
	}
	for _, opts := range [][]dynamodbstore.Option{
		{dynamodbstore.WithPartitionKey("")},
		{dynamodbstore.WithSortKey("sk", "")},
		{dynamodbstore.WithSortKey("id", "p")},
		{dynamodbstore.WithPartitionKey("status")},
	} {
		if _, err := dynamodbstore.New(db, "t", opts...); err == nil {
			t.Errorf("New with a bad layout: no error")
		}
	}
}

func getItem(t *testing.T, db *dynamodb.Client, table, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(testCtx(t), &dynamodb.GetItemInput{
		TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func checkItem(t *testing.T, item map[string]types.AttributeValue, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			got[k] = "S:" + v.Value
		case *types.AttributeValueMemberN:
			got[k] = "N:" + v.Value
		case *types.AttributeValueMemberB:
			got[k] = "B:" + string(v.Value)
		default:
			got[k] = "?"
		}
	}
	if len(got) != len(want) {
		t.Errorf("item %v, want %v", got, want)
		return
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("item %v, want %v", got, want)
			return
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
