package source_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// A mapping over a real Kafka topic (here franz-go's in-process kfake, so
// the example needs no broker; a local Redpanda or MSK cluster works the
// same), read from its oldest record, with an in-process handler.
func ExampleKafkaCluster() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		panic(err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"o-1", "o-2", "o-3"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	prod.Close()

	src, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{}, source.KafkaStartingPosition("TRIM_HORIZON"))
	if err != nil {
		panic(err)
	}
	defer src.Close()
	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[string]) error {
		fmt.Println("processed", r.Value)
		return nil
	}, handlers.WithKafkaValue(kafkacodec.String()), handlers.WithLogger(slog.New(slog.DiscardHandler)))
	m := &localtest.Mapping{EventSource: events.SourceKafka, Topic: "orders", StartingPosition: "TRIM_HORIZON"}
	rep, err := localtest.Run(ctx, localtest.Options{Mapping: m, Invoker: localtest.InProcess(h), Kafka: src})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Totals.Processed, "processed, checkpoints", rep.Checkpoints)
	// Output:
	// processed o-1
	// processed o-2
	// processed o-3
	// 3 processed, checkpoints map[orders-0:2]
}
