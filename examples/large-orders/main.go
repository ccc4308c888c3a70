// Command large-orders is a Lambda function over an SQS queue whose
// producers use the Amazon SQS Extended Client Library: an order too large
// for SQS is stored in S3 and the message carries a pointer to it, which
// package largemessage follows. It is the function of the large-message
// run in docs/localtest.md ("Local AWS servers"), against the S3 and SQS
// that `sluice local start` serves.
//
// Build it as Lambda runs Go:
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./examples/large-orders
//
// Environment: the standard AWS variables (AWS_REGION, credentials,
// AWS_ENDPOINT_URL_S3 for a local S3), and
//
//	SLUICE_EFFECTS_FILE  if set, one JSON line {"record", "id", "lines"} per
//	                     order processed: the message id, the order's id
//	                     and how many lines it has, which sluice run reads
//	                     back to check that no order was lost
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/largemessage"
)

// Order is an order, small or offloaded to S3.
type Order struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// An endpoint given by IP address (sluice local's 127.0.0.1) is
	// addressed path-style by the SDK itself; a local S3 by host name
	// (http://localhost:4566) needs UsePathStyle, since bucket.localhost
	// does not resolve.
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = os.Getenv("AWS_ENDPOINT_URL_S3") != "" })
	effects := os.Getenv("SLUICE_EFFECTS_FILE")
	var mu sync.Mutex
	process := func(_ context.Context, r handlers.SQSRecord[Order]) error {
		if effects == "" {
			return nil
		}
		line, _ := json.Marshal(map[string]any{"record": r.MessageID(), "id": r.Value.ID, "lines": len(r.Value.Lines)})
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(append(line, '\n')); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	lambda.Start(handlers.MustSQS(largemessage.SQS(client, process)))
}
