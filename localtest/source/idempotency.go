package source

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/localtest/internal/remote"
)

// dynamoDBScanAPI is the part of the DynamoDB client IdempotencyTableReader
// uses.
type dynamoDBScanAPI interface {
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// IdempotencyTableReader is a function's idempotency table (package
// idempotency/dynamodbstore's default layout: the key in "id", as sluice
// tables create --idempotency makes it) as a localtest.IdempotencyKeys,
// IdempotencyLanes and IdempotencyStoredKeys: the runner reads which keys
// are completed, and the lanes' checkpoints, to check the claims of
// records a handler skipped as duplicates.
type IdempotencyTableReader struct {
	api   dynamoDBScanAPI
	table string
	now   func() time.Time
}

// IdempotencyTable opens the table through the endpoint and region of
// cfg.
func IdempotencyTable(cfg aws.Config, table string) *IdempotencyTableReader {
	return &IdempotencyTableReader{api: dynamodb.NewFromConfig(cfg), table: table, now: time.Now}
}

// maxScannedKeys bounds what CompletedKeys reads: a table that holds more
// completed keys is not read (the claims it would check are then not
// checked, never taken as true).
const maxScannedKeys = 1_000_000

// CompletedKeys scans the table for the keys whose record is completed and
// not expired (a claim would find it a duplicate). It reads the key and
// status only, a page at a time.
func (r *IdempotencyTableReader) CompletedKeys(ctx context.Context) (map[string]bool, error) {
	where := "idempotency table " + r.table
	out := map[string]bool{}
	now := r.now().Unix()
	in := &dynamodb.ScanInput{TableName: &r.table, ProjectionExpression: aws.String("#k, #s, #e"),
		ExpressionAttributeNames: map[string]string{"#k": dynamodbstore.DefaultPartitionKey, "#s": dynamodbstore.AttrStatus,
			"#e": dynamodbstore.AttrExpiration}}
	for {
		page, err := r.api.Scan(ctx, in)
		if err != nil {
			return nil, remote.Err(ctx, where+": Scan", err)
		}
		for _, item := range page.Items {
			k, ok := item[dynamodbstore.DefaultPartitionKey].(*ddbtypes.AttributeValueMemberS)
			if !ok {
				return nil, fmt.Errorf("%s: an item has no string %q: the table is not in dynamodbstore's default layout", where, dynamodbstore.DefaultPartitionKey)
			}
			if s, ok := item[dynamodbstore.AttrStatus].(*ddbtypes.AttributeValueMemberS); !ok || s.Value != "COMPLETED" {
				continue
			}
			if e, ok := item[dynamodbstore.AttrExpiration].(*ddbtypes.AttributeValueMemberN); ok {
				if exp, err := strconv.ParseInt(e.Value, 10, 64); err == nil && exp < now {
					continue // expired: a claim takes it afresh
				}
			}
			out[k.Value] = true
			if len(out) > maxScannedKeys {
				return nil, fmt.Errorf("%s holds more than %d completed keys: too many to read for a local run; use a table of its own for the run", where, maxScannedKeys)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// StoredKey is the form in which the table keeps key (and a lane's key):
// idempotency.StoredKey under the partition key's limit.
func (r *IdempotencyTableReader) StoredKey(key string) string {
	return idempotency.StoredKey(key, dynamodbstore.PartitionKeyLimit)
}

// Lanes scans the table for the lanes' items (status
// idempotency.LaneStatus): their checkpoints, as the handlers keep them on
// ordered sources, by their key as stored.
func (r *IdempotencyTableReader) Lanes(ctx context.Context) (map[string]*idempotency.LaneRecord, error) {
	where := "idempotency table " + r.table
	out := map[string]*idempotency.LaneRecord{}
	in := &dynamodb.ScanInput{TableName: &r.table, FilterExpression: aws.String("#s = :lane"),
		ProjectionExpression: aws.String("#k, #s, #e, #l, #o, #p, #st"),
		ExpressionAttributeNames: map[string]string{"#k": dynamodbstore.DefaultPartitionKey, "#s": dynamodbstore.AttrStatus,
			"#e": dynamodbstore.AttrExpiration, "#l": dynamodbstore.AttrInProgressExpiration, "#o": dynamodbstore.AttrOwner,
			"#p": dynamodbstore.AttrPosition, "#st": dynamodbstore.AttrState},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":lane": &ddbtypes.AttributeValueMemberS{Value: idempotency.LaneStatus}}}
	for {
		page, err := r.api.Scan(ctx, in)
		if err != nil {
			return nil, remote.Err(ctx, where+": Scan", err)
		}
		for _, item := range page.Items {
			rec, err := laneRecord(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out[rec.Lane] = rec
			if len(out) > maxScannedKeys {
				return nil, fmt.Errorf("%s holds more than %d lanes: too many to read for a local run; use a table of its own for the run", where, maxScannedKeys)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// laneRecord reads a lane's item in dynamodbstore's layout.
func laneRecord(item map[string]ddbtypes.AttributeValue) (*idempotency.LaneRecord, error) {
	s := func(name string) string {
		v, _ := item[name].(*ddbtypes.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	n := func(name string) (int64, bool, error) {
		v, ok := item[name].(*ddbtypes.AttributeValueMemberN)
		if !ok {
			return 0, false, nil
		}
		x, err := strconv.ParseInt(v.Value, 10, 64)
		return x, true, err
	}
	rec := &idempotency.LaneRecord{Lane: s(dynamodbstore.DefaultPartitionKey), Owner: s(dynamodbstore.AttrOwner), Position: s(dynamodbstore.AttrPosition)}
	if rec.Lane == "" {
		return nil, fmt.Errorf("a lane's item has no string %q: the table is not in dynamodbstore's default layout", dynamodbstore.DefaultPartitionKey)
	}
	if st := s(dynamodbstore.AttrState); st != "" {
		rec.State = []byte(st)
	}
	exp, ok, err := n(dynamodbstore.AttrExpiration)
	if err != nil || !ok {
		return nil, fmt.Errorf("lane %q has no numeric %q", rec.Lane, dynamodbstore.AttrExpiration)
	}
	rec.Expires = time.Unix(exp, 0)
	if ms, ok, err := n(dynamodbstore.AttrInProgressExpiration); err != nil {
		return nil, fmt.Errorf("lane %q: %q is not a number", rec.Lane, dynamodbstore.AttrInProgressExpiration)
	} else if ok {
		rec.LeaseUntil = time.UnixMilli(ms)
	}
	return rec, nil
}
