package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// benchWindowAgg is a count and sum per partition key.
type benchWindowAgg struct {
	Count map[string]int     `json:"n"`
	Sum   map[string]float64 `json:"s"`
}

// windowFixture is kinesisFixture's event of n orders as a tumbling
// window's invoke: the window fields, an empty state, final or not.
func windowFixture(b *testing.B, n int, final bool) []byte {
	var ev map[string]any
	if err := json.Unmarshal(kinesisFixture(b, n), &ev); err != nil {
		b.Fatal(err)
	}
	ev["window"] = map[string]string{"start": "2025-11-03T09:30:00Z", "end": "2025-11-03T09:31:00Z"}
	ev["state"] = map[string]string{}
	ev["shardId"] = "shardId-000000000003"
	ev["eventSourceARN"] = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
	ev["isFinalInvokeForWindow"] = final
	ev["isWindowTerminatedEarly"] = false
	if final {
		ev["Records"] = []any{}
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkKinesisWindow is a window handler's invoke: fold, 1,000 orders
// folded into a count and sum per partition key and the state encoded;
// final, the final invoke's state decoded and handed to final.
func BenchmarkKinesisWindow(b *testing.B) {
	h, err := NewKinesisWindow(func(_ context.Context, s benchWindowAgg, r KinesisRecord[benchOrder]) (benchWindowAgg, error) {
		if s.Count == nil {
			s.Count, s.Sum = map[string]int{}, map[string]float64{}
		}
		s.Count[r.PartitionKey()]++
		s.Sum[r.PartitionKey()] += r.Value.Amount
		return s, nil
	}, func(_ context.Context, _ Window, s benchWindowAgg) error {
		benchSink += float64(len(s.Count))
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fold", func(b *testing.B) {
		raw := windowFixture(b, 1000, false)
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			out, err := h.Invoke(context.Background(), raw)
			if err != nil || !strings.Contains(string(out), `"batchItemFailures":[]`) {
				b.Fatalf("%.200s %v", out, err)
			}
		}
		reportPerRecord(b, 1000)
	})
	b.Run("final", func(b *testing.B) {
		raw := windowFixture(b, 1000, false)
		out, err := h.Invoke(context.Background(), raw)
		if err != nil {
			b.Fatal(err)
		}
		var resp struct{ State map[string]string }
		if err := json.Unmarshal(out, &resp); err != nil {
			b.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(windowFixture(b, 1, true), &ev); err != nil {
			b.Fatal(err)
		}
		ev["state"] = resp.State
		final, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			out, err := h.Invoke(context.Background(), final)
			if err != nil || string(out) != `{"state":{},"batchItemFailures":[]}` {
				b.Fatalf("%s %v", out, err)
			}
		}
	})
}
