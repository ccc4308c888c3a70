// Command orders is the example SAM application's Kinesis consumer: it
// books each order, and refuses one whose amount is not positive. The
// template gives its mapping bisection, two retries and an SQS on-failure
// destination, so a refused order ends there and its shard moves on.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/examples/sam/internal/effects"
	"github.com/sluicehq/sluice/handlers"
)

// Order is a record's payload.
type Order struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Amount   int    `json:"amount"`
}

func book(_ context.Context, r handlers.KinesisRecord[Order]) error {
	o := r.Value
	if o.Amount <= 0 {
		return batch.Permanent(fmt.Errorf("order %s: amount %d is not positive", o.ID, o.Amount))
	}
	return effects.Write(r.SequenceNumber(), o.ID, r.PartitionKey())
}

func main() {
	lambda.Start(handlers.MustKinesis(book))
}
