package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Status is the state of a stored idempotency record.
type Status uint8

// The states of a record.
const (
	// StatusInProgress: an invocation holds the claim until LeaseUntil.
	// Its owner extends LeaseUntil while it is alive (Store.Extend).
	StatusInProgress Status = iota + 1
	// StatusCompleted: the function ran to success; Result is stored until Expires.
	StatusCompleted
)

func (s Status) String() string {
	switch s {
	case StatusInProgress:
		return "INPROGRESS"
	case StatusCompleted:
		return "COMPLETED"
	}
	return fmt.Sprintf("Status(%d)", s)
}

// Claim is one attempt to take a key. A store writes it as one conditional
// write that succeeds when no record exists for Key, or the record expired
// (Expires before Now, compared in whole seconds), or it is in progress and
// its lease ran out (LeaseUntil before Now, compared in milliseconds).
// LeaseUntil is short (DefaultLease) and the owner moves it on with Extend
// while its function runs, so the claim of an owner that died lapses soon.
type Claim struct {
	Key         string
	Owner       string    // random token of this claim; Complete and Release must present it
	PayloadHash string    // optional hash of the payload, stored for validation
	Now         time.Time // the caller's clock; stores never read their own
	LeaseUntil  time.Time // in-progress expiry
	Expires     time.Time // record expiry (the table's TTL attribute)
}

// Record is a stored idempotency record, as a failed claim finds it.
type Record struct {
	Key         string
	Status      Status
	Owner       string
	Result      []byte // the stored result of a completed record (nil if none)
	PayloadHash string
	LeaseUntil  time.Time // in-progress expiry, millisecond precision
	Expires     time.Time // record expiry, second precision
}

// Store keeps idempotency records. Every method is one conditional write, so
// a store is a short addition for any database with compare-and-set
// (DynamoDB, Redis/Valkey with a script, SQL). A Store is safe for
// concurrent use. Its conformance suite is package storetest.
type Store interface {
	// Claim takes c.Key for c.Owner when the key is free (see Claim). It
	// returns (nil, nil) when the claim was written, and the existing record
	// when it was not: completed and unexpired, or in progress and live.
	Claim(ctx context.Context, c Claim) (*Record, error)
	// Complete marks key completed with result and expiry expires, only if
	// owner still holds it; otherwise it returns an error wrapping
	// ErrLeaseLost and changes nothing.
	Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error
	// Extend moves the lease of key's in-progress claim to leaseUntil, only
	// if owner still holds it in progress (a lease that ran out but that
	// nobody took over is still the owner's); otherwise it returns an error
	// wrapping ErrLeaseLost and changes nothing. Do calls it while the
	// claim's function runs (lease renewal, as KCL renews shard leases).
	Extend(ctx context.Context, key, owner string, leaseUntil time.Time) error
	// Release deletes key's record, only if owner still holds it; otherwise
	// it returns an error wrapping ErrLeaseLost and changes nothing.
	Release(ctx context.Context, key, owner string) error
}

var (
	// ErrInProgress reports a key claimed by a live invocation elsewhere (or
	// by another record of the same batch) for longer than Do waited (see
	// WithWait). The record must be retried later (it is reported failed,
	// but it is not an attempt of its own: dead letters do not count it),
	// never run concurrently and never skipped.
	ErrInProgress = errors.New("idempotency: key is in progress in another invocation")
	// ErrLeaseLost reports that the caller's claim is no longer its own: its
	// lease expired and another invocation claimed the key (or the record
	// expired). The stale owner's write was refused, so the new owner's
	// record is intact.
	ErrLeaseLost = errors.New("idempotency: claim lost to another owner")
	// ErrPayloadMismatch reports a key reused with a different payload (the
	// payload hashes differ). It is never treated as a duplicate.
	ErrPayloadMismatch = errors.New("idempotency: key reused with a different payload")
	// ErrNoKey reports an empty idempotency key.
	ErrNoKey = errors.New("idempotency: empty key")
)

// StoreError reports a store operation that failed (the network, the
// service, throttling). Retryable errors (throttling, timeouts) are retried
// by Do with backoff inside the deadline; the error then declares itself
// transient, so batch.Classify retries the record in process too.
type StoreError struct {
	Op        string // "claim", "complete", "extend", "release" or "get"
	Key       string
	Retryable bool
	Err       error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: store %s of key %q failed: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the underlying error.
func (e *StoreError) Unwrap() error { return e.Err }

// Transient reports whether retrying may help (throttling, timeouts).
func (e *StoreError) Transient() bool { return e.Retryable }

// Completion is one key's complete in a group (GroupCompleter): what
// Store.Complete takes for one key.
type Completion struct {
	Key     string
	Owner   string
	Result  []byte
	Expires time.Time
}

// GroupCompleter is a Store that writes the completes of several keys in
// one request. An ordered lane of a batch whose claims package handlers
// takes ahead uses it when the store has it:
// while one complete of a lane is in flight, the completes of the records
// that finish meanwhile wait, and are then written together, so a lane
// costs a request per group instead of one per record, and the groups are
// written one after another, in the lane's order. When a CompleteAll
// fails (after the store retries), that group is written again one
// Complete after another, so only the records whose own complete fails
// fail.
//
// CompleteAll completes every key of cs, in order, each only if its owner
// still holds it, as Complete does; it is all-or-nothing: when any owner
// lost its key, or the request fails, it changes nothing, and its error
// names the key (an owner lost: the error wraps ErrLeaseLost and says
// which key lost its lease). A store whose atomic request holds fewer
// items than cs (DynamoDB: 100 a transaction; Redis on a cluster client:
// one key) writes cs as consecutive parts, one after another, each all-or-nothing: a part that fails leaves
// the parts before it written and writes none after it, so what is stored
// is always a prefix of cs. The keys of cs are distinct.
type GroupCompleter interface {
	CompleteAll(ctx context.Context, cs []Completion) error
}
