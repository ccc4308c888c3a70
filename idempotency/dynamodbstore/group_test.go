package dynamodbstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
)

func reasons(codes ...string) []types.CancellationReason {
	out := make([]types.CancellationReason, len(codes))
	for i, c := range codes {
		out[i] = types.CancellationReason{Code: aws.String(c)}
	}
	return out
}

func TestCancellationReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		codes     []string
		lost      int // -1: none
		retryable bool
	}{
		{"one owner lost", []string{"None", "ConditionalCheckFailed", "None"}, 1, false},
		{"the first of two lost", []string{"ConditionalCheckFailed", "None", "ConditionalCheckFailed"}, 0, false},
		{"conflict", []string{"None", "TransactionConflict"}, -1, true},
		{"throttled", []string{"ThrottlingError", "None"}, -1, true},
		{"throughput", []string{"ProvisionedThroughputExceeded"}, -1, true},
		{"validation", []string{"None", "ValidationError"}, -1, false},
		{"conflict and validation", []string{"TransactionConflict", "ValidationError"}, -1, false},
		{"no reason", nil, -1, false},
	} {
		r := reasons(tc.codes...)
		i, ok := lostAt(r)
		if !ok {
			i = -1
		}
		if i != tc.lost {
			t.Errorf("%s: lost at %d, want %d", tc.name, i, tc.lost)
		}
		if got := cancelRetryable(r); got != tc.retryable {
			t.Errorf("%s: retryable %v, want %v", tc.name, got, tc.retryable)
		}
	}
}

// transactClient answers every TransactWriteItems with err and records
// the size of each request.
type transactClient struct {
	Client
	err   error
	sizes []int
}

func (c *transactClient) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.sizes = append(c.sizes, len(in.TransactItems))
	if c.err != nil {
		return nil, c.err
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// UpdateItem is Complete's request: recorded as a transaction of one.
func (c *transactClient) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.sizes = append(c.sizes, 1)
	return &dynamodb.UpdateItemOutput{}, nil
}

func completions(n int, result []byte) []idempotency.Completion {
	cs := make([]idempotency.Completion, n)
	for i := range cs {
		cs[i] = idempotency.Completion{Key: fmt.Sprintf("k%d", i), Owner: "o", Result: result, Expires: time.Unix(1e9, 0)}
	}
	return cs
}

func TestCompleteAllErrors(t *testing.T) {
	t.Parallel()
	lost := &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons("None", "None", "ConditionalCheckFailed")}
	c := &transactClient{err: lost}
	s, err := New(c, "t")
	if err != nil {
		t.Fatal(err)
	}
	err = s.CompleteAll(context.Background(), completions(3, nil))
	if !errors.Is(err, idempotency.ErrLeaseLost) || !strings.Contains(err.Error(), `"k2"`) {
		t.Fatalf("a cancelled transaction: %v; want ErrLeaseLost naming k2", err)
	}
	c.err = &types.TransactionCanceledException{CancellationReasons: reasons("TransactionConflict", "None")}
	var se *idempotency.StoreError
	if err := s.CompleteAll(context.Background(), completions(2, nil)); !errors.As(err, &se) || !se.Transient() {
		t.Fatalf("a conflict: %v; want a retryable StoreError", err)
	}
	c.err = &types.ProvisionedThroughputExceededException{}
	if err := s.CompleteAll(context.Background(), completions(2, nil)); !errors.As(err, &se) || !se.Transient() {
		t.Fatalf("throttled: %v; want a retryable StoreError", err)
	}
}

// A group is split at 100 items a transaction, and sooner when the
// results pass 3 MB; the first transaction that fails ends the group.
func TestCompleteAllSplits(t *testing.T) {
	t.Parallel()
	c := &transactClient{}
	s, err := New(c, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteAll(context.Background(), completions(250, nil)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.sizes) != "[100 100 50]" {
		t.Fatalf("transactions of %v items; want [100 100 50]", c.sizes)
	}
	c.sizes = nil
	if err := s.CompleteAll(context.Background(), completions(10, make([]byte, 1<<20))); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.sizes) != "[3 3 3 1]" {
		t.Fatalf("transactions of %v items for 10 results of 1 MB; want [3 3 3 1] (the last one a single UpdateItem)", c.sizes)
	}
	c.sizes, c.err = nil, &types.TransactionCanceledException{CancellationReasons: reasons("ConditionalCheckFailed")}
	if err := s.CompleteAll(context.Background(), completions(250, nil)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("%v; want ErrLeaseLost", err)
	}
	if fmt.Sprint(c.sizes) != "[100]" {
		t.Fatalf("transactions of %v items after the first failed; want [100] only", c.sizes)
	}
}
