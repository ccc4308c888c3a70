package idempotency

import (
	"context"
	"math"
	"sync"
	"time"
)

// Cache keeps completed records in process memory, so that a warm Lambda
// container skips a key it completed (or found completed) without asking
// the store. Pass it to Do with WithCache; package handlers fills it too,
// with what a batch's claims, reads and checkpoints find completed. Only
// completed records enter it,
// each until its own expiry; the oldest entry is dropped when it is full.
// A Cache is safe for concurrent use.
//
// A cache can only make a duplicate cheaper, never turn a new key into a
// duplicate: what it holds was completed in the store. (A record deleted
// from the store by hand before its expiry is still skipped by a container
// that cached it.)
type Cache struct {
	mu    sync.Mutex
	size  int
	m     map[string]cached
	order []string // ring of keys, oldest at next
	next  int
}

type cached struct {
	result  []byte
	hash    string
	expires time.Time
}

// NewCache returns a cache of at most size completed records. A size below
// 1 means 1.
func NewCache(size int) *Cache {
	size = max(size, 1)
	return &Cache{size: size, m: make(map[string]cached, min(size, 1024))}
}

// Len returns how many records the cache holds (some may have expired).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// get returns key's completed record when it has not expired at now.
func (c *Cache) get(key string, now time.Time) (*Record, bool) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || e.expires.Unix() < now.Unix() {
		return nil, false
	}
	return &Record{Key: key, Status: StatusCompleted, Result: e.result, PayloadHash: e.hash, Expires: e.expires}, true
}

// put remembers a completed record.
func (c *Cache) put(r *Record) {
	if r == nil || r.Status != StatusCompleted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[r.Key]; !ok {
		if len(c.order) < c.size {
			c.order = append(c.order, r.Key)
		} else {
			delete(c.m, c.order[c.next])
			c.order[c.next] = r.Key
			c.next = (c.next + 1) % c.size
		}
	}
	c.m[r.Key] = cached{result: r.Result, hash: r.PayloadHash, expires: r.Expires}
}

// Getter is a Store that can also read many records at once (DynamoDB's
// BatchGetItem). It is optional: package handlers' WithIdempotency uses
// it, when the store has it, to read the keys of a batch's redelivered
// records (and, once, those of a lane that has no checkpoint yet) before
// they are claimed.
type Getter interface {
	// Get returns the records stored for keys, by key; a key without a
	// record is absent. A store may read an earlier state (an eventually
	// consistent read): a completed record it misses is found by the claim.
	Get(ctx context.Context, keys []string) (map[string]*Record, error)
}

// newBatchCache returns the cache a Batch keeps for its life when it is
// given none: sized for its keys, and never dropping one (a batch puts
// only the completions of its own records).
func newBatchCache(keys int) *Cache {
	return &Cache{size: math.MaxInt, m: make(map[string]cached, min(max(keys, 1), 1024))}
}
