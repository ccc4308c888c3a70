package dynamodbattempts_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
)

// table stands in for *dynamodb.Client (dynamodb.NewFromConfig(cfg) in a
// deployed function). It keeps the two counters of the package's table
// layout, applies the store's two update expressions (ADD counts an
// attempt; the failure's SET clears "isolated") and prints each request.
type table struct{ attempts, isolated map[string]int64 }

func (t *table) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	id := in.Key[dynamodbattempts.AttrID].(*types.AttributeValueMemberS).Value
	expr := aws.ToString(in.UpdateExpression)
	if strings.HasPrefix(expr, "SET") {
		t.isolated[id] = 0 // an answered failure
	} else {
		t.isolated[id]++ // a delivery alone in its batch, counted before it runs
	}
	if strings.Contains(expr, "ADD #a") {
		t.attempts[id]++
	}
	fmt.Printf("UpdateItem %s: attempts %d, isolated %d\n", aws.ToString(in.TableName), t.attempts[id], t.isolated[id])
	return &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{
		dynamodbattempts.AttrAttempts: &types.AttributeValueMemberN{Value: strconv.FormatInt(t.attempts[id], 10)},
		dynamodbattempts.AttrIsolated: &types.AttributeValueMemberN{Value: strconv.FormatInt(t.isolated[id], 10)},
	}}, nil
}

func (t *table) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, nil
}

type discard struct{}

func (discard) Send(_ context.Context, envs []*dlq.Envelope) error {
	for _, e := range envs {
		fmt.Println("quarantined:", e.Reason, "after", e.Attempts, "attempts:", e.Error)
	}
	return nil
}

// A Kinesis handler that quarantines a record after two failed attempts,
// counted in the table "attempts" across invocations (the table outlives
// the function; dlq.NewMemory would not). Lambda delivers the failing
// record again alone in its batch (BisectBatchOnFunctionError), so each
// delivery costs a request before it runs and one for its failure.
func ExampleNew() {
	store, err := dynamodbattempts.New(&table{map[string]int64{}, map[string]int64{}}, "attempts")
	if err != nil {
		panic(err)
	}
	h := handlers.MustKinesis(func(ctx context.Context, r handlers.KinesisRecord[struct{ ID int }]) error {
		return errors.New("inventory service: 503")
	}, handlers.WithDeadLetters(discard{}, dlq.WithMaxAttempts(2), dlq.WithAttempts(store)),
		handlers.WithLogger(slog.New(slog.DiscardHandler)))

	b := &sevents.KinesisBuilder{}
	b.Add("order-42", []byte(`{"ID":42}`))
	event, _ := sevents.MarshalEvent(b.Event())
	for range 2 {
		out, err := h.Invoke(context.Background(), event)
		if err != nil {
			fmt.Println("invocation failed, Lambda retries:", err)
			continue
		}
		fmt.Println(string(out))
	}
	// Output:
	// UpdateItem attempts: attempts 1, isolated 1
	// UpdateItem attempts: attempts 1, isolated 0
	// invocation failed, Lambda retries: no record of the batch succeeded: 1 records; first failure on record 49590338271490256608559690000000000000000000000000000000: inventory service: 503
	// UpdateItem attempts: attempts 2, isolated 1
	// UpdateItem attempts: attempts 2, isolated 0
	// quarantined: attempts after 2 attempts: inventory service: 503
	// {"batchItemFailures":[]}
}
