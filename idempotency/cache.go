package idempotency

import (
	"context"
	"sync"
	"time"
)

// Cache keeps completed records in process memory, so that a warm Lambda
// container skips a key it completed (or found completed) without asking
// the store. Pass it to Do with WithCache; package handlers also fills it
// from its batch-level lookup (a Getter's read of a batch's keys before
// the batch runs). Only completed records enter it,
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
// it, when the store has it, to read a batch's keys before the batch runs.
type Getter interface {
	// Get returns the records stored for keys, by key; a key without a
	// record is absent. A store may read an earlier state (an eventually
	// consistent read): a completed record it misses is found by the claim.
	Get(ctx context.Context, keys []string) (map[string]*Record, error)
}

// lookup finds which of keys have completed, before their records run: it
// reads them from cache, then asks the store for the rest in as few
// requests as it allows (one BatchGetItem per 100 keys on DynamoDB), and
// puts every completed, unexpired record it finds into cache. Do with
// WithCache(cache) then skips those keys without a store request, so a
// replayed batch costs a request per hundred records instead of one per
// record. It returns how many distinct keys are completed.
//
// lookup is an optimisation and fails soft: a store without Getter, or a
// failed read, only means the claims find out instead. The error is
// returned for logging. It is package handlers' (through
// internal/idemlink), not part of this package's API.
func lookup(ctx context.Context, store Store, cache *Cache, keys []string, now time.Time) (int, error) {
	completed := 0
	var ask []string
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := cache.get(k, now); ok {
			completed++
			continue
		}
		ask = append(ask, k)
	}
	g, ok := store.(Getter)
	if !ok || len(ask) == 0 {
		return completed, nil
	}
	recs, err := g.Get(ctx, ask)
	for _, r := range recs {
		if r != nil && r.Status == StatusCompleted && r.Expires.Unix() >= now.Unix() {
			cache.put(r)
			completed++
		}
	}
	return completed, err
}

// cacheOf returns the cache opts set with WithCache, or nil, so package
// handlers, which takes a user's options, can fill the same cache.
func cacheOf(opts ...Option) *Cache {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return cfg.cache
}
