package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/redrive"
	"github.com/sluicehq/sluice/localtest"
)

type payment struct{ PaymentID, Card string }

// A record quarantined by a buggy handler is replayed, after the fix, into
// the fixed handler (in process here; `sluice redrive` invokes the deployed
// function). The envelope leaves the file once its record succeeded.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "redrive-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "dead-letters.jsonl")
	dest, err := dlq.OpenFile(path)
	if err != nil {
		panic(err)
	}
	buggy := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[payment]) error {
		if len(r.Value.Card) != 16 {
			return batch.Permanent(errors.New("card number has the wrong length"))
		}
		return nil
	}, handlers.WithDeadLetters(dest), handlers.WithLogger(slog.New(slog.DiscardHandler)))
	b := &sevents.SQSBuilder{}
	b.Add(`{"PaymentID":"pay-001","Card":"4111111111111111"}`).Add(`{"PaymentID":"pay-002","Card":"4111 1111 1111 1111"}`)
	event, _ := sevents.MarshalEvent(b.Event())
	if _, err := buggy.Invoke(context.Background(), event); err != nil {
		panic(err)
	}
	dest.Close()

	fixed := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[payment]) error {
		fmt.Println("charged", r.Value.PaymentID, "(message", r.Raw.MessageId+")")
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)))
	src, err := redrive.File(path)
	if err != nil {
		panic(err)
	}
	sum, err := redrive.Run(context.Background(), src, redrive.Options{Invoker: localtest.InProcess(fixed)})
	if err != nil {
		panic(err)
	}
	fmt.Printf("read %d, replayed %d, left %d, ok %v\n", sum.Read, sum.Replayed, sum.Left(), sum.OK())
	left, _ := os.ReadFile(path)
	fmt.Printf("%d bytes left in the file\n", len(left))
	// Output:
	// charged pay-002 (message 00000002-0000-4000-8000-000000000002)
	// read 1, replayed 1, left 0, ok true
	// 0 bytes left in the file
}

// Event rebuilds the Lambda event of a record's source around the record
// exactly as Lambda delivered it: here an SQS message, with its message id.
func ExampleEvent() {
	env := &dlq.Envelope{Version: dlq.Version, Source: sevents.SourceSQS, SourceARN: "arn:aws:sqs:us-east-1:123456789012:payments",
		RecordID: "m-2", Reason: dlq.ReasonPermanent, Class: "permanent", Error: "card number has the wrong length",
		Record: []byte(`{"messageId":"m-2","body":"{\"PaymentID\":\"pay-002\"}","eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:payments"}`)}
	event, err := redrive.Event([]*dlq.Envelope{env})
	fmt.Println(string(event), err)
	// Output:
	// {"Records":[{"messageId":"m-2","body":"{\"PaymentID\":\"pay-002\"}","eventSource":"aws:sqs","eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:payments"}]} <nil>
}
