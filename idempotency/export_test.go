package idempotency

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/internal/idemlink"
)

// WithSleep replaces the sleeps of waits and lease renewals, so tests drive
// them with a fake clock.
func WithSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) { c.sleep = f }
}

// WithPoll replaces the back-off between looks at a key in progress.
func WithPoll(b batch.Backoff) Option { return func(c *config) { c.poll = b } }

// The batch machinery package handlers reaches through internal/idemlink,
// under the names the tests use.
type (
	Batch = claimBatch
	Ahead = idemlink.Ahead
)

// NewBatch is newClaimBatch.
func NewBatch(ctx context.Context, store Store, keys []Ahead, opts ...Option) (*Batch, error) {
	return newClaimBatch(ctx, store, keys, opts...)
}
