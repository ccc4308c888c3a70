package avro_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
	"github.com/sluicehq/sluice/localtest/source"
)

// confluentServer is a Confluent Schema Registry REST API over httptest,
// counting fetches per path.
func confluentServer(t *testing.T, schemas map[string]string) (*httptest.Server, func(string) int) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		id, _ := strings.CutPrefix(r.URL.Path, "/schemas/ids/")
		s, ok := schemas[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error_code":40403,"message":"Schema not found"}`))
			return
		}
		b, _ := json.Marshal(map[string]string{"schema": s})
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits["/schemas/ids/"+id]
	}
}

// TestKafkaClusterThroughHandler produces Confluent-framed Avro records to
// kfake, reads them back as Lambda's event source mapping would deliver
// them, and runs them through a handler whose codec resolves writer schemas
// in a Confluent registry over HTTP. The one corrupt value fails alone.
func TestKafkaClusterThroughHandler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()

	note := "fragile"
	values := [][]byte{
		confluent(1, encode(t, orderV1, Order{ID: "o-0", AmountCents: 100})),
		confluent(2, encode(t, orderV2, Order{ID: "o-1", AmountCents: 200, Note: &note})),
		confluent(1, encode(t, orderV1, Order{ID: "o-2", AmountCents: 300})),
		confluent(2, []byte{0x08, 'o'}), // offset 3: truncated
		confluent(3, encode(t, orderV3, orderV3Value{ID: "o-4", Channel: "web", AmountCents: 500})),
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i, v := range values {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("customer-" + string(rune('a'+i))), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	src, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var raws []json.RawMessage
	for len(raws) < len(values) {
		got, err := src.Fetch(ctx, "orders-0", int64(len(raws)), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			raws = append(raws, r.Event)
		}
	}
	env := src.Envelope()
	payload, err := json.Marshal(map[string]any{"eventSource": env.EventSource, "bootstrapServers": env.BootstrapServers,
		"records": map[string][]json.RawMessage{"orders-0": raws}})
	if err != nil {
		t.Fatal(err)
	}

	srv, hits := confluentServer(t, map[string]string{"1": orderV1, "2": orderV2, "3": orderV3})
	reg, err := kafkacodec.NewConfluentRegistry(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var report handlers.BatchReport
	h, err := handlers.NewKafka(func(_ context.Context, r handlers.KafkaRecord[Order]) error {
		key, _ := handlers.KafkaKey[string](r)
		s := key + ":" + r.Value.ID
		if r.Value.Note != nil {
			s += ":" + *r.Value.Note
		}
		got = append(got, s)
		return nil
	},
		handlers.WithKafkaValue(avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(reg))),
		handlers.WithKafkaKey[string](kafkacodec.String()),
		handlers.WithLogger(slog.New(slog.DiscardHandler)),
		handlers.WithOnBatch(func(_ context.Context, r handlers.BatchReport) { report = r }))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		got = nil
		resp, err := h.Invoke(ctx, payload)
		if err != nil {
			t.Fatal(err)
		}
		if string(resp) != `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":3}},{"itemIdentifier":{"partition":"orders-0","offset":4}}]}` {
			t.Fatalf("round %d: response %s", round, resp)
		}
		if strings.Join(got, ",") != "customer-a:o-0,customer-b:o-1:fragile,customer-c:o-2" {
			t.Fatalf("round %d: handled %v", round, got)
		}
	}
	failed := report.Records[3]
	var kde *handlers.KafkaDecodeError
	if !errors.As(failed.Err, &kde) || kde.Offset != 3 || kde.Part != "value" || batch.Classify(failed.Err) != batch.ClassPermanent ||
		!strings.Contains(failed.Err.Error(), "offset 3") || !strings.Contains(failed.Err.Error(), "confluent schema id 2") {
		t.Fatalf("offset 3 failed with %v", failed.Err)
	}
	if report.Records[4].Outcome != batch.NotAttempted {
		t.Fatalf("offset 4 follows the failure in its partition: %+v", report.Records[4])
	}
	for _, id := range []string{"1", "2"} {
		if n := hits(id); n != 1 {
			t.Fatalf("schema %s fetched %d times over two invocations, want once", id, n)
		}
	}
}
