// Command kafka-avro is a Lambda function over a Kafka topic whose values
// are Avro, framed by a Confluent schema registry's header: each value is
// decoded with its writer's schema, looked up by the id in its header,
// resolved into the function's own Order (package kafkacodec/avro). It is
// the function of the Avro walk-through in docs/kafka-values.md ("Try it
// locally"), which runs it with sluice run and sluice replay.
//
// Build it as Lambda runs Go:
//
//	CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap ./examples/kafka-avro
//
// Environment:
//
//	SCHEMA_REGISTRY_URL  the Confluent-compatible registry (required)
//	SLUICE_EFFECTS_FILE  if set, one JSON line {"record", "id", "key"} is
//	                     appended per order processed: the record's id in
//	                     its source ("<topic>-<partition>@<offset>"), the
//	                     order's id and its topic-partition, which sluice
//	                     run reads back to check that no order was lost
//
// An order whose amount is negative fails permanently: the mapping's
// retries and on-failure destination take over.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
)

// Order is the function's view of an order; the writer's schema may have
// more fields (skipped) or fewer (defaults).
type Order struct {
	ID          string `avro:"id"`
	AmountCents int64  `avro:"amount_cents"`
}

// OrderSchema is the function's (reader's) schema.
const OrderSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount_cents","type":"long"}]}`

func main() {
	h, err := newHandler(os.Getenv("SCHEMA_REGISTRY_URL"), os.Getenv("SLUICE_EFFECTS_FILE"))
	if err != nil {
		log.Fatal(err) // a misconfigured function fails at init
	}
	lambda.Start(h)
}

func newHandler(registryURL, effects string) (*handlers.KafkaHandler[Order], error) {
	if registryURL == "" {
		return nil, errors.New("kafka-avro: SCHEMA_REGISTRY_URL is not set: the Confluent schema registry the producers write to")
	}
	reg, err := kafkacodec.NewConfluentRegistry(registryURL)
	if err != nil {
		return nil, err
	}
	codec, err := avro.New(avro.WithSchema(OrderSchema), avro.WithRegistry(reg))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	return handlers.NewKafka(func(_ context.Context, r handlers.KafkaRecord[Order]) error {
		if r.Value.AmountCents < 0 {
			return batch.Permanent(fmt.Errorf("order %s: negative amount %d", r.Value.ID, r.Value.AmountCents))
		}
		if effects == "" {
			return nil
		}
		line, _ := json.Marshal(map[string]string{"record": fmt.Sprintf("%s@%d", r.TopicPartition(), r.Offset()), "id": r.Value.ID, "key": r.TopicPartition()})
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
	}, handlers.WithKafkaValue(codec))
}
