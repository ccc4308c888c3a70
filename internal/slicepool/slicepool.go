// Package slicepool keeps the slices one Lambda invocation works with for
// the next (the handlers' decoded records and engine items).
package slicepool

import "sync"

// Pool keeps the slices one invocation works with (the decoded
// records, the engine's items) for the next: Lambda hands a process one
// event after another, alike in size, and a slice reused is memory the
// collector neither allocates nor scans again. Only slices that never leave
// a handler's Invoke go here: a record given to the function is a copy, and the strings
// it shares are never reused.
type Pool[E any] struct{ p sync.Pool }

// Get returns a slice of length 0, its capacity that of a slice put before
// (0 if none). Its elements up to the capacity are zero.
func (p *Pool[E]) Get() []E {
	if s, ok := p.p.Get().(*[]E); ok {
		return *s
	}
	return nil
}

// Make returns a slice of n zero elements.
func (p *Pool[E]) Make(n int) []E {
	if s := p.Get(); cap(s) >= n {
		return s[:n]
	}
	return make([]E, n)
}

// Put clears s to its capacity and keeps it for Get. Nothing may use s
// afterwards.
func (p *Pool[E]) Put(s []E) {
	if cap(s) == 0 {
		return
	}
	s = s[:0]
	clear(s[:cap(s)])
	p.p.Put(&s)
}
