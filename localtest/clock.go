package localtest

import (
	"context"
	"sync"
	"time"
)

// clock is the runner's time. The virtual clock runs with the wall clock
// but skips waits, so hours of visibility timeouts and retry back-off pass
// at once; the wall clock really waits (for real endpoints).
type clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type virtualClock struct {
	mu   sync.Mutex
	skip time.Duration
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skip)
}

func (c *virtualClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.mu.Lock()
		c.skip += d
		c.mu.Unlock()
	}
	return ctx.Err()
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
