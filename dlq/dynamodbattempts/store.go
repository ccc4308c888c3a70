// Package dynamodbattempts keeps the attempts of stream and Kafka records
// (dlq.AttemptsStore) in a DynamoDB table, for handlers.WithDeadLetters with
// dlq.WithAttempts.
//
// # Table layout
//
// One item per record (CreateTable, `sluice tables create --attempts NAME`
// and the CDK construct make exactly this table: the key and TTL; the other
// attributes need no declaration):
//
//	id            S  partition key: "<function>#<source ARN>#<record id>"
//	attempts      N  the record's attempts (dlq.Attempts.Count)
//	isolated      N  deliveries in a row alone in a batch, unanswered (dlq.Attempts.Isolated)
//	firstFailure  N  epoch milliseconds of the first answered failure
//	lastFailure   N  epoch milliseconds of the last answered failure
//	lastError     S  the last answered failure's error text (at most 1000 bytes)
//	lastClass     S  its class: permanent, transient or plain
//	expiration    N  epoch seconds; the table's TTL attribute (last update + TTL)
//
// Every call is one UpdateItem with an atomic ADD and ReturnValues ALL_NEW
// (the failure times and last error are what a crash's envelope reports), so
// concurrent invocations never lose a count:
//
//	Begin: ADD attempts :1, isolated :1 SET expiration = :exp
//	Fail:  [ADD attempts :1] SET isolated = :0, lastFailure = :t, lastError = :e, lastClass = :c,
//	       firstFailure = if_not_exists(firstFailure, :t), expiration = :exp
//
// On a healthy batch of more than one record the handler calls neither: a
// batch of one record costs one request, and each failed record one more.
package dynamodbattempts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/dlq"
)

// Attribute names of the table layout.
const (
	AttrID           = "id"
	AttrAttempts     = "attempts"
	AttrIsolated     = "isolated"
	AttrFirstFailure = "firstFailure"
	AttrLastFailure  = "lastFailure"
	AttrLastError    = "lastError"
	AttrLastClass    = "lastClass"
	AttrExpiration   = "expiration"
)

// maxErrorBytes caps lastError, so an item stays small.
const maxErrorBytes = 1000

// Client is the part of *dynamodb.Client the store uses.
type Client interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Store is a dlq.AttemptsStore on one DynamoDB table.
type Store struct {
	client Client
	table  string
	ttl    time.Duration
}

var _ dlq.AttemptsStore = (*Store)(nil)

// An Option configures a Store.
type Option func(*Store) error

// WithTTL sets how long an item lives after its last update (default
// dlq.DefaultAttemptsTTL). Keep it longer than the mapping's
// MaximumRecordAgeInSeconds.
func WithTTL(d time.Duration) Option {
	return func(s *Store) error {
		if d < time.Minute {
			return fmt.Errorf("dynamodbattempts.WithTTL(%v): must be at least a minute", d)
		}
		s.ttl = d
		return nil
	}
}

// New returns a store on table.
func New(client Client, table string, opts ...Option) (*Store, error) {
	s := &Store{client: client, table: table, ttl: dlq.DefaultAttemptsTTL}
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("dynamodbattempts: client is nil"))
	}
	if table == "" {
		errs = append(errs, errors.New("dynamodbattempts: the table name is empty"))
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// Begin implements dlq.AttemptsStore.
func (s *Store) Begin(ctx context.Context, key string, now time.Time) (dlq.Attempts, error) {
	return s.update(ctx, key, "ADD #a :one, #i :one SET #x = :exp", map[string]string{
		"#a": AttrAttempts, "#i": AttrIsolated, "#x": AttrExpiration,
	}, map[string]types.AttributeValue{
		":one": num(1), ":exp": num(now.Add(s.ttl).Unix()),
	})
}

// Fail implements dlq.AttemptsStore.
func (s *Store) Fail(ctx context.Context, key string, counted bool, f dlq.Failure) (dlq.Attempts, error) {
	expr := "SET #i = :zero, #lf = :t, #le = :e, #lc = :c, #ff = if_not_exists(#ff, :t), #x = :exp"
	names := map[string]string{"#i": AttrIsolated, "#lf": AttrLastFailure, "#le": AttrLastError, "#lc": AttrLastClass,
		"#ff": AttrFirstFailure, "#x": AttrExpiration}
	text := f.Error
	if len(text) > maxErrorBytes {
		text = text[:maxErrorBytes]
	}
	values := map[string]types.AttributeValue{
		":zero": num(0), ":t": num(f.Time.UnixMilli()), ":exp": num(f.Time.Add(s.ttl).Unix()),
		":e": &types.AttributeValueMemberS{Value: text}, ":c": &types.AttributeValueMemberS{Value: f.Class},
	}
	if !counted {
		expr += " ADD #a :one"
		names["#a"] = AttrAttempts
		values[":one"] = num(1)
	}
	return s.update(ctx, key, expr, names, values)
}

var _ dlq.Forgetter = (*Store)(nil)

// Forget implements dlq.Forgetter with one DeleteItem.
func (s *Store) Forget(ctx context.Context, key string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table,
		Key:       map[string]types.AttributeValue{AttrID: &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		return fmt.Errorf("dynamodbattempts: forgetting the attempts of %s in table %s: %w", key, s.table, err)
	}
	return nil
}

func (s *Store) update(ctx context.Context, key, expr string, names map[string]string, values map[string]types.AttributeValue) (dlq.Attempts, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{AttrID: &types.AttributeValueMemberS{Value: key}},
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return dlq.Attempts{}, fmt.Errorf("dynamodbattempts: counting the attempts of %s in table %s: %w", key, s.table, err)
	}
	return decode(out.Attributes), nil
}

func decode(item map[string]types.AttributeValue) dlq.Attempts {
	n := func(name string) int64 {
		if v, ok := item[name].(*types.AttributeValueMemberN); ok {
			x, _ := strconv.ParseInt(v.Value, 10, 64)
			return x
		}
		return 0
	}
	str := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	ms := func(name string) time.Time {
		if x := n(name); x != 0 {
			return time.UnixMilli(x).UTC()
		}
		return time.Time{}
	}
	return dlq.Attempts{
		Count: int(n(AttrAttempts)), Isolated: int(n(AttrIsolated)),
		FirstFailure: ms(AttrFirstFailure), LastFailure: ms(AttrLastFailure),
		LastError: str(AttrLastError), LastClass: str(AttrLastClass),
	}
}
