package handlers

import (
	"sync"

	"github.com/sluicehq/sluice/internal/engine"
)

// slicePool keeps the slices one invocation works with (the decoded
// records, the engine's items) for the next: Lambda hands a process one
// event after another, alike in size, and a slice reused is memory the
// collector neither allocates nor scans again. Only slices that never leave
// Invoke go here: a record given to the function is a copy, and the strings
// it shares are never reused.
type slicePool[E any] struct{ p sync.Pool }

// get returns a slice of length 0, its capacity that of a slice put before
// (0 if none). Its elements up to the capacity are zero.
func (p *slicePool[E]) get() []E {
	if s, ok := p.p.Get().(*[]E); ok {
		return *s
	}
	return nil
}

// make returns a slice of n zero elements.
func (p *slicePool[E]) make(n int) []E {
	if s := p.get(); cap(s) >= n {
		return s[:n]
	}
	return make([]E, n)
}

// put clears s to its capacity and keeps it for get. Nothing may use s
// afterwards.
func (p *slicePool[E]) put(s []E) {
	if cap(s) == 0 {
		return
	}
	s = s[:0]
	clear(s[:cap(s)])
	p.p.Put(&s)
}

// engineItems keeps the engine's items of one invocation for the next.
var engineItems slicePool[engine.Item]
