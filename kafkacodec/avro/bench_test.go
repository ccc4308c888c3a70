package avro_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/kafkacodec"
	"github.com/sluicehq/sluice/kafkacodec/avro"
)

var benchSink int64

// kafkaFixture is a 10,000-record Kafka event over 4 partitions, each value
// made by value(i).
func kafkaFixture(b *testing.B, value func(i int) []byte) []byte {
	var kb sevents.KafkaBuilder
	for i := range 10000 {
		kb.Add("orders", int64(i%4), []byte(fmt.Sprintf("customer-%d", i%97)), value(i))
	}
	raw, err := json.Marshal(kb.Event())
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func benchKafka(b *testing.B, raw []byte, opts ...handlers.Option) {
	h, err := handlers.NewKafka(func(_ context.Context, r handlers.KafkaRecord[Order]) error {
		benchSink += r.Value.AmountCents
		return nil
	}, append(opts, handlers.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		out, err := h.Invoke(ctx, raw)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/record")
	b.ReportMetric(testing.AllocsPerRun(1, func() { h.Invoke(ctx, raw) })/10000, "allocs/record")
}

// BenchmarkKafkaAvro10k is a 10,000-record batch of Confluent-framed Avro
// orders through handlers.NewKafka: event JSON in, response out, each value
// resolved from writer schema id 2 (fetched once) into the reader's struct.
func BenchmarkKafkaAvro10k(b *testing.B) {
	note := "leave at the door"
	raw := kafkaFixture(b, func(i int) []byte {
		return confluent(2, encode(b, orderV2, Order{ID: fmt.Sprintf("ord-%06d", i), AmountCents: int64(i), Note: &note}))
	})
	reg := &registry{schemas: map[string]string{"2": orderV2}}
	benchKafka(b, raw, handlers.WithKafkaValue(avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(kafkacodec.NewCache(reg)))))
}

// BenchmarkKafkaAvro10kResolved is the same batch written with an older
// schema (id 1), read through Avro schema resolution.
func BenchmarkKafkaAvro10kResolved(b *testing.B) {
	raw := kafkaFixture(b, func(i int) []byte {
		return confluent(1, encode(b, orderV1, Order{ID: fmt.Sprintf("ord-%06d", i), AmountCents: int64(i)}))
	})
	reg := &registry{schemas: map[string]string{"1": orderV1}}
	benchKafka(b, raw, handlers.WithKafkaValue(avro.Must(avro.WithSchema(orderV2), avro.WithRegistry(kafkacodec.NewCache(reg)))))
}

// BenchmarkKafkaJSON10k is the same orders as JSON with the default codec,
// for comparison.
func BenchmarkKafkaJSON10k(b *testing.B) {
	note := "leave at the door"
	raw := kafkaFixture(b, func(i int) []byte {
		v, _ := json.Marshal(Order{ID: fmt.Sprintf("ord-%06d", i), AmountCents: int64(i), Note: &note})
		return v
	})
	benchKafka(b, raw)
}

// benchDecode also reports cpu-ns/op, the CPU time of the benchmark's own
// thread per value (Linux), which other jobs on a shared machine inflate
// far less than ns/op.
func benchDecode[T any](b *testing.B, c *avro.Codec, data []byte) {
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	for b.Loop() {
		var v T
		if err := c.DecodeKafka(ctx, data, nil, &v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDecode is one Confluent-framed value through DecodeKafka: the
// 3-field order, the 9-field order (strings, longs, a union, an array of 2
// records, a map) and a two-string key, each written with the codec's own
// schema.
func BenchmarkDecode(b *testing.B) {
	note := "leave at the door"
	b.Run("order3", func(b *testing.B) {
		data := confluent(2, encode(b, orderV2, Order{ID: "ord-000042", AmountCents: 129900, Note: &note}))
		benchDecode[Order](b, avro.Must(avro.WithSchema(orderV2)), data)
	})
	b.Run("order9", func(b *testing.B) {
		data := confluent(4, encode(b, order9Schema, sampleOrder9()))
		benchDecode[Order9](b, avro.Must(avro.WithSchema(order9Schema)), data)
	})
	b.Run("key", func(b *testing.B) {
		data := confluent(5, encode(b, keySchema, OrderKey{Tenant: "acme", Customer: "cus-981"}))
		benchDecode[OrderKey](b, avro.Must(avro.WithSchema(keySchema)), data)
	})
}

// BenchmarkValidate is the check DecodeKafka runs before the library
// decodes a value, alone: the writer's schema walked over the 9-field
// order (91 bytes).
func BenchmarkValidate(b *testing.B) {
	body := encode(b, order9Schema, sampleOrder9())
	validate, err := avro.Validator(order9Schema, kafkacodec.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	for b.Loop() {
		if err := validate(body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
}
