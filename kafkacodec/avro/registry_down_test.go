package avro_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
)

// TestRegistryDownIsAskedOncePerDelivery: a Confluent registry that
// answers 500, or cannot be reached, fails the record as transient, not as
// a decode error, and is asked once per delivery: the handler's in-process
// retries (two by default) wrap the user's function, not decoding.
func TestRegistryDownIsAskedOncePerDelivery(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error_code":50001,"message":"store unavailable"}`))
	}))
	defer srv.Close()
	var dials atomic.Int32
	refused := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("connect: connection refused")
	}}}
	body := encode(t, orderV2, Order{ID: "o-1"})
	var kb sevents.KafkaBuilder
	kb.Add("orders", 0, nil, confluent(2, body))
	raw, err := json.Marshal(kb.Event())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []kafkacodec.ConfluentOption
		hits *atomic.Int32
	}{
		{"500", nil, &hits},
		{"unreachable", []kafkacodec.ConfluentOption{kafkacodec.WithHTTPClient(refused)}, &dials},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := kafkacodec.NewConfluentRegistry(srv.URL, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			var ran int
			var failed error
			h := handlers.MustKafka(func(context.Context, handlers.KafkaRecord[Order]) error { ran++; return nil },
				handlers.WithKafkaValue(avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(reg))),
				handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithPartialResponseWhenNoneSucceed(),
				handlers.WithOnBatch(func(_ context.Context, r handlers.BatchReport) { failed = r.Records[0].Err }))
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			var resp sevents.KafkaEventResponse
			if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 1 {
				t.Fatalf("response %s %v, want the record reported", out, err)
			}
			var re *kafkacodec.RegistryError
			var de *kafkacodec.DecodeError
			var bde *batch.DecodeError
			var ke *handlers.KafkaDecodeError
			if !errors.As(failed, &re) || !errors.As(failed, &ke) || errors.As(failed, &de) || errors.As(failed, &bde) ||
				batch.Classify(failed) != batch.ClassTransient {
				t.Fatalf("failure %v (class %v), want a transient KafkaDecodeError wrapping a RegistryError", failed, batch.Classify(failed))
			}
			if ran != 0 || tc.hits.Load() != 1 {
				t.Fatalf("the function ran %d times, the registry was asked %d times; want 0 and 1", ran, tc.hits.Load())
			}
		})
	}
}
