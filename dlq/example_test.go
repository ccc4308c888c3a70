package dlq_test

import (
	"bufio"
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
)

// A handler with dead letters parks a poison message in the destination
// (here a file; dlq/sqsdest for a queue) as an envelope that holds the
// message exactly as Lambda delivered it, and the batch succeeds: the queue
// moves on, and sluice redrive can replay it once the bug is fixed.
func ExampleOpenFile() {
	dir, _ := os.MkdirTemp("", "dlq-example")
	defer os.RemoveAll(dir)
	dest, err := dlq.OpenFile(filepath.Join(dir, "dead-letters.jsonl"))
	if err != nil {
		panic(err)
	}
	defer dest.Close()

	h := handlers.MustSQS(func(ctx context.Context, r handlers.SQSRecord[struct{ PaymentID string }]) error {
		if r.Value.PaymentID == "pay-002" {
			return batch.Permanent(errors.New("card number fails its checksum"))
		}
		return nil
	}, handlers.WithDeadLetters(dest, dlq.WithMaxAttempts(3)), handlers.WithLogger(slog.New(slog.DiscardHandler)))

	b := &sevents.SQSBuilder{}
	b.Add(`{"PaymentID":"pay-001"}`).Add(`{"PaymentID":"pay-002"}`)
	event, _ := sevents.MarshalEvent(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)

	f, _ := os.Open(dest.Path())
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		env, err := dlq.Unmarshal(sc.Bytes())
		if err != nil {
			panic(err)
		}
		fmt.Println(env.Source, env.RecordID, env.Reason, env.Class, env.Error)
	}
	// Output:
	// {"batchItemFailures":[]} <nil>
	// sqs 00000002-0000-4000-8000-000000000002 permanent permanent card number fails its checksum
}
