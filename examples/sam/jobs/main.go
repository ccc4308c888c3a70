// Command jobs is the example SAM application's SQS consumer: it runs
// each job and reports the ones it cannot run as partial batch failures;
// the queue's redrive policy moves a job that keeps failing to its
// dead-letter queue.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/examples/sam/internal/effects"
	"github.com/sluicehq/sluice/handlers"
)

// Job is a message's body.
type Job struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

func run(_ context.Context, r handlers.SQSRecord[Job]) error {
	if r.Value.Kind != "resize" && r.Value.Kind != "thumbnail" {
		return fmt.Errorf("job %s: unknown kind %q", r.Value.ID, r.Value.Kind)
	}
	return effects.Write(r.MessageID(), r.Value.ID, r.MessageID())
}

func main() {
	lambda.Start(handlers.MustSQS(run))
}
