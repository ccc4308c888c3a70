package dynamodbstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
)

// A store on the table "idempotency" (created once, e.g. by CreateTable or
// the CDK construct), used by Do.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamodbstore.New(dynamodb.NewFromConfig(cfg), "idempotency")
	if err != nil {
		log.Fatal(err)
	}
	receipt, err := idempotency.Do(ctx, store, "orders/order-42", func(context.Context) ([]byte, error) {
		return []byte("receipt-1"), nil // the side effect, run at most once
	})
	fmt.Println(string(receipt), err)
}
