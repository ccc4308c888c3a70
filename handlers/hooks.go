package handlers

import (
	"context"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/internal/engine"
)

// A batchHook is the part of a middleware that looks at a whole batch:
// before any record runs (idempotency reads which keys already completed,
// in one request per hundred records) and after every record ran, before
// the answer is decided (dead letters send the batch's quarantined records
// at once). Per-record work stays in the batch.Handler chain.
type batchHook[R any] interface {
	// before runs once before any record; records run under the context it
	// returns, which is how it hands its findings to the per-record layer.
	before(ctx context.Context, b *hookBatch[R]) context.Context
	// after runs once after every started record finished; it may revoke
	// parks (engine.Result.Unpark).
	after(ctx context.Context, b *hookBatch[R], res *engine.Result)
}

// hookBatch is one invocation's batch as hooks see it.
type hookBatch[R any] struct {
	source string
	items  []engine.Item
	// record decodes record i as the handler's function receives it.
	record func(i int) (R, error)
}

// pipeline is a handler's per-record chain and its batch hooks.
type pipeline[R any] struct {
	batch.Handler[R]
	hooks []batchHook[R]
}

// begin runs the before hooks and sets cfg.After to run the after hooks.
func (p *pipeline[R]) begin(ctx context.Context, cfg engine.Config, items []engine.Item, record func(int) (R, error)) (context.Context, engine.Config) {
	if len(p.hooks) == 0 {
		return ctx, cfg
	}
	b := &hookBatch[R]{source: cfg.Source, items: items, record: record}
	for _, h := range p.hooks {
		ctx = h.before(ctx, b)
	}
	cfg.After = func(ctx context.Context, res *engine.Result) {
		for _, h := range p.hooks {
			h.after(ctx, b, res)
		}
	}
	return ctx, cfg
}
