package kafkacodec_test

import (
	"context"
	"fmt"
	"log/slog"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec"
)

// Unframe reads the wire header a producer's serializer wrote: here a
// Confluent header (magic byte 0, then the schema id 42, big-endian).
func ExampleUnframe() {
	value := append([]byte{0, 0, 0, 0, 42}, `{"orderId":"o-1"}`...)
	f, err := kafkacodec.Unframe(value, nil, kafkacodec.WireAuto)
	fmt.Println(f.Wire, f.SchemaID, string(f.Payload), err)
	// Output: confluent 42 {"orderId":"o-1"} <nil>
}

// A Kafka handler decodes each value with the codec WithKafkaValue gives:
// String takes the value's bytes as text, as a producer's
// StringSerializer wrote them.
func ExampleString() {
	h := handlers.MustKafka(func(ctx context.Context, r handlers.KafkaRecord[string]) error {
		fmt.Printf("%s-%d@%d: %s\n", r.Raw.Topic, r.Raw.Partition, r.Raw.Offset, r.Value)
		return nil
	}, handlers.WithKafkaValue(kafkacodec.String()), handlers.WithLogger(slog.New(slog.DiscardHandler)))

	b := &sevents.KafkaBuilder{}
	b.Add("audit", 0, []byte("k1"), []byte("user 7 signed in")).Add("audit", 0, []byte("k2"), []byte("user 7 signed out"))
	event, _ := sevents.MarshalEvent(b.Event())
	out, err := h.Invoke(context.Background(), event)
	fmt.Println(string(out), err)
	// Output:
	// audit-0@0: user 7 signed in
	// audit-0@1: user 7 signed out
	// {"batchItemFailures":[]} <nil>
}
