// Command bare is a bare aws-lambda-go bootstrap, the reference of the cold
// start benchmark in bench/coldstart.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) { return ev, nil })
}
