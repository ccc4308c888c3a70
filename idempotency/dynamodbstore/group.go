package dynamodbstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
)

// TransactWriter is the part of *dynamodb.Client that CompleteAll uses. A
// Client without it makes CompleteAll write the group one Complete after
// another, in order (still a prefix of the group when one fails, but not
// all-or-nothing).
type TransactWriter interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// TransactLimit is how many items one TransactWriteItems request may
// write.
const TransactLimit = 100

// transactBytes bounds the results one transaction carries (DynamoDB
// refuses a transaction over 4 MB); a group past it is split sooner.
const transactBytes = 3 << 20

var _ idempotency.GroupCompleter = (*Store)(nil)

// CompleteAll implements idempotency.GroupCompleter with TransactWriteItems:
// one Update per key, each conditional on its owner as Complete's, all or
// none. A group of more than 100 keys (or 3 MB of results) is written as
// consecutive transactions, each after the one before it succeeded; one
// that fails leaves those before it written and writes none after it.
// Cost: a transaction consumes two write units per item (per KB), where
// Complete consumes one, so a record completed in a group costs three
// write units with its claim instead of two; the lane saves the round
// trips. A key whose owner lost it fails the transaction with
// idempotency.ErrLeaseLost, naming the key (DynamoDB's cancellation
// reason ConditionalCheckFailed); a conflict with another transaction on
// the same items (TransactionConflict) or throttling is a retryable
// *idempotency.StoreError.
func (s *Store) CompleteAll(ctx context.Context, cs []idempotency.Completion) error {
	tw, ok := s.client.(TransactWriter)
	if !ok {
		for _, c := range cs {
			if err := s.Complete(ctx, c.Key, c.Owner, c.Result, c.Expires); err != nil {
				return err
			}
		}
		return nil
	}
	for start := 0; start < len(cs); {
		end, size := start, 0
		for end < len(cs) && end-start < TransactLimit && (end == start || size+len(cs[end].Result) <= transactBytes) {
			size += len(cs[end].Result)
			end++
		}
		if err := s.transact(ctx, tw, cs[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// transact completes cs in one transaction.
func (s *Store) transact(ctx context.Context, tw TransactWriter, cs []idempotency.Completion) error {
	if len(cs) == 1 {
		return s.Complete(ctx, cs[0].Key, cs[0].Owner, cs[0].Result, cs[0].Expires)
	}
	items := make([]types.TransactWriteItem, len(cs))
	for i, c := range cs {
		update, values := completeUpdate(c.Owner, c.Result, c.Expires.Unix())
		items[i] = types.TransactWriteItem{Update: &types.Update{
			TableName:                 &s.table,
			Key:                       s.layout.key(c.Key),
			UpdateExpression:          &update,
			ConditionExpression:       aws.String("#owner = :owner"),
			ExpressionAttributeNames:  completeNames(),
			ExpressionAttributeValues: values,
		}}
	}
	_, err := tw.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		if i, ok := lostAt(tce.CancellationReasons); ok && i < len(cs) {
			return fmt.Errorf("idempotency: complete of key %q (%d of a transaction of %d keys, %q to %q, none of which was written) in table %s refused: %w",
				cs[i].Key, i+1, len(cs), cs[0].Key, cs[len(cs)-1].Key, s.table, idempotency.ErrLeaseLost)
		}
		return &idempotency.StoreError{Op: "complete", Key: cs[0].Key, Retryable: cancelRetryable(tce.CancellationReasons),
			Err: fmt.Errorf("table %s: a transaction of %d completes (%q to %q), none of which was written: %w", s.table, len(cs), cs[0].Key, cs[len(cs)-1].Key, err)}
	}
	return &idempotency.StoreError{Op: "complete", Key: cs[0].Key, Retryable: retryable(err),
		Err: fmt.Errorf("table %s: a transaction of %d completes (%q to %q): %w", s.table, len(cs), cs[0].Key, cs[len(cs)-1].Key, err)}
}

// lostAt is the index of the first item a transaction was cancelled for
// because its condition (the owner) failed.
func lostAt(reasons []types.CancellationReason) (int, bool) {
	for i, r := range reasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return i, true
		}
	}
	return 0, false
}

// cancelRetryable reports a transaction cancelled for reasons a retry can
// get past: a conflict with another transaction, throttling, a busy
// service.
func cancelRetryable(reasons []types.CancellationReason) bool {
	retry := false
	for _, r := range reasons {
		switch aws.ToString(r.Code) {
		case "", "None":
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "InternalServerError":
			retry = true
		default:
			return false // ValidationError, ItemCollectionSizeLimitExceeded: a retry gets no further
		}
	}
	return retry
}
