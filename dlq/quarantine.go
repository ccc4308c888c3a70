package dlq

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/batch"
)

// Why a record was quarantined (Envelope.Reason).
const (
	// ReasonPermanent: it failed with a permanent error (batch.Permanent, a
	// decode error); retrying cannot help.
	ReasonPermanent = "permanent"
	// ReasonAttempts: it failed and its attempts reached the limit.
	ReasonAttempts = "attempts"
	// ReasonCrash: it was blamed for crashing or timing out the whole
	// function (see Blame) and quarantined without running.
	ReasonCrash = "crash"
)

// ClassCrash is Envelope.Class of a record blamed for a whole-function
// crash; the other classes are batch.Class names ("permanent",
// "transient", "plain").
const ClassCrash = "crash"

// Quarantine decides, for a record that failed with an error of class after
// attempts tries, whether it is quarantined and why: a permanent error
// always is; any other once attempts reached limit (limit 0: never). It
// returns "" for a record that is reported to Lambda instead.
func Quarantine(class batch.Class, attempts, limit int) string {
	switch {
	case class == batch.ClassNone:
		return ""
	case class == batch.ClassPermanent:
		return ReasonPermanent
	case limit > 0 && attempts >= limit:
		return ReasonAttempts
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
func Blame(a Attempts, alone bool, limit int) bool {
	return alone && limit > 0 && a.Isolated >= 2 && a.Count >= limit
}

// Config is what WithDeadLetters' options set.
type Config struct {
	// MaxAttempts quarantines a record whose attempts reached it; 0 means
	// only permanent failures are quarantined.
	MaxAttempts int
	// Attempts is where stream and Kafka handlers count attempts; SQS
	// handlers read ApproximateReceiveCount instead.
	Attempts AttemptsStore
}

// An Option configures quarantine.
type Option func(*Config) error

// WithMaxAttempts quarantines a record once it failed n times, counted
// across invocations, Lambda's bisection and crashes (SQS:
// ApproximateReceiveCount; streams and Kafka: the WithAttempts store, which
// they then need). n must be at least 1.
func WithMaxAttempts(n int) Option {
	return func(c *Config) error {
		if n < 1 {
			return fmt.Errorf("dlq.WithMaxAttempts(%d): must be at least 1", n)
		}
		c.MaxAttempts = n
		return nil
	}
}

// WithAttempts sets where a stream or Kafka handler counts attempts
// (NewMemory for tests; package dlq/dynamodbattempts for a deployed
// function).
func WithAttempts(s AttemptsStore) Option {
	return func(c *Config) error {
		if s == nil {
			return errors.New("dlq.WithAttempts: store is nil")
		}
		c.Attempts = s
		return nil
	}
}

// NewConfig applies opts to the defaults (only permanent failures are
// quarantined, no store).
func NewConfig(opts ...Option) (Config, error) {
	var c Config
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
