package source_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// A mapping over a real Kinesis stream (here kinesalite or LocalStack on
// port 4567), read from its oldest record, with an in-process handler. (It
// needs the endpoint, so it has no output here.)
func ExampleKinesisStream() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithBaseEndpoint("http://127.0.0.1:4567"))
	if err != nil {
		fmt.Println(err)
		return
	}
	handler := bytesFunc(func(context.Context, []byte) ([]byte, error) { return []byte(`{"batchItemFailures":[]}`), nil })
	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON",
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, err := localtest.Run(ctx, localtest.Options{Mapping: m, Invoker: localtest.InProcess(handler),
		Stream: source.KinesisStream(cfg, "orders", m.StartingPosition), MaxInvocations: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Totals.Processed, "processed")
}
