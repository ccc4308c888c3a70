package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/handlers"
)

// Records that a producer aggregated with the Kinesis Producer Library
// reach the function one user record at a time: each with its own partition
// key, its aggregate's sequence number and its index in the aggregate. A
// failure reports the aggregate's sequence number (all Lambda knows), so
// Lambda's retry delivers the user records before it again.
func ExampleNewKinesis_kplAggregatedRecords() {
	h, err := handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[Order]) error {
		fmt.Printf("%s: partition key %s, user record %d of %s\n", r.Value.OrderID, r.PartitionKey(), r.SubSequenceNumber(), r.SequenceNumber()[50:])
		if r.Value.Amount <= 0 {
			return fmt.Errorf("order %s: amount must be positive", r.Value.OrderID)
		}
		return nil
	}, exampleOpts...)
	if err != nil {
		panic(err)
	}
	b := &sevents.KinesisBuilder{}
	b.Add("cust-0", order("o-0", 5))
	b.AddAggregated(
		kpl.Record{PartitionKey: "cust-1", Data: order("o-1", 10)},
		kpl.Record{PartitionKey: "cust-2", Data: order("o-2", 0)},
		kpl.Record{PartitionKey: "cust-1", Data: order("o-3", 7.5)},
	)
	raw, _ := json.Marshal(b.Event())
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		panic(err)
	}
	var resp struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
	}
	json.Unmarshal(out, &resp)
	fmt.Println("reported:", resp.BatchItemFailures[0].ItemIdentifier[50:])
	// Output:
	// o-0: partition key cust-0, user record 0 of 000000
	// o-1: partition key cust-1, user record 0 of 000001
	// o-2: partition key cust-2, user record 1 of 000001
	// reported: 000001
}
