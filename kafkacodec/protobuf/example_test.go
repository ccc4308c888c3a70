package protobuf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec/protobuf"
)

// A Kafka handler whose values are Protobuf messages written by Confluent's
// serializer. The record type names the generated message: here the
// well-known google.protobuf.Struct, so the example needs no .proto file;
// a handler for KafkaRecord[*pb.Order] decodes your own type the same way.
func Example() {
	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[*structpb.Struct]) error {
		f := r.Value.GetFields()
		fmt.Println(f["id"].GetStringValue(), f["amount_cents"].GetNumberValue())
		return nil
	}, handlers.WithKafkaValue(protobuf.Must()), handlers.WithLogger(slog.New(slog.DiscardHandler)))

	msg, _ := structpb.NewStruct(map[string]any{"id": "o-1", "amount_cents": 1299})
	encoded, _ := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	// The Confluent header (magic byte 0, schema id 5), then the message
	// indexes (a single 0: the first message of its .proto file), then
	// the message.
	value := append([]byte{0, 0, 0, 0, 5, 0}, encoded...)
	var b sevents.KafkaBuilder
	payload, _ := json.Marshal(b.Add("orders", 0, []byte("customer-7"), value).Event())
	out, err := h.Invoke(context.Background(), payload)
	fmt.Println(string(out), err)
	// Output:
	// o-1 1299
	// {"batchItemFailures":[]} <nil>
}
