package handlers

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
)

// A layer is behaviour around the records of a batch: retries,
// idempotency, dead letters and the shadow mark are each one. Every part
// is optional. chain (options.go) orders a handler's layers explicitly,
// outermost first; befores run in that order, afters in the reverse.
type layer[R any] struct {
	// before runs once before any record; records run under the context
	// it returns, which is how it hands its findings to its per-record
	// part (idempotency reads which keys already completed, in one request
	// per hundred records).
	before func(ctx context.Context, b *hookBatch[R]) context.Context
	// wrap wraps the function with per-record behaviour around the decoded
	// record (retries, a claim per record).
	wrap batch.Middleware[R]
	// guard runs record i (with next, worker w) and sees its final error,
	// a decode failure included: a guard is outside every wrap (dead
	// letters park what fails for good).
	guard func(ctx context.Context, w, i int, b *hookBatch[R], next step[R]) error
	// after runs once after every started record finished, before the
	// answer is decided; it may fail records (engine.Result.Fail) or
	// revoke parks (engine.Result.Unpark): dead letters send the batch's
	// quarantined records at once.
	after func(ctx context.Context, b *hookBatch[R], res *engine.Result)
}

// A step runs record i of b on worker w: decode it, then the chain. The
// steps are composed once, when the handler is built, so a record costs no
// closure.
type step[R any] func(ctx context.Context, w, i int, b *hookBatch[R]) error

// hookBatch is one invocation's batch as hooks see it.
type hookBatch[R any] struct {
	source sevents.Source
	policy engine.Policy // the batch's ordering policy
	items  []engine.Item
	src    batchOf[R] // the records, decoded or as delivered (batchOf)
	// payload is the invocation's event, kafka whether its records are
	// Kafka's map of topic-partitions (else a "Records" array).
	payload []byte
	kafka   bool
	// When items are not one per record of the event (the user records of
	// KPL aggregates): records is how many records the event holds, and
	// src is a spanner, which maps item i to the index of its record.
	// (describe names a user record apart from its siblings: its eventId
	// holds the sub-sequence number, and so its attempts key.)
	records int

	spansOnce sync.Once
	spans     []json.RawMessage
}

// raw returns record i exactly as it appears in the event, or nil when the
// event cannot be split into as many records as the handler found. The
// event is split on the first call only (a batch without quarantined
// records never pays for it), into the handler's item order: the
// "Records" array in order, or Kafka's topic-partitions sorted, each in
// offset order. The bytes alias the payload: copy them to keep them.
func (b *hookBatch[R]) raw(i int) []byte {
	b.spansOnce.Do(func() {
		spans := eventscan.SplitRecords(b.payload, b.kafka)
		if n := b.records; len(spans) == n || n == 0 && len(spans) == len(b.items) {
			b.spans = spans
		}
	})
	if s, ok := b.src.(spanner); ok && i >= 0 && i < len(b.items) {
		i = s.span(i)
	}
	if i < 0 || i >= len(b.spans) {
		return nil
	}
	// A copy: the spans may share the payload, which the Lambda runtime
	// reuses for the next event.
	return append([]byte(nil), b.spans[i]...)
}

func (b *hookBatch[R]) record(i int) (R, error)         { return b.src.record(i) }
func (b *hookBatch[R]) shell(i int) R                   { return b.src.shell(i) }
func (b *hookBatch[R]) describe(i int, e *dlq.Envelope) { b.src.describe(i, e) }

// pipeline is a handler's layers, composed: the function wrapped by every
// wrap, and the step that decodes a record and runs it under every guard.
type pipeline[R any] struct {
	batch.Handler[R]
	layers []layer[R]
	step   step[R]
	after  bool // a layer has an after part
}

// compose builds the pipeline of fn under layers, outermost first.
func compose[R any](fn batch.Handler[R], layers []layer[R]) pipeline[R] {
	p := pipeline[R]{Handler: fn, layers: layers}
	for k := len(layers) - 1; k >= 0; k-- {
		if w := layers[k].wrap; w != nil {
			p.Handler = w(p.Handler)
		}
		p.after = p.after || layers[k].after != nil
	}
	h := p.Handler
	p.step = func(ctx context.Context, w, i int, b *hookBatch[R]) error { return b.src.handle(ctx, w, i, h) }
	for k := len(layers) - 1; k >= 0; k-- {
		if g, next := layers[k].guard, p.step; g != nil {
			p.step = func(ctx context.Context, w, i int, b *hookBatch[R]) error { return g(ctx, w, i, b, next) }
		}
	}
	return p
}

// begin runs the befores and sets cfg.After to run the afters.
func (p *pipeline[R]) begin(ctx context.Context, cfg engine.Config, b *hookBatch[R]) (context.Context, engine.Config) {
	b.source, b.policy = cfg.Source, cfg.Policy
	for _, l := range p.layers {
		if l.before != nil {
			ctx = l.before(ctx, b)
		}
	}
	if p.after {
		cfg.After = func(ctx context.Context, res *engine.Result) {
			for k := len(p.layers) - 1; k >= 0; k-- {
				if a := p.layers[k].after; a != nil {
					a(ctx, b, res)
				}
			}
		}
	}
	return ctx, cfg
}
