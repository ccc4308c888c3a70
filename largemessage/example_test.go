package largemessage_test

import (
	"context"
	"fmt"
	"log/slog"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/largemessage"
)

// An SQS handler whose queue carries both small messages and ones the SQS
// Extended Client offloaded to S3. In a Lambda function the client is
// s3.NewFromConfig(cfg); here a bucket in memory stands in for it.
func ExampleSQS() {
	bucket := memS3{"orders-large/7c1f": []byte(`{"id":"o-2","lines":["a","b"]}`)}
	process := func(ctx context.Context, r handlers.SQSRecord[order]) error {
		fmt.Println(r.Value.ID, len(r.Value.Lines), "lines")
		return nil
	}
	h := handlers.MustSQS(largemessage.SQS(bucket, process), handlers.WithConcurrency(1), handlers.WithLogger(slog.New(slog.DiscardHandler)))

	b := &sevents.SQSBuilder{}
	b.Add(`{"id":"o-1","lines":["a"]}`)
	b.Add(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"orders-large","s3Key":"7c1f"}]`)
	ev := b.Event()
	ev.Records[1].MessageAttributes = sizeAttr(largemessage.SizeAttribute, 30)
	raw, _ := sevents.MarshalEvent(ev)
	out, err := h.Invoke(context.Background(), raw)
	fmt.Println(string(out), err)
	// Output:
	// o-1 1 lines
	// o-2 2 lines
	// {"batchItemFailures":[]} <nil>
}
