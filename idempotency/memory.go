package idempotency

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// MemoryStore is a Store in process memory, for tests and local runs. It
// keeps the same rules as the DynamoDB store, at the same precision (expiry
// in seconds, leases in milliseconds). Time comes from each call (Claim.Now),
// i.e. from Do's clock (WithClock), so it needs no clock of its own.
type MemoryStore struct {
	mu    sync.Mutex
	recs  map[string]Record
	lanes map[string]laneItem
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]Record{}} }

// Claim implements Store.
func (s *MemoryStore) Claim(ctx context.Context, c Claim) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, &StoreError{Op: "claim", Key: c.Key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[c.Key]; ok && !Claimable(r, c.Now) {
		r.Result = clone(r.Result)
		return &r, nil
	}
	s.recs[c.Key] = Record{
		Key: c.Key, Status: StatusInProgress, Owner: c.Owner, PayloadHash: c.PayloadHash,
		LeaseUntil: c.LeaseUntil.Truncate(time.Millisecond), Expires: c.Expires.Truncate(time.Second),
	}
	return nil, nil
}

// Complete implements Store.
func (s *MemoryStore) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "complete", Key: key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	if !ok || r.Owner != owner {
		return fmt.Errorf("idempotency: completing key %q: %w", key, ErrLeaseLost)
	}
	r.Status, r.Result, r.LeaseUntil, r.Expires = StatusCompleted, clone(result), time.Time{}, expires.Truncate(time.Second)
	s.recs[key] = r
	return nil
}

var _ GroupCompleter = (*MemoryStore)(nil)

// CompleteAll implements GroupCompleter: under the store's lock, it checks
// every owner first and then completes every key, so it is all-or-nothing.
func (s *MemoryStore) CompleteAll(ctx context.Context, cs []Completion) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "complete", Key: firstCompletion(cs), Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range cs {
		if r, ok := s.recs[c.Key]; !ok || r.Owner != c.Owner {
			return fmt.Errorf("idempotency: completing key %q (%d of a group of %d; none of the group was written): %w", c.Key, i+1, len(cs), ErrLeaseLost)
		}
	}
	for _, c := range cs {
		r := s.recs[c.Key]
		r.Status, r.Result, r.LeaseUntil, r.Expires = StatusCompleted, clone(c.Result), time.Time{}, c.Expires.Truncate(time.Second)
		s.recs[c.Key] = r
	}
	return nil
}

func firstCompletion(cs []Completion) string {
	if len(cs) == 0 {
		return ""
	}
	return cs[0].Key
}

// Extend implements Store.
func (s *MemoryStore) Extend(ctx context.Context, key, owner string, leaseUntil time.Time) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "extend", Key: key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	if !ok || r.Owner != owner || r.Status != StatusInProgress {
		return fmt.Errorf("idempotency: extending the lease of key %q: %w", key, ErrLeaseLost)
	}
	r.LeaseUntil = leaseUntil.Truncate(time.Millisecond)
	s.recs[key] = r
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, key, owner string) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "release", Key: key, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[key]
	if !ok || r.Owner != owner {
		return fmt.Errorf("idempotency: releasing key %q: %w", key, ErrLeaseLost)
	}
	delete(s.recs, key)
	return nil
}

// Claimable reports whether a new claim at now may replace r: r expired
// (whole seconds), or r is in progress and its lease ran out (milliseconds).
// It is the claim condition every store applies.
func Claimable(r Record, now time.Time) bool {
	if r.Expires.Unix() < now.Unix() {
		return true
	}
	return r.Status == StatusInProgress && r.LeaseUntil.UnixMilli() < now.UnixMilli()
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

var _ Getter = (*MemoryStore)(nil)

// Get implements Getter.
func (s *MemoryStore) Get(ctx context.Context, keys []string) (map[string]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, &StoreError{Op: "get", Key: firstKey(keys), Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*Record)
	for _, k := range keys {
		if r, ok := s.recs[k]; ok {
			r.Result = clone(r.Result)
			out[k] = &r
		}
	}
	return out, nil
}

func firstKey(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// laneItem is a lane's item in a MemoryStore.
type laneItem struct {
	owner    string
	lease    time.Time // zero: released
	expires  time.Time
	position string
	state    []byte
}

var _ LaneStore = (*MemoryStore)(nil)

// ClaimLane implements LaneStore.
func (s *MemoryStore) ClaimLane(ctx context.Context, c LaneClaim) (*LaneRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, &StoreError{Op: "claim lane", Key: c.Lane, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.lanes[c.Lane]
	var before LaneRecord
	if ok {
		before = it.record(c.Lane)
	} else {
		before = LaneRecord{Lane: c.Lane}
	}
	free := !ok || it.expires.Unix() < c.Now.Unix() ||
		(it.lease.IsZero() || it.lease.UnixMilli() < c.Now.UnixMilli() || it.owner == c.Owner) &&
			(c.Upto == "" || it.position < c.Upto)
	if !free {
		return &before, nil
	}
	if s.lanes == nil {
		s.lanes = map[string]laneItem{}
	}
	it.owner, it.lease, it.expires = c.Owner, c.LeaseUntil.Truncate(time.Millisecond), c.Expires.Truncate(time.Second)
	s.lanes[c.Lane] = it
	before.Owner = c.Owner
	return &before, nil
}

// SaveLane implements LaneStore.
func (s *MemoryStore) SaveLane(ctx context.Context, sv LaneSave) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Op: "save lane", Key: sv.Lane, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.lanes[sv.Lane]
	if !ok || it.owner != sv.Owner || it.lease.IsZero() {
		return fmt.Errorf("idempotency: saving lane %q: %w", sv.Lane, ErrLeaseLost)
	}
	if sv.State != nil {
		it.position, it.state = sv.Position, clone(sv.State)
	}
	it.lease, it.expires = sv.LeaseUntil.Truncate(time.Millisecond), sv.Expires.Truncate(time.Second)
	s.lanes[sv.Lane] = it
	return nil
}

func (it laneItem) record(lane string) LaneRecord {
	return LaneRecord{Lane: lane, Owner: it.owner, LeaseUntil: it.lease, Expires: it.expires, Position: it.position, State: clone(it.state)}
}
