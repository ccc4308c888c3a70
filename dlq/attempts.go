package dlq

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/events"
)

// Attempts is what an AttemptsStore knows about one record.
type Attempts struct {
	// Count is how many times the record was tried: one for each failure
	// the function answered, and one for each delivery alone in its batch
	// (counted before it runs, so a crash cannot lose it), never both for
	// the same delivery.
	Count int
	// Isolated is how many deliveries in a row had the record alone in its
	// batch without the function answering a failure of it: 2 or more means
	// an earlier such delivery crashed or timed out the whole function.
	Isolated int
	// FirstFailure and LastFailure are the times of the first and last
	// failure the function answered (zero when none was).
	FirstFailure, LastFailure time.Time
	// LastError and LastClass are the last answered failure's error text
	// and class.
	LastError, LastClass string
}

// Failure is one answered failure of a record.
type Failure struct {
	Time  time.Time
	Error string
	Class string
}

// AttemptsStore counts the attempts of stream and Kafka records across
// invocations, Lambda's bisection and whole-function crashes. (SQS counts
// them itself: ApproximateReceiveCount.) Keys are opaque strings; every
// method is atomic per key and safe for concurrent use.
//
// A healthy batch of more than one record costs no request; a batch of one
// record costs one (Begin); each failed record costs one (Fail).
type AttemptsStore interface {
	// Begin counts a delivery of record key alone in its batch, before it
	// runs: Count and Isolated grow by one. It returns the record's
	// attempts after counting.
	Begin(ctx context.Context, key string, now time.Time) (Attempts, error)
	// Fail records an answered failure of record key: Isolated becomes 0,
	// the failure times, error and class are set, and Count grows by one
	// unless counted says Begin already counted this delivery. It returns
	// the record's attempts after the update.
	Fail(ctx context.Context, key string, counted bool, f Failure) (Attempts, error)
}

// attemptsKey is the key under which a handler of function counts the
// attempts of record recordID from sourceARN. AttemptsKeyOf says which id
// names a record of each source.
func attemptsKey(function, sourceARN, recordID string) string {
	return function + "#" + sourceARN + "#" + recordID
}

// AttemptsKeyOf is the attempts key of the record e describes, under
// e.FunctionName: the record is named by its batch item identifier
// (RecordID), except a Kinesis record, named by its eventID (shard and
// sequence number, "shardId-000000000000:4959..."): Kinesis keeps sequence
// numbers unique per partition key within a shard, not across the shards
// of a stream. (Earlier versions counted Kinesis records under the
// sequence number alone; sluice redrive forgets that key too.)
func AttemptsKeyOf(e *Envelope) string {
	id := e.RecordID
	if e.Source == events.SourceKinesis {
		switch {
		case e.EventID != "":
			id = e.EventID
		case e.Shard != "":
			id = e.Shard + ":" + e.SequenceNumber
		}
	}
	return attemptsKey(e.FunctionName, e.SourceARN, id)
}

// A Forgetter is an AttemptsStore that can drop what it knows of a record.
// sluice redrive uses it before it replays a stream or Kafka record: a
// record quarantined for crashing the function keeps its count, and without
// this its replay, alone in its event, would be quarantined again at once
// instead of running the fixed code.
type Forgetter interface {
	Forget(ctx context.Context, key string) error
}

// DefaultAttemptsTTL is how long a store keeps a record's attempts after
// their last update: a week, the longest a record can wait in an event
// source mapping (MaximumRecordAgeInSeconds), and a day more.
const DefaultAttemptsTTL = 8 * 24 * time.Hour

// Memory is an AttemptsStore in memory, for tests and local runs. It
// forgets everything when the process ends, so it cannot count a crash;
// deployed functions need a shared store (package dlq/dynamodbattempts).
type Memory struct {
	ttl   time.Duration
	mu    sync.Mutex
	recs  map[string]memAttempts
	sweep int // sweep expired entries when the map reaches this size
}

type memAttempts struct {
	Attempts
	expires time.Time
}

var _ AttemptsStore = (*Memory)(nil)

// NewMemory returns an empty in-memory store that forgets a record ttl
// after its last update (DefaultAttemptsTTL when ttl <= 0).
func NewMemory(ttl time.Duration) *Memory {
	if ttl <= 0 {
		ttl = DefaultAttemptsTTL
	}
	return &Memory{ttl: ttl, recs: map[string]memAttempts{}, sweep: 1024}
}

func (m *Memory) get(key string, now time.Time) memAttempts {
	a, ok := m.recs[key]
	if ok && !now.Before(a.expires) {
		return memAttempts{}
	}
	return a
}

func (m *Memory) put(key string, a memAttempts, now time.Time) {
	a.expires = now.Add(m.ttl)
	m.recs[key] = a
	if len(m.recs) >= m.sweep {
		for k, v := range m.recs {
			if !now.Before(v.expires) {
				delete(m.recs, k)
			}
		}
		m.sweep = max(1024, 2*len(m.recs))
	}
}

// Begin implements AttemptsStore.
func (m *Memory) Begin(ctx context.Context, key string, now time.Time) (Attempts, error) {
	if err := ctx.Err(); err != nil {
		return Attempts{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.get(key, now)
	a.Count++
	a.Isolated++
	m.put(key, a, now)
	return a.Attempts, nil
}

// Fail implements AttemptsStore.
func (m *Memory) Fail(ctx context.Context, key string, counted bool, f Failure) (Attempts, error) {
	if err := ctx.Err(); err != nil {
		return Attempts{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.get(key, f.Time)
	if !counted {
		a.Count++
	}
	a.Isolated = 0
	if a.FirstFailure.IsZero() {
		a.FirstFailure = f.Time
	}
	a.LastFailure, a.LastError, a.LastClass = f.Time, f.Error, f.Class
	m.put(key, a, f.Time)
	return a.Attempts, nil
}

var _ Forgetter = (*Memory)(nil)

// Forget implements Forgetter.
func (m *Memory) Forget(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
	return nil
}
