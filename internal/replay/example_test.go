package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/replay"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/localtest"
)

// ParsePosition reads the positions `sluice replay --from/--to` take.
func ExampleParsePosition() {
	for _, s := range []string{"TRIM_HORIZON", "2026-12-01T10:00:00Z", "49590338271490256608559692538361571095921575989136588898", "now"} {
		p, err := replay.ParsePosition(s)
		fmt.Printf("%q: %v, zero %v, %v\n", s, p, p.IsZero(), err)
	}
	// Output:
	// "TRIM_HORIZON": TRIM_HORIZON, zero false, <nil>
	// "2026-12-01T10:00:00Z": 2026-12-01T10:00:00Z, zero false, <nil>
	// "49590338271490256608559692538361571095921575989136588898": 49590338271490256608559692538361571095921575989136588898, zero false, <nil>
	// "now": now, zero true, <nil>
}

// A replay of a Kafka topic's history from offset 1 into a function (in
// process here; `sluice replay` invokes the deployed one), in the events
// the mapping would send. The cluster is franz-go's in-process kfake, so
// the example needs no broker.
func ExampleRun() {
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

	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[string]) error {
		fmt.Println("replayed", r.Value, "at offset", r.Raw.Offset)
		return nil
	}, handlers.WithKafkaValue(kafkacodec.String()), handlers.WithLogger(slog.New(slog.DiscardHandler)))
	stream := replay.Kafka(seeds, "orders", invocation.KafkaEnvelope{EventSource: "SelfManagedKafka"})
	sum, err := replay.Run(ctx, stream, replay.Range{From: replay.Position{Number: "1"}},
		replay.Options{Invoker: localtest.InProcess(h), Function: "orders"})
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.Source, sum.Stream, sum.Lanes, sum.Events, "events,", sum.Acknowledged, "acknowledged, last", sum.Positions)
	// Output:
	// replayed o-2 at offset 1
	// replayed o-3 at offset 2
	// kafka orders [orders-0] 1 events, 2 acknowledged, last map[orders-0:2]
}
