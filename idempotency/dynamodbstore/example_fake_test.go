package dynamodbstore_test

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
)

// table stands in for *dynamodb.Client and prints each request. No record
// expires while the example runs, so a claim's condition comes down to
// attribute_not_exists(id), and a completion's to #owner = :owner; a real
// table (or DynamoDB Local) evaluates the whole expressions.
type table map[string]map[string]types.AttributeValue

func (t table) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	id := in.Item[dynamodbstore.DefaultPartitionKey].(*types.AttributeValueMemberS).Value
	if old, ok := t[id]; ok {
		fmt.Println("PutItem", id, "refused: the item exists")
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: maps.Clone(old)}
	}
	t[id] = maps.Clone(in.Item)
	fmt.Println("PutItem", id, "claimed")
	return &dynamodb.PutItemOutput{}, nil
}

func (t table) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	id := in.Key[dynamodbstore.DefaultPartitionKey].(*types.AttributeValueMemberS).Value
	v := in.ExpressionAttributeValues
	item, ok := t[id]
	if !ok || item[dynamodbstore.AttrOwner].(*types.AttributeValueMemberS).Value != v[":owner"].(*types.AttributeValueMemberS).Value {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	if done, ok := v[":completed"]; ok { // Complete
		item[dynamodbstore.AttrStatus], item[dynamodbstore.AttrExpiration] = done, v[":exp"]
		delete(item, dynamodbstore.AttrInProgressExpiration)
		if data, ok := v[":data"]; ok {
			item[dynamodbstore.AttrData] = data
		}
		fmt.Println("UpdateItem", id, "completed")
	}
	return &dynamodb.UpdateItemOutput{}, nil
}

func (t table) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	delete(t, in.Key[dynamodbstore.DefaultPartitionKey].(*types.AttributeValueMemberS).Value)
	return &dynamodb.DeleteItemOutput{}, nil
}

// The requests Do makes: the first call for a key claims it (a conditional
// PutItem), runs the side effect and stores its result (UpdateItem); a
// repeat costs one refused PutItem, whose old item carries the result, and
// does not run the side effect again.
func ExampleNew_requests() {
	store, err := dynamodbstore.New(table{}, "idempotency")
	if err != nil {
		panic(err)
	}
	for range 2 {
		receipt, err := idempotency.Do(context.Background(), store, "orders/order-42", func(context.Context) ([]byte, error) {
			fmt.Println("charging order-42")
			return []byte("receipt-1"), nil
		})
		fmt.Println(string(receipt), err)
	}
	// Output:
	// PutItem orders/order-42 claimed
	// charging order-42
	// UpdateItem orders/order-42 completed
	// receipt-1 <nil>
	// PutItem orders/order-42 refused: the item exists
	// receipt-1 <nil>
}
