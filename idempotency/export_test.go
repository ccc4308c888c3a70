package idempotency

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/batch"
)

// WithSleep replaces the sleeps of waits and lease renewals, so tests drive
// them with a fake clock.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) { c.sleep = f }
}

// WithPoll replaces the back-off between looks at a key in progress.
func WithPoll(b batch.Backoff) Option { return func(c *config) { c.poll = b } }
