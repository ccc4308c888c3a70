package glueregistry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec/avro"
	"github.com/sluicehq/sluice/kafkacodec/glueregistry"
)

// schemas stands in for *glue.Client (glue.NewFromConfig(cfg) in a deployed
// function): one registered Avro schema version, and a line per call.
type schemas map[string]string

func (s schemas) GetSchemaVersion(_ context.Context, in *glue.GetSchemaVersionInput, _ ...func(*glue.Options)) (*glue.GetSchemaVersionOutput, error) {
	id := aws.ToString(in.SchemaVersionId)
	fmt.Println("GetSchemaVersion", id)
	def, ok := s[id]
	if !ok {
		return nil, &types.EntityNotFoundException{Message: aws.String("schema version not found")}
	}
	return &glue.GetSchemaVersionOutput{SchemaVersionId: in.SchemaVersionId, DataFormat: types.DataFormatAvro,
		SchemaDefinition: aws.String(def), Status: types.SchemaVersionStatusAvailable}, nil
}

type Order struct {
	ID          string `avro:"id"`
	AmountCents int64  `avro:"amount_cents"`
}

// A Kafka handler whose values are Avro written by the Glue Schema Registry
// serializer: each names its schema version by UUID, which the registry
// fetches once and caches.
func ExampleNew() {
	reg, err := glueregistry.New(schemas{"a1b2c3d4-5678-90ab-cdef-0123456789ab": `{"type":"record","name":"Order",
		"fields":[{"name":"id","type":"string"},{"name":"amount_cents","type":"long"}]}`})
	if err != nil {
		panic(err)
	}
	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[Order]) error {
		fmt.Println(r.Value.ID, r.Value.AmountCents)
		return nil
	}, handlers.WithKafkaValue(avro.Must(avro.WithRegistry(reg))), handlers.WithLogger(slog.New(slog.DiscardHandler)))

	// The Glue header: version 3, no compression, the schema version's
	// UUID; then the Avro record: id "o-1" (length 3, zigzag 6), amount
	// 1299 (zigzag 2598).
	header := []byte{3, 0, 0xa1, 0xb2, 0xc3, 0xd4, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab}
	var b sevents.KafkaBuilder
	b.Add("orders", 0, nil, append(header, 6, 'o', '-', '1', 0xa6, 0x14))
	b.Add("orders", 0, nil, append(header, 6, 'o', '-', '2', 0x90, 0x03))
	payload, _ := json.Marshal(b.Event())
	out, err := h.Invoke(context.Background(), payload)
	fmt.Println(string(out), err)
	// Output:
	// GetSchemaVersion a1b2c3d4-5678-90ab-cdef-0123456789ab
	// o-1 1299
	// o-2 200
	// {"batchItemFailures":[]} <nil>
}
