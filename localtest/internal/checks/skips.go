package checks

import "fmt"

// Skip reasons a handler gives for a record it answered without the
// user's function, as handlers spells them.
const (
	// ReasonDuplicate: its idempotency key had completed (Claim.Key).
	ReasonDuplicate = "duplicate"
	// ReasonS3TestEvent: the message is the s3:TestEvent S3 sends when
	// notifications are set up.
	ReasonS3TestEvent = "s3-test-event"
	// ReasonControlMessage: the record is a CloudWatch Logs subscription's
	// CONTROL_MESSAGE (a check that the destination is reachable).
	ReasonControlMessage = "control-message"
)

// Reasons lists the skip reasons the runner knows.
func Reasons() []string { return []string{ReasonDuplicate, ReasonS3TestEvent, ReasonControlMessage} }

// Claim is what a handler said of one record it answered without the
// user's function: the record (by its id), why, and for a duplicate the
// idempotency key that had completed, or, when the checkpoint of the
// record's ordered lane answered it, that lane's key and the record's
// position in it (the store then holds the lane, not the key).
type Claim struct {
	Record, Reason, Key, Request string
	Lane, Position               string
}

// MarkSkipped turns into Skipped the fate of every processed record that a
// claim names and no effect names (took(id) is false): Lambda
// acknowledged it, and the function never did its work for it. A record
// some effect names was run by the function (a claim then comes from a
// later delivery). took is nil when the run was given no effects: every
// claimed processed record is then skipped. It returns the claims by
// record id and those that name no record of the run.
func MarkSkipped(fates map[string]string, claims []Claim, took func(id string) bool) (by map[string][]Claim, stray []Claim) {
	for _, c := range claims {
		f, ok := fates[c.Record]
		if !ok {
			stray = append(stray, c)
			continue
		}
		if by == nil {
			by = map[string][]Claim{}
		}
		by[c.Record] = append(by[c.Record], c)
		if f == Processed && (took == nil || !took(c.Record)) {
			fates[c.Record] = Skipped
		}
	}
	return by, stray
}

// Store is what the runner read of the function's idempotency store, to
// check the claims of records skipped as duplicates.
type Store struct {
	// Before holds the keys completed when the run started; BeforeErr is
	// why they could not be read (Before is then nil).
	Before    map[string]bool
	BeforeErr error
	// After returns the keys completed now (called once, at the end, and
	// only when a claim needs it).
	After func() (map[string]bool, error)
	// Stored, when set, is the form in which the store keeps a key or a
	// lane (a long one by a digest): Before, After and the lanes name them
	// in that form.
	Stored func(key string) string
	// LanesBefore says what the lanes' checkpoints held when the run
	// started, LanesBeforeErr why they could not be read; LanesAfter
	// reads them now (called once, at the end, and only when a claim needs
	// it). All nil when the runner cannot read the store's lanes.
	LanesBefore    Lanes
	LanesBeforeErr error
	LanesAfter     func() (Lanes, error)

	after      map[string]bool
	afterErr   error
	read       bool
	lanesAfter Lanes
	lanesErr   error
	lanesRead  bool
}

// Lanes says what a store's lane checkpoints hold of the record at
// position pos of lane: covered (completed); when not, whether the lane
// still tells (known false: it expired, or forgot positions that low).
type Lanes func(lane, pos string) (covered, known bool, err error)

func (s *Store) completedAfter() (map[string]bool, error) {
	if !s.read {
		s.read = true
		s.after, s.afterErr = s.After()
	}
	return s.after, s.afterErr
}

func (s *Store) lanesNow() (Lanes, error) {
	if !s.lanesRead {
		s.lanesRead = true
		s.lanesAfter, s.lanesErr = s.LanesAfter()
	}
	return s.lanesAfter, s.lanesErr
}

func (s *Store) stored(k string) string {
	if s.Stored == nil {
		return k
	}
	return s.Stored(k)
}

// claimVerdict is how one claim checked out: held (Checked says how),
// false (Why says why), or unknown (Why says why it cannot be told).
type claimVerdict struct {
	held, unknown bool
	checked, why  string
}

