package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/invocation"
	"github.com/sluicehq/sluice/localtest/source"
)

func TestKafkaCluster(t *testing.T) {
	t.Parallel()
	ctx := awsCtx(t, 30*time.Second)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	if !strings.HasPrefix(seeds[0], "127.0.0.1:") {
		t.Fatalf("kfake listens on %v, want 127.0.0.1", seeds)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	t0 := time.Now().Add(-time.Second)
	var recs []*kgo.Record
	for i := range 25 {
		r := &kgo.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i)),
			Headers: []kgo.RecordHeader{{Key: "headerKey", Value: []byte{'h', 0x80, 0xff}}}}
		switch i {
		case 1:
			r.Key = nil
		case 2:
			r.Value = nil // a tombstone
		}
		recs = append(recs, r)
	}
	for i := range 3 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: 1, Key: []byte("p1"), Value: []byte(fmt.Sprintf(`{"n":%d}`, 100+i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	src, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if env := src.Envelope(); env.EventSource != "SelfManagedKafka" || env.BootstrapServers != strings.Join(seeds, ",") || env.EventSourceARN != "" {
		t.Errorf("Envelope %+v", env)
	}
	parts, err := src.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parts, []string{"orders-0", "orders-1"}) {
		t.Fatalf("Partitions %v", parts)
	}

	fetch := func(part string, off int64, max int) []invocation.KafkaRecord {
		t.Helper()
		got, err := src.Fetch(ctx, part, off, max)
		if err != nil {
			t.Fatalf("Fetch(%s, %d, %d): %v", part, off, max, err)
		}
		if len(got) > max {
			t.Fatalf("Fetch(%s, %d, %d) returned %d records", part, off, max, len(got))
		}
		for i, r := range got {
			if want := off + int64(i); r.Offset != want {
				t.Fatalf("Fetch(%s, %d): record %d has offset %d, want %d", part, off, i, r.Offset, want)
			}
		}
		return got
	}
	// Fetch until max records or an empty result, from offset on.
	fetchAll := func(part string, off int64, max int) []invocation.KafkaRecord {
		t.Helper()
		var out []invocation.KafkaRecord
		for len(out) < max {
			got := fetch(part, off, max-len(out))
			if len(got) == 0 {
				break
			}
			out = append(out, got...)
			off = got[len(got)-1].Offset + 1
		}
		return out
	}

	page1 := fetchAll("orders-0", 0, 10)
	page2 := fetchAll("orders-0", 10, 10) // continues on the same consumer
	p1 := fetchAll("orders-1", 0, 10)     // moves to the other partition
	back := fetchAll("orders-0", 5, 3)    // and back, to an earlier offset
	rest := fetchAll("orders-0", 20, 10)
	if len(page1) != 10 || len(page2) != 10 || len(p1) != 3 || len(back) != 3 || len(rest) != 5 {
		t.Fatalf("fetched %d, %d, %d, %d, %d records; want 10, 10, 3, 3, 5", len(page1), len(page2), len(p1), len(back), len(rest))
	}
	if back[0].Offset != 5 || back[0].Key != "k5" || p1[2].Key != "p1" {
		t.Errorf("back %+v, p1 %+v", back[0], p1[2])
	}
	startEmpty := time.Now()
	if tail := fetch("orders-0", 25, 10); len(tail) != 0 {
		t.Fatalf("Fetch past the end: %d records", len(tail))
	}
	if d := time.Since(startEmpty); d > 2*time.Second {
		t.Errorf("empty Fetch took %v", d)
	}
	// A record produced after an empty Fetch arrives.
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(`{"n":25}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if late := fetchAll("orders-0", 25, 10); len(late) != 1 || late[0].Offset != 25 {
		t.Fatalf("late record: %+v", late)
	}
	if _, err := src.Fetch(ctx, "other-0", 0, 1); err == nil {
		t.Error("Fetch of a topic not configured: no error")
	}

	all := append(append(page1, page2...), rest...)
	golden := awsShape(t, awsGolden(t, "self-managed-kafka.json"))
	for i, r := range all {
		var ev events.KafkaRecord
		if err := json.Unmarshal(r.Event, &ev); err != nil {
			t.Fatalf("record does not decode as events.KafkaRecord: %v\n%s", err, r.Event)
		}
		if ev.Topic != "orders" || ev.Partition != 0 || ev.Offset != int64(i) || ev.TimestampType != "CREATE_TIME" ||
			ev.Timestamp.Before(t0.Truncate(time.Millisecond)) || ev.Timestamp.After(time.Now()) || !ev.Timestamp.Equal(r.Timestamp) {
			t.Errorf("record %d: %s", i, r.Event)
		}
		if len(ev.Headers) != 1 || !slices.Equal(ev.Headers[0]["headerKey"], []byte{'h', 0x80, 0xff}) {
			t.Errorf("record %d headers: %s", i, r.Event)
		}
		if !strings.Contains(string(r.Event), `"headers":[{"headerKey":[104,-128,-1]}]`) {
			t.Errorf("record %d: header bytes not signed: %s", i, r.Event)
		}
		switch i {
		case 1:
			if strings.Contains(string(r.Event), `"key"`) || r.Key != "" {
				t.Errorf("nil key sent: %s", r.Event)
			}
		case 2:
			if strings.Contains(string(r.Event), `"value"`) {
				t.Errorf("nil value sent: %s", r.Event)
			}
		default:
			if r.Key != fmt.Sprintf("k%d", i) {
				t.Errorf("record %d: Key %q", i, r.Key)
			}
			ev := fmt.Sprintf(`{"eventSource":"SelfManagedKafka","bootstrapServers":"x","records":{"orders-0":[%s]}}`, r.Event)
			awsSameShape(t, []byte(ev), golden)
		}
	}
	t.Logf("record: %s", all[0].Event)

	// A Sluice handler takes the records as Lambda would deliver them.
	var raws []json.RawMessage
	for _, r := range all {
		raws = append(raws, r.Event)
	}
	env := src.Envelope()
	payload, err := json.Marshal(map[string]any{
		"eventSource": env.EventSource, "bootstrapServers": env.BootstrapServers,
		"records": map[string][]json.RawMessage{"orders-0": raws},
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	h, err := handlers.NewKafka(func(_ context.Context, r handlers.KafkaRecord[struct{ N int }]) error {
		if _, ok := r.Header("headerKey"); !ok {
			return fmt.Errorf("offset %d: no header", r.Offset())
		}
		seen = append(seen, r.Offset())
		return nil
	}, handlers.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := h.Invoke(ctx, payload); err != nil {
		t.Fatalf("handler: %v (response %s)", err, resp)
	} else if strings.Contains(string(resp), "itemIdentifier") {
		t.Fatalf("handler reported failures: %s", resp)
	}
	if len(seen) != 25 {
		t.Errorf("handler saw offsets %v", seen)
	}
}

func TestKafkaClusterMSKEnvelope(t *testing.T) {
	t.Parallel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a-b"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	arn := "arn:aws:kafka:us-east-1:123456789012:cluster/c/1"
	src, err := source.KafkaCluster(cluster.ListenAddrs(), []string{"a-b"}, invocation.KafkaEnvelope{EventSourceARN: arn, BootstrapServers: "b-1:9092"},
		source.KafkaPollWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if env := src.Envelope(); env.EventSource != "aws:kafka" || env.EventSourceARN != arn || env.BootstrapServers != "b-1:9092" {
		t.Errorf("Envelope %+v", env)
	}
	ctx := awsCtx(t, 10*time.Second)
	parts, err := src.Partitions(ctx)
	if err != nil || !slices.Equal(parts, []string{"a-b-0"}) {
		t.Fatalf("Partitions %v, %v", parts, err)
	}
	if got, err := src.Fetch(ctx, "a-b-0", 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("empty topic: %d records, %v", len(got), err)
	}

	// A poll wait too short for the first fetch: records known to exist
	// (end offset past the requested one) are still waited for.
	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "a-b", Value: []byte("1")}, &kgo.Record{Topic: "a-b", Value: []byte("2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	quick, err := source.KafkaCluster(cluster.ListenAddrs(), []string{"a-b"}, invocation.KafkaEnvelope{}, source.KafkaPollWait(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	defer quick.Close()
	for _, off := range []int64{1, 0} {
		if got, err := quick.Fetch(ctx, "a-b-0", off, 10); err != nil || len(got) != int(2-off) || got[0].Offset != off {
			t.Fatalf("Fetch at %d with a 1 µs poll wait: %+v, %v", off, got, err)
		}
	}
	if _, err := source.KafkaCluster(nil, []string{"x"}, invocation.KafkaEnvelope{}); err == nil {
		t.Error("no seeds: no error")
	}
	missing, err := source.KafkaCluster(cluster.ListenAddrs(), []string{"missing"}, invocation.KafkaEnvelope{})
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()
	if _, err := missing.Partitions(ctx); err == nil {
		t.Error("Partitions of a missing topic: no error")
	} else {
		t.Logf("missing topic: %v", err)
	}
}

// StartingPosition LATEST: Fetch at offset 0 reads from the end offsets of
// the source's creation, with the records' real offsets.
func TestKafkaClusterLatest(t *testing.T) {
	t.Parallel()
	ctx := awsCtx(t, 30*time.Second)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	seeds := cluster.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(0, 5)

	if _, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{}, source.KafkaStartingPosition("AT_TIMESTAMP")); err == nil {
		t.Error("KafkaStartingPosition(AT_TIMESTAMP) accepted")
	}
	src, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{},
		source.KafkaStartingPosition("LATEST"), source.KafkaPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	trim, err := source.KafkaCluster(seeds, []string{"orders"}, invocation.KafkaEnvelope{},
		source.KafkaStartingPosition("TRIM_HORIZON"), source.KafkaPollWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer trim.Close()
	produce(5, 8)

	check := func(got []invocation.KafkaRecord, offs ...int64) {
		t.Helper()
		var o []int64
		for _, r := range got {
			var ev events.KafkaRecord
			if err := json.Unmarshal(r.Event, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Offset != r.Offset || r.Key != fmt.Sprintf("k%d", r.Offset) {
				t.Errorf("record %d: event offset %d, key %q", r.Offset, ev.Offset, r.Key)
			}
			o = append(o, r.Offset)
		}
		if !slices.Equal(o, offs) {
			t.Fatalf("offsets %v, want %v", o, offs)
		}
	}
	got, err := src.Fetch(ctx, "orders-0", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	check(got, 5, 6)
	// The runner continues at the real offset after the last record.
	got, err = src.Fetch(ctx, "orders-0", 7, 10)
	if err != nil {
		t.Fatal(err)
	}
	check(got, 7)
	got, err = src.Fetch(ctx, "orders-0", 8, 10)
	if err != nil {
		t.Fatal(err)
	}
	check(got)
	// After a move elsewhere, offset 0 is still the recorded start; an
	// explicit earlier offset reads from there.
	if got, err = src.Fetch(ctx, "orders-1", 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("orders-1: %v %v", got, err)
	}
	got, err = src.Fetch(ctx, "orders-0", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	check(got, 5, 6, 7)
	got, err = src.Fetch(ctx, "orders-0", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	check(got, 3, 4, 5, 6, 7)
	// TRIM_HORIZON reads from the start.
	got, err = trim.Fetch(ctx, "orders-0", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	check(got, 0, 1, 2, 3, 4, 5, 6, 7)
}
