package handlers

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/eventscan"
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
	// src.span maps item i to the index of its record in the event.
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
		spans := splitRecords(b.payload, b.kafka)
		if n := b.records; len(spans) == n || n == 0 && len(spans) == len(b.items) {
			b.spans = spans
		}
	})
	if i >= 0 && i < len(b.items) {
		i = b.src.span(i)
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

// splitRecords returns the spans of an event's records (encoding/json
// keeps a RawMessage's bytes as they are), in the order the handlers decode
// them.
func splitRecords(payload []byte, kafka bool) []json.RawMessage {
	if !kafka {
		if spans, ok := eventscan.RecordSpans(payload); ok {
			return spans
		}
		var ev struct {
			Records []json.RawMessage `json:"Records"`
		}
		if json.Unmarshal(payload, &ev) != nil {
			return nil
		}
		return ev.Records
	}
	var ev struct {
		Records map[string][]json.RawMessage `json:"records"`
	}
	if json.Unmarshal(payload, &ev) != nil {
		return nil
	}
	keys, n := eventscan.Partitions(ev.Records)
	out := make([]json.RawMessage, 0, n)
	for _, k := range keys {
		out = append(out, ev.Records[k]...)
	}
	return slices.Clip(out)
}

// pipeline is a handler's per-record chain, its batch hooks, and the
// dead-letter layer around both (WithDeadLetters).
type pipeline[R any] struct {
	batch.Handler[R]
	hooks  []batchHook[R]
	dl     *dlLayer[R]
	shadow bool // EnvShadow: the records run in a shadow replay
}

// begin runs the before hooks and sets cfg.After to run the after hooks.
func (p *pipeline[R]) begin(ctx context.Context, cfg engine.Config, b *hookBatch[R]) (context.Context, engine.Config) {
	if p.shadow {
		ctx = context.WithValue(ctx, shadowKey{}, true)
	}
	if len(p.hooks) == 0 {
		return ctx, cfg
	}
	b.source, b.policy = cfg.Source, cfg.Policy
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

// run runs record i with f (decode, then the chain) under the dead-letter
// layer, if the handler has one.
func (p *pipeline[R]) run(ctx context.Context, i int, f func(context.Context) error) error {
	if p.dl == nil {
		return f(ctx)
	}
	return p.dl.run(ctx, i, f)
}
