// Package dynamodbstore keeps idempotency records in a DynamoDB table.
//
// # Table layout
//
// One item per key (CreateTable makes exactly this table):
//
//	id                      S  partition key (name set by WithPartitionKey; default "id"):
//	                           the idempotency key, or, with WithSortKey, a fixed value
//	<sort key>              S  optional (WithSortKey): the idempotency key
//
// A key longer than its attribute allows (2,048 bytes for a partition
// key, 1,024 for a sort key) is kept as idempotency.StoredKey gives it:
// its head and the hex SHA-256 of the whole key, so no key a user can
// produce is refused. The other attributes:
//
//	status                  S  INPROGRESS or COMPLETED
//	expiration              N  epoch seconds; the table's TTL attribute
//	in_progress_expiration  N  epoch milliseconds; the in-progress lease (INPROGRESS only)
//	owner                   S  random token of the claim that holds the key
//	data                    B  the stored result (COMPLETED, when not empty)
//	validation              S  hex SHA-256 of the payload (when WithPayload is used)
//
// A claim is one conditional PutItem with
//
//	attribute_not_exists(#pk) OR #exp < :now OR (#status = :inprogress AND #ipexp < :now_ms)
//
// and ReturnValuesOnConditionCheckFailure=ALL_OLD, so a duplicate costs one
// write request and no read. Complete (UpdateItem) and Release (DeleteItem)
// are conditional on #owner = :owner (fencing); Extend, the lease renewal
// a claim's owner makes while its function runs (only a record that runs
// longer than a third of the lease makes one), is an UpdateItem of
// in_progress_expiration conditional on #owner = :owner AND #status =
// :inprogress. Get (idempotency.Getter, which package handlers uses to
// read a batch's keys before the batch runs) is one eventually consistent
// BatchGetItem per 100 keys. CompleteAll (idempotency.GroupCompleter,
// which an ordered lane of the handlers' claims taken ahead uses for the
// completes that wait while one is in flight) is one
// TransactWriteItems of those Updates per 100 keys, all or none; a
// transaction costs two write units per item where an UpdateItem costs
// one.
//
// Throttling, server errors and timeouts become a retryable
// *idempotency.StoreError, which idempotency.Do retries with backoff.
package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/idempotency"
)

// Attribute names of the table layout.
const (
	DefaultPartitionKey      = "id"
	AttrStatus               = "status"
	AttrExpiration           = "expiration"
	AttrInProgressExpiration = "in_progress_expiration"
	AttrOwner                = "owner"
	AttrData                 = "data"
	AttrValidation           = "validation"
)

const (
	statusInProgress = "INPROGRESS"
	statusCompleted  = "COMPLETED"
)

// Client is the part of *dynamodb.Client the store uses.
type Client interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Option configures the table layout.
type Option func(*layout)

type layout struct {
	pk, sk  string
	pkValue string // the fixed partition key value when sk is set
}

// WithPartitionKey names the partition key attribute (default "id").
func WithPartitionKey(name string) Option { return func(l *layout) { l.pk = name } }

// WithSortKey puts the idempotency key in the sort key attribute name and
// partitionValue in every item's partition key (one table shared with
// other data, as Powertools' sort-key mode).
func WithSortKey(name, partitionValue string) Option {
	return func(l *layout) { l.sk, l.pkValue = name, partitionValue }
}

