package handlers

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
	"github.com/sluicehq/sluice/internal/slicepool"
)

// handler is what the handler of every source holds: its configuration, the
// per-record pipeline, and what its events must look like.
type handler[R any] struct {
	cfg   *config
	chain pipeline[R]
	x     expect
}

// A source describes one source to newHandler.
type source[R any] struct {
	kind    sourceKind
	name    sevents.Source
	ctor    string   // the constructor, for error messages
	field   string   // the event's key for its records
	accepts []string // the eventSource values of its events
	key     func(R) string
}

// newHandler makes the handler that calls fn for each record of s.
func newHandler[R any](s source[R], fn func(context.Context, R) error, opts []Option) (handler[R], error) {
	c, err := newConfig(s.kind, s.name, opts)
	if err != nil {
		return handler[R]{}, err
	}
	c.traceLogger()
	p, err := chain(c, fn, s.key)
	if err != nil {
		return handler[R]{}, fmt.Errorf("sluice: %s handler: %w", s.name, err)
	}
	return handler[R]{cfg: c, chain: p, x: expect{s.ctor, s.field, s.accepts}}, nil
}

// A batchOf is one invocation's decoded event, as runBatch runs it: the part
// of Invoke that differs between sources. Each source's is a pointer to a
// struct of its own, made once per invocation, which the layers and the
// pipeline's step call through: a method call, where closures would cost
// an allocation each per invocation.
type batchOf[R any] interface {
	// handle decodes record i into worker w's own value and calls next
	// with the record (or answers it without next, as SQS's s3:TestEvent).
	handle(ctx context.Context, w, i int, next batch.Handler[R]) error
	// record decodes record i afresh, as the function receives it.
	record(i int) (R, error)
	// shell is record i without its decoded value: enough for what reads
	// only the record as delivered (the default idempotency keys).
	shell(i int) R
	// describe fills the source fields of record i's dead-letter envelope
	// from the event; it works for a record that failed to decode.
	describe(i int, e *dlq.Envelope)
}

// A spanner is a batchOf whose items are not one per record of the event
// (the user records of KPL aggregates): span is the index in the event of
// the record item i came from.
type spanner interface{ span(i int) int }

// A batchRun says how runBatch runs a batch.
type batchRun struct {
	source   sevents.Source
	policy   engine.Policy
	workers  int
	resource string // the shard, queue, table or topic, for metrics
	// records is how many records the event holds when items are not one
	// per record (KPL aggregates), else 0; kafka whether the event holds
	// Kafka's map of topic-partitions (else a "Records" array).
	records int
	kafka   bool
}

// runBatch runs the items of b through the handler's layers and the engine,
// and returns the indexes to report, or a function error.
func runBatch[R any](ctx context.Context, h *handler[R], b batchOf[R], payload []byte, items []engine.Item, r batchRun) ([]int, error) {
	hb := &hookBatch[R]{items: items, payload: payload, kafka: r.kafka, records: r.records, src: b}
	ecfg := h.cfg.engine(r.source, r.policy, r.workers)
	hb.source = r.source
	ctx, tr := startTrace(ctx, h.cfg, hb, r.resource, &ecfg) // nil unless WithTracer
	ctx, ecfg = h.chain.begin(ctx, ecfg, hb)
	step := h.chain.step
	if tr != nil {
		step = tr.step(step)
	}
	res := engine.Run(ctx, items, ecfg, func(ctx context.Context, w, i int) error { return step(ctx, w, i, hb) })
	ids := recordIDs{items: items}
	ids.namer, _ = b.(recordNamer)
	report, err := h.cfg.outcome(ctx, r.source, r.resource, items, res, ids)
	if tr != nil {
		tr.end(ctx, h.cfg, res, report, err, ids)
	}
	return report, err
}

// A recordNamer is a batchOf whose items are not all named by their batch
// item identifier: recordID is item i's own id (a KPL user record's
// "<sequenceNumber>:<subSequenceNumber>").
type recordNamer interface{ recordID(i int) string }

// recordIDs names a batch's items by their own ids (RecordOutcome.Record):
// the namer's, else the batch item identifier. A value, not a closure, so
// naming costs an invocation no allocation.
type recordIDs struct {
	items []engine.Item
	namer recordNamer
}

func (r recordIDs) of(i int) string {
	if r.namer != nil {
		return r.namer.recordID(i)
	}
	return r.items[i].ID
}

// engineItems keeps the engine's items of one invocation for the next.
var engineItems slicepool.Pool[engine.Item]
