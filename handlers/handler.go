package handlers

import (
	"context"
	"fmt"

	sevents "github.com/sluicehq/sluice/events"
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
	p, err := chain(c, fn, s.key)
	if err != nil {
		return handler[R]{}, fmt.Errorf("sluice: %s handler: %w", s.name, err)
	}
	return handler[R]{cfg: c, chain: p, x: expect{s.ctor, s.field, s.accepts}}, nil
}