// checkClaim checks claim c of record i, which ended Skipped. tookEffect
// says the records that share its business key (Input.Field) took effect
// in this run.
func checkClaim(in Input, i int, c Claim, tookEffect bool) claimVerdict {
	switch c.Reason {
	case ReasonS3TestEvent, ReasonControlMessage:
		what := map[string]string{ReasonS3TestEvent: "an s3:TestEvent message", ReasonControlMessage: "a CloudWatch Logs CONTROL_MESSAGE"}[c.Reason]
		if in.Shows != nil && in.Shows(i, c.Reason) {
			return claimVerdict{held: true, checked: "its payload is " + what}
		}
		return claimVerdict{why: fmt.Sprintf("its handler answered it without running the function as %s, but its payload is not one", what)}
	case ReasonDuplicate:
	default:
		return claimVerdict{why: fmt.Sprintf("its handler answered it without running the function for a reason the runner does not know (%q; it knows %v)", c.Reason, Reasons())}
	}
	if c.Key == "" {
		return claimVerdict{why: "its handler answered it without running the function as a duplicate, but named no idempotency key"}
	}
	if tookEffect {
		return claimVerdict{held: true, checked: fmt.Sprintf("a duplicate: %s %q took effect in this run", in.Field, in.Records[i].Field)}
	}
	if c.Lane != "" {
		return checkLaneClaim(in, i, c)
	}
	s := in.Store
	if s == nil {
		return claimVerdict{unknown: true, why: fmt.Sprintf("it was answered as a duplicate of idempotency key %q, but the runner was not given the function's "+
			"idempotency store (SLUICE_IDEMPOTENCY_TABLE; Options.Idempotency) to check that the key had completed", c.Key)}
	}
	if s.Before[s.stored(c.Key)] {
		return claimVerdict{held: true, checked: fmt.Sprintf("a duplicate: idempotency key %q had completed before the run", c.Key)}
	}
	after, err := s.completedAfter()
	switch {
	case err != nil:
		return claimVerdict{unknown: true, why: fmt.Sprintf("it was answered as a duplicate of idempotency key %q, and the idempotency store could not be read (%v)", c.Key, err)}
	case !after[s.stored(c.Key)]:
		return claimVerdict{why: fmt.Sprintf("it was answered as a duplicate of idempotency key %q, but that key is not completed in the idempotency store: "+
			"no record ever took effect under it", c.Key)}
	case s.BeforeErr != nil:
		return claimVerdict{unknown: true, why: fmt.Sprintf("it was answered as a duplicate of idempotency key %q, which is completed, but the store could not be "+
			"read when the run started (%v), so whether its effect happened before the run or in it is unknown", c.Key, s.BeforeErr)}
	}
	how := "match effects by that business key (--effects-key FIELD, Options.EffectsKey): the record that took effect then answers for this one"
	if in.Field != "" {
		how = fmt.Sprintf("no record with its %s %q took effect in this run", in.Field, in.Records[i].Field)
	}
	return claimVerdict{unknown: true, why: fmt.Sprintf("it was answered as a duplicate of idempotency key %q, completed during this run by a record "+
		"the runner cannot name (the key is not the record's own): %s", c.Key, how)}
}