func newLayout(opts []Option) (layout, error) {
	l := layout{pk: DefaultPartitionKey}
	for _, o := range opts {
		o(&l)
	}
	switch {
	case l.pk == "":
		return l, errors.New("dynamodbstore: WithPartitionKey(\"\"): the partition key needs a name")
	case l.sk == "" && l.pkValue != "":
		return l, errors.New("dynamodbstore: WithSortKey needs a sort key name")
	case l.sk != "" && l.pkValue == "":
		return l, fmt.Errorf("dynamodbstore: WithSortKey(%q, \"\"): the fixed partition key value must not be empty", l.sk)
	case l.sk != "" && l.sk == l.pk:
		return l, fmt.Errorf("dynamodbstore: partition and sort key are both %q", l.sk)
	}
	for _, n := range []string{l.pk, l.sk} {
		switch n {
		case AttrStatus, AttrExpiration, AttrInProgressExpiration, AttrOwner, AttrData, AttrValidation, AttrPosition, AttrState:
			return l, fmt.Errorf("dynamodbstore: key attribute %q clashes with a record attribute; choose another name", n)
		}
	}
	return l, nil
}

// Key limits: DynamoDB refuses a partition key over 2,048 bytes and a
// sort key over 1,024.
const (
	PartitionKeyLimit = 2048
	SortKeyLimit      = 1024
)

// stored is the form in which the table keeps idempotency key k
// (idempotency.StoredKey under the limit of the attribute that holds it).
func (l layout) stored(k string) string {
	if l.sk == "" {
		return idempotency.StoredKey(k, PartitionKeyLimit)
	}
	return idempotency.StoredKey(k, SortKeyLimit)
}

func (l layout) key(k string) map[string]types.AttributeValue {
	if l.sk == "" {
		return map[string]types.AttributeValue{l.pk: str(l.stored(k))}
	}
	return map[string]types.AttributeValue{l.pk: str(l.pkValue), l.sk: str(l.stored(k))}
}

// Store is an idempotency.Store on one DynamoDB table.
type Store struct {
	client Client
	table  string
	layout layout
}

var _ idempotency.Store = (*Store)(nil)

// New returns a store on table through client (e.g. dynamodb.NewFromConfig).
func New(client Client, table string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("dynamodbstore: nil client")
	}
	if table == "" {
		return nil, errors.New("dynamodbstore: empty table name")
	}
	l, err := newLayout(opts)
	if err != nil {
		return nil, err
	}
	return &Store{client: client, table: table, layout: l}, nil
}

// Claim implements idempotency.Store with one conditional PutItem.
func (s *Store) Claim(ctx context.Context, c idempotency.Claim) (*idempotency.Record, error) {
	item := s.layout.key(c.Key)
	item[AttrStatus] = str(statusInProgress)
	item[AttrExpiration] = num(c.Expires.Unix())
	item[AttrInProgressExpiration] = num(c.LeaseUntil.UnixMilli())
	item[AttrOwner] = str(c.Owner)
	if c.PayloadHash != "" {
		item[AttrValidation] = str(c.PayloadHash)
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           &s.table,
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR #exp < :now OR (#status = :inprogress AND #ipexp < :now_ms)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": s.layout.pk, "#exp": AttrExpiration, "#status": AttrStatus, "#ipexp": AttrInProgressExpiration,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": num(c.Now.Unix()), ":now_ms": num(c.Now.UnixMilli()), ":inprogress": str(statusInProgress),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, s.storeError("claim", c.Key, err)
	}
	rec, perr := s.record(c.Key, ccf.Item)
	if perr != nil {
		return nil, &idempotency.StoreError{Op: "claim", Key: c.Key, Err: perr}
	}
	return rec, nil
}

// Complete implements idempotency.Store with one UpdateItem conditional on the owner.
func (s *Store) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	update, values := completeUpdate(owner, result, expires.Unix())
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.layout.key(key),
		UpdateExpression:          &update,
		ConditionExpression:       aws.String("#owner = :owner"),
		ExpressionAttributeNames:  completeNames(),
		ExpressionAttributeValues: values,
	})
	return s.ownedError("complete", key, err)
}

