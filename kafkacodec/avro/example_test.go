package avro_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
)

// A Kafka handler whose values are Avro with a Confluent header and whose
// keys are strings.
func Example() {
	schema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount_cents","type":"long"}]}`
	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[Order]) error {
		key, _ := handlers.KafkaKey[string](r)
		fmt.Println(key, r.Value.ID, r.Value.AmountCents)
		return nil
	},
		handlers.WithKafkaValue(avro.Must(avro.WithSchema(schema))),
		handlers.WithKafkaKey[string](kafkacodec.String()),
		handlers.WithLogger(slog.New(slog.DiscardHandler)),
	)

	// id "o-1" (length 3, zigzag 6), amount 1299 (zigzag 2598), after a
	// Confluent header naming schema 5.
	value := []byte{0, 0, 0, 0, 5, 6, 'o', '-', '1', 0xa6, 0x14}
	var b sevents.KafkaBuilder
	payload, _ := json.Marshal(b.Add("orders", 0, []byte("customer-7"), value).Event())
	out, err := h.Invoke(context.Background(), payload)
	fmt.Println(string(out), err)
	// Output:
	// customer-7 o-1 1299
	// {"batchItemFailures":[]} <nil>
}
