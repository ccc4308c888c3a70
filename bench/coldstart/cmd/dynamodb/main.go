// Command dynamodb is the smallest Sluice bootstrap for its source, for the
// cold start guard and benchmark in bench/coldstart.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/handlers"
)

type order struct {
	ID     string  `json:"id" dynamodbav:"id"`
	Amount float64 `json:"amount" dynamodbav:"amount"`
}

func main() {
	lambda.Start(handlers.MustDynamoDB(func(ctx context.Context, r handlers.DynamoDBRecord[order]) error { return nil }))
}
