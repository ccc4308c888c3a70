// Package deadletter holds the dead-letter decisions Sluice's own packages
// share and a user never calls: which failed record is quarantined and why
// (Quarantine), which lone record is quarantined without running because it
// crashed the function (Blame), how a Destination's answer spreads over the
// envelopes it was given (Rejected) and the configuration the options of
// package dlq build (NewConfig), a FIFO message's attempts (FIFOAttempts)
// and the envelope's error text (CapText), for package handlers; and the
// attempts key earlier versions gave a Kinesis record
// (KinesisLegacyAttemptsKey), for package internal/redrive. The vocabulary a user sees (the envelope, its
// reasons, the options, the stores and destinations) is package dlq, whose
// documentation states the rules.
package deadletter

import (
	"errors"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
)

// Quarantine decides, for a record that failed with an error of class after
// attempts tries, whether it is quarantined and why: a permanent error
// always is; any other once attempts reached limit (limit 0: never). It
// returns "" for a record that is reported to Lambda instead.
func Quarantine(class batch.Class, attempts, limit int) string {
	switch {
	case class == batch.ClassNone:
		return ""
	case class == batch.ClassPermanent:
		return dlq.ReasonPermanent
	case limit > 0 && attempts >= limit:
		return dlq.ReasonAttempts
	}
	return ""
}

// Blame decides, before a batch of one stream or Kafka record runs, whether
// that record is quarantined without running because it crashes the
// function: a is its attempts after Begin counted this delivery.
//
// When the function crashes (os.Exit, a fatal runtime error, running out of
// memory) or times out, nothing is answered, and Lambda's
// BisectBatchOnFunctionError splits the batch until the record to blame is
// alone in it. Counting deliveries of every batch's head would also count a
// healthy record that merely headed batches that crashed further on, so
// only a record alone in its batch is counted (Begin), and an answered
// failure resets Isolated (Fail). A record is blamed when it is alone,
// an earlier delivery alone went unanswered (Isolated >= 2: it crashed
// while nothing else ran), and its attempts reached limit. A record alone
// for the first time always runs: a healthy record isolated because its
// neighbour crashed succeeds then and is never delivered again.
func Blame(a dlq.Attempts, alone bool, limit int) bool {
	return alone && limit > 0 && a.Isolated >= 2 && a.Count >= limit
}

// Rejected spreads the result of a Send of n envelopes over them: entry i is
// nil when envelope i was accepted, else why it was not. A *dlq.SendError
// whose Errs does not have n entries counts as a failure of every envelope.
func Rejected(err error, n int) []error {
	out := make([]error, n)
	if err == nil {
		return out
	}
	var se *dlq.SendError
	if errors.As(err, &se) && len(se.Errs) == n {
		copy(out, se.Errs)
		return out
	}
	for i := range out {
		out[i] = err
	}
	return out
}

// KinesisLegacyAttemptsKey is the key under which earlier versions counted
// a Kinesis record's attempts (the sequence number alone, where
// dlq.AttemptsKeyOf now takes the eventID), or "" for a record of another
// source. Redrive forgets it too, so a count an earlier version kept cannot
// quarantine a replayed record.
func KinesisLegacyAttemptsKey(e *dlq.Envelope) string {
	if e.Source != events.SourceKinesis {
		return ""
	}
	legacy := *e
	legacy.EventID, legacy.Shard = "", "" // AttemptsKeyOf then names it by RecordID
	return dlq.AttemptsKeyOf(&legacy)
}

// NewConfig applies opts to the defaults (only permanent failures are
// quarantined, no store).
func NewConfig(opts ...dlq.Option) (dlq.Config, error) {
	var c dlq.Config
	var errs []error
	for _, o := range opts {
		if o == nil {
			errs = append(errs, errors.New("dlq: nil option"))
			continue
		}
		if err := o(&c); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// MaxErrorText caps the error text an envelope carries, so a huge error
// message does not push the record itself out of a size-limited queue.
const MaxErrorText = 4096

// FIFOAttempts is the attempts of a FIFO message: the failures counted
// (this one included), never more than its receives (0: unknown).
func FIFOAttempts(failures, receives int) int {
	if receives > 0 && failures > receives {
		return receives
	}
	return max(1, failures)
}

// CapText is an envelope's error text: s, cut to MaxErrorText bytes.
func CapText(s string) string {
	if len(s) <= MaxErrorText {
		return s
	}
	return s[:MaxErrorText] + "... (truncated)"
}