// completeUpdate is the update expression and values of a complete.
func completeUpdate(owner string, result []byte, expires int64) (string, map[string]types.AttributeValue) {
	values := map[string]types.AttributeValue{
		":completed": str(statusCompleted), ":exp": num(expires), ":owner": str(owner),
	}
	if len(result) > 0 {
		values[":data"] = &types.AttributeValueMemberB{Value: result}
		return "SET #status = :completed, #exp = :exp, #data = :data REMOVE #ipexp", values
	}
	return "SET #status = :completed, #exp = :exp REMOVE #ipexp, #data", values
}

func completeNames() map[string]string {
	return map[string]string{
		"#status": AttrStatus, "#exp": AttrExpiration, "#ipexp": AttrInProgressExpiration,
		"#data": AttrData, "#owner": AttrOwner,
	}
}

// Extend implements idempotency.Store with one UpdateItem conditional on
// the owner and the in-progress status.
func (s *Store) Extend(ctx context.Context, key, owner string, leaseUntil time.Time) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &s.table,
		Key:                 s.layout.key(key),
		UpdateExpression:    aws.String("SET #ipexp = :lease"),
		ConditionExpression: aws.String("#owner = :owner AND #status = :inprogress"),
		ExpressionAttributeNames: map[string]string{
			"#ipexp": AttrInProgressExpiration, "#owner": AttrOwner, "#status": AttrStatus,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lease": num(leaseUntil.UnixMilli()), ":owner": str(owner), ":inprogress": str(statusInProgress),
		},
	})
	return s.ownedError("extend", key, err)
}

// Release implements idempotency.Store with one DeleteItem conditional on the owner.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 &s.table,
		Key:                       s.layout.key(key),
		ConditionExpression:       aws.String("#owner = :owner"),
		ExpressionAttributeNames:  map[string]string{"#owner": AttrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(owner)},
	})
	return s.ownedError("release", key, err)
}

func (s *Store) ownedError(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("idempotency: %s of key %q in table %s refused: %w", op, key, s.table, idempotency.ErrLeaseLost)
	}
	return s.storeError(op, key, err)
}

func (s *Store) storeError(op, key string, err error) error {
	return &idempotency.StoreError{Op: op, Key: key, Retryable: retryable(err), Err: fmt.Errorf("table %s: %w", s.table, err)}
}

// retryable reports throttling, server errors and timeouts (what the SDK's
// standard retryer retries), but not a canceled context.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		if code == "InternalServerError" || code == "ServiceUnavailable" {
			return true
		}
		if _, ok := retry.DefaultThrottleErrorCodes[code]; ok {
			return true
		}
		if _, ok := retry.DefaultRetryableErrorCodes[code]; ok {
			return true
		}
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

func (s *Store) record(key string, item map[string]types.AttributeValue) (*idempotency.Record, error) {
	if item == nil {
		return nil, errors.New("the claim was refused but DynamoDB returned no item")
	}
	rec := &idempotency.Record{Key: key}
	switch st := getS(item, AttrStatus); st {
	case statusInProgress:
		rec.Status = idempotency.StatusInProgress
	case statusCompleted:
		rec.Status = idempotency.StatusCompleted
	default:
		return nil, fmt.Errorf("item has %s %q, want %s or %s; is table %s an idempotency table?", AttrStatus, st, statusInProgress, statusCompleted, s.table)
	}
	rec.Owner = getS(item, AttrOwner)
	rec.PayloadHash = getS(item, AttrValidation)
	if b, ok := item[AttrData].(*types.AttributeValueMemberB); ok && len(b.Value) > 0 {
		rec.Result = b.Value
	}
	exp, err := getN(item, AttrExpiration)
	if err != nil {
		return nil, err
	}
	rec.Expires = time.Unix(exp, 0)
	if rec.Status == idempotency.StatusInProgress {
		ms, err := getN(item, AttrInProgressExpiration)
		if err != nil {
			return nil, err
		}
		rec.LeaseUntil = time.UnixMilli(ms)
	}
	return rec, nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("item has no number attribute %s", name)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("item attribute %s = %q: %w", name, v.Value, err)
	}
	return n, nil
}
