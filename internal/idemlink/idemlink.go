// Package idemlink hands package handlers the batch machinery of package
// idempotency (the claims of a batch taken ahead, its lanes' checkpoints)
// without making it part of idempotency's API: a user calls
// idempotency.Do, or handlers.WithIdempotency, never this.
//
// idempotency imports this package and sets its functions once, in its
// init (Set); handlers, which imports idempotency and so is initialised
// after it, takes them once (Get). This package imports neither, so the
// imports stay acyclic: the types that belong to idempotency (its Store,
// Option and *Cache) are type parameters here.
package idemlink

import (
	"context"
)

// Ahead is one key a batch claims ahead, with the payload its record
// hashes (idempotency.WithPayload), if any.
type Ahead struct {
	Key        string
	Payload    []byte
	HasPayload bool
	// Lookup reads the key (one batch read with the batch's other
	// lookups) before claiming it, for a record that was probably
	// completed before: a redelivery. A first delivery is claimed at once,
	// its duplicate answered by the refused claim.
	Lookup bool
	// Lane and Pos, when both are set (and the store keeps lanes), put
	// the record in a checkpointed lane: Lane is the lane's key, Pos the
	// record's position in it (idempotency.Position). Order is its
	// ordering key, what DoLane is given: the records of one order run
	// one at a time, in order.
	Lane, Pos, Order string
}

// Batch is what package handlers uses of a batch whose claims were taken
// ahead; O is idempotency.Option. See package idempotency's claimBatch for
// the semantics. What is passed to a method of an interface escapes to the
// heap: a caller that gives DoLane a closure a record pays an allocation
// for it and for each variable it captures, so handlers gives it one
// function for all its records, which finds its record from the context.
type Batch[O any] interface {
	// DoLane runs fn at most once for key, under the claim taken ahead
	// for it, as a record of lane (an ordering key; "" for the whole
	// batch).
	DoLane(ctx context.Context, lane, key string, fn func(context.Context) ([]byte, error), opts ...O) ([]byte, error)
	// Covered returns the checkpointed lane and position of key's record
	// when DoLane answered it as a duplicate by its lane's checkpoint
	// (Ahead.Lane), rather than by an item of its own key.
	Covered(key string) (lane, pos string, ok bool)
	// Ordered makes the batch's lanes ordered. Call it before any DoLane.
	Ordered()
	// Finish waits for the completes and releases in flight, writes the
	// lanes' last checkpoints (handled says which records the batch
	// answered as handled without completing them) and returns the keys
	// whose complete or checkpoint failed.
	Finish(handled func(key string) bool) map[string]error
}

// Funcs are package idempotency's batch functions; S is
// idempotency.Store, O idempotency.Option and C *idempotency.Cache.
type Funcs[S, O, C any] struct {
	// NewBatch claims keys ahead, with Do's options.
	NewBatch func(ctx context.Context, store S, keys []Ahead, opts ...O) (Batch[O], error)
	// CacheOf returns the cache opts set (idempotency.WithCache), or nil.
	CacheOf func(opts ...O) C
}

// funcs is the Funcs that package idempotency set, or nil: written once,
// during its initialisation, and only read after.
var funcs any

// Set records package idempotency's functions. It panics when called
// twice: they are set once, by idempotency's init.
func Set[S, O, C any](f Funcs[S, O, C]) {
	if funcs != nil {
		panic("idemlink: Set called twice")
	}
	funcs = f
}

// Get returns the functions Set recorded. It panics when none were set,
// or with other types: a program that imports package idempotency has
// them set before any package that imports it runs.
func Get[S, O, C any]() Funcs[S, O, C] {
	f, ok := funcs.(Funcs[S, O, C])
	if !ok {
		panic("idemlink: package idempotency's functions are not set (or not of these types)")
	}
	return f
}