// checkLaneClaim checks claim c of record i, a duplicate its lane's
// checkpoint answered: the position it names must be the record's own
// (Input.Position), and the lane must hold it completed. Covered before
// the run, the record's effect happened before it. Covered only now, its
// effect happened in the run or never: with effects given, none names
// the record (it would not have ended Skipped), so the checkpoint moved
// past a record whose function never ran, as a checkpoint per shard does
// when Lambda runs several batches of the shard at once.
func checkLaneClaim(in Input, i int, c Claim) claimVerdict {
	what := fmt.Sprintf("it was answered as a duplicate by the checkpoint of lane %q at position %s", c.Lane, c.Position)
	if c.Position == "" {
		return claimVerdict{why: fmt.Sprintf("it was answered as a duplicate by the checkpoint of lane %q, but its handler named no position in it", c.Lane)}
	}
	if in.Position == nil {
		return claimVerdict{unknown: true, why: what + ", and the runner cannot tell the record's position in its lane to check that the position is its own"}
	}
	switch own, ok := in.Position(i); {
	case !ok:
		return claimVerdict{unknown: true, why: what + ", and the runner cannot tell the record's position in its lane to check that the position is its own"}
	case own != c.Position:
		return claimVerdict{why: fmt.Sprintf("%s, but the record's own position is %s", what, own)}
	}
	s := in.Store
	if s == nil {
		return claimVerdict{unknown: true, why: what + ", but the runner was not given the function's idempotency store " +
			"(SLUICE_IDEMPOTENCY_TABLE; Options.Idempotency) to check that the lane holds it completed"}
	}
	if s.Before[s.stored(c.Key)] {
		return claimVerdict{held: true, checked: fmt.Sprintf("a duplicate: idempotency key %q had completed before the run", c.Key)}
	}
	if s.LanesAfter == nil {
		return claimVerdict{unknown: true, why: what + ", but the runner cannot read the lanes of the function's idempotency store"}
	}
	lane := s.stored(c.Lane)
	if s.LanesBefore != nil && s.LanesBeforeErr == nil {
		covered, _, err := s.LanesBefore(lane, c.Position)
		if err != nil {
			return claimVerdict{unknown: true, why: fmt.Sprintf("%s, and the lane as it was when the run started cannot be read (%v)", what, err)}
		}
		if covered {
			return claimVerdict{held: true, checked: fmt.Sprintf("a duplicate: the checkpoint of lane %q covered its position before the run", c.Lane)}
		}
	}
	lanes, err := s.lanesNow()
	if err != nil {
		return claimVerdict{unknown: true, why: fmt.Sprintf("%s, and the idempotency store's lanes could not be read (%v)", what, err)}
	}
	covered, known, err := lanes(lane, c.Position)
	switch {
	case err != nil:
		return claimVerdict{unknown: true, why: fmt.Sprintf("%s, and the lane cannot be read (%v)", what, err)}
	case !covered && !known:
		return claimVerdict{unknown: true, why: what + ", and the lane no longer records that position (it expired, or forgot positions that low)"}
	case !covered:
		return claimVerdict{why: what + ", but the lane does not hold that position completed: no record ever completed there"}
	case s.BeforeErr != nil || s.LanesBefore == nil || s.LanesBeforeErr != nil:
		why := s.LanesBeforeErr
		if why == nil {
			why = s.BeforeErr
		}
		return claimVerdict{unknown: true, why: fmt.Sprintf("%s, which the lane holds completed, but the store could not be read when the run started (%v), "+
			"so whether its effect happened before the run or in it is unknown", what, why)}
	case !in.Have || in.Err != nil:
		return claimVerdict{unknown: true, why: what + ", which the lane holds completed only since the run began: give the run the function's effects " +
			"(--effects, Options.Effects) to tell a record that ran from one the checkpoint moved past"}
	}
	return claimVerdict{why: what + ", which the lane holds completed only since the run began, and no effect of this run names the record: " +
		"the checkpoint moved past it without its function running (a checkpoint per shard does this when Lambda runs several batches of " +
		"the shard at once: the function must be told the mapping's ParallelizationFactor)"}
}

// checkSkipped checks the claims of every record that ended Skipped, and
// the stray claims, into loss, and says per skipped record how its claim
// checked out. tookEffect(i) says the records sharing record i's business
// key took effect. It returns how many skipped records' claims could not
// be checked, and the first reason why.
func checkSkipped(in Input, loss *Result, tookEffect func(i int) bool) (claimed map[string]Claimed, unsure int, why string) {
	for _, c := range in.Stray {
		loss.Violate("its handler said record %s was answered without running the function (%s), but no record of this run has that id", c.Record, c.Reason)
	}
	for i, rec := range in.Records {
		if in.Fates[rec.ID] != Skipped {
			continue
		}
		claims := in.Claims[rec.ID]
		cl := Claimed{}
		var violated, unknown string
		for n, c := range claims {
			v := checkClaim(in, i, c, tookEffect(i))
			if n == 0 {
				cl = Claimed{Reason: c.Reason, Key: c.Key, Lane: c.Lane, Position: c.Position, Checked: v.checked}
			}
			switch {
			case v.unknown && unknown == "":
				unknown = v.why
			case !v.held && !v.unknown && violated == "":
				violated = v.why
			}
		}
		switch {
		case violated != "":
			cl.Checked, cl.Problem = "", violated
			loss.Violate("record %s was acknowledged without its function running: %s; its effect never happened", in.Name(i), violated)
		case unknown != "":
			cl.Checked, cl.Problem = "", unknown
			unsure++
			if why == "" {
				why = fmt.Sprintf("record %s: %s", in.Name(i), unknown)
			}
		}
		if claimed == nil {
			claimed = map[string]Claimed{}
		}
		claimed[rec.ID] = cl
	}
	return claimed, unsure, why
}

// Claimed is how a skipped record's claims checked out, for the report:
// the first claim's reason, key, lane and position, how the claims were
// shown true (Checked), or why they were not (Problem).
type Claimed struct {
	Reason, Key      string
	Lane, Position   string
	Checked, Problem string
}
