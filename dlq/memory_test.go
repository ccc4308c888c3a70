package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/dlq/attemptstest"
)

func TestMemory(t *testing.T) {
	attemptstest.Run(t, func(*testing.T) dlq.AttemptsStore { return dlq.NewMemory(0) })
}

func TestMemoryForgets(t *testing.T) {
	m := dlq.NewMemory(time.Minute)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	m.Begin(ctx, "k", now)
	if a, _ := m.Begin(ctx, "k", now.Add(59*time.Second)); a.Count != 2 {
		t.Fatalf("within the TTL: %+v", a)
	}
	if a, _ := m.Begin(ctx, "k", now.Add(59*time.Second+time.Minute)); a.Count != 1 {
		t.Fatalf("a TTL after the last update: %+v, want a fresh count", a)
	}
}
