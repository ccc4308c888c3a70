package handlers

import (
	"context"
	"log/slog"
	"testing"
)

// BenchmarkKinesis10kRaw is the envelope alone: T = []byte, no payload decode.
func BenchmarkKinesis10kRaw(b *testing.B) {
	raw := kinesisFixture(b, 10000)
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[[]byte]) error {
		benchSink += float64(len(r.Value))
		return nil
	}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Invoke(context.Background(), raw); err != nil {
			b.Fatal(err)
		}
	}
	reportPerRecord(b, 10000)
}
