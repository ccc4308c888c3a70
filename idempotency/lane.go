package idempotency

import (
	"context"
	"time"
)

// LaneStore is a Store that also keeps lane checkpoints: one item per
// ordered lane (a Kinesis shard, a Kafka partition, an SQS FIFO message
// group), holding the lane's position (the highest it completed, in
// Position's form), a state this package writes and reads (which records
// at or below the position did not complete, and which above it did),
// and a lease, fenced by an owner token, as a Kinesis Client Library
// lease table holds a shard's checkpoint and its worker's lease. Package
// handlers uses it, when the store has it, for the records of ordered
// lanes keyed by their own id (handlers.WithIdempotency): a batch claims
// each lane once, writes its checkpoint once per group of records, and a
// record at or below it is a duplicate, instead of a claim and a complete
// per record.
//
// Both methods are one conditional write; the store compares, not
// interprets: positions as strings, times as given (the caller's clock).
type LaneStore interface {
	// ClaimLane takes c.Lane's lease for c.Owner when it is free (no
	// item, an item expired at c.Now (whole seconds), a lease released
	// or run out (milliseconds), or already c.Owner's) and, when c.Upto
	// is not empty, the lane's position is below c.Upto (there is
	// something after it to run). It returns the lane as it was before
	// the call, with Owner set to c.Owner when the lease was taken; when
	// it was not, the lane as it is (another owner's live lease, or a
	// position at or above c.Upto). A lane never written is a LaneRecord
	// with no State.
	ClaimLane(ctx context.Context, c LaneClaim) (*LaneRecord, error)
	// SaveLane writes s.Lane's position and state, with s.LeaseUntil as
	// its new lease (a zero time releases the lease) and s.Expires as the
	// item's expiry, only if s.Owner holds the lease (a lease that ran
	// out but that nobody took over is still the owner's); otherwise it
	// returns an error wrapping ErrLeaseLost and changes nothing. With a
	// nil State it only moves the lease (and the expiry).
	SaveLane(ctx context.Context, s LaneSave) error
}

// LaneClaim is one attempt to take a lane's lease.
type LaneClaim struct {
	Lane  string
	Owner string
	// Upto, when set, takes the lease only if the lane's position is
	// below it (a Position): a batch whose records are all at or below
	// the position needs no lease, and its refused claim returns the
	// lane, so a replay costs one request.
	Upto       string
	Now        time.Time
	LeaseUntil time.Time
	Expires    time.Time
}

// LaneRecord is a lane's item.
type LaneRecord struct {
	Lane       string
	Owner      string    // the lease's holder (the last one, when released)
	LeaseUntil time.Time // zero when released
	Expires    time.Time // the item's expiry, whole seconds
	Position   string    // the highest completed position ("" none)
	State      []byte    // this package's state of the lane
}

// LaneSave is a write of a lane's checkpoint by its lease's owner.
type LaneSave struct {
	Lane       string
	Owner      string
	Position   string
	State      []byte    // nil: only the lease and expiry move
	LeaseUntil time.Time // zero: release the lease
	Expires    time.Time
}

// LaneStatus is the status stores write in a lane's item (Store records
// are INPROGRESS or COMPLETED), so an item of one kind is never read as
// the other.
const LaneStatus = "LANE"
