package dlq

import (
	"errors"
	"fmt"
)

// Why a record was quarantined (Envelope.Reason).
const (
	// ReasonPermanent: it failed with a permanent error (batch.Permanent, a
	// decode error); retrying cannot help.
	ReasonPermanent = "permanent"
	// ReasonAttempts: it failed and its attempts reached the limit.
	ReasonAttempts = "attempts"
	// ReasonCrash: it was blamed for crashing or timing out the whole
	// function (alone in its batch, an earlier delivery alone unanswered,
	// its attempts at the limit) and quarantined without running.
	ReasonCrash = "crash"
)

// ClassCrash is Envelope.Class of a record blamed for a whole-function
// crash; the other classes are batch.Class names ("permanent",
// "transient", "plain").
const ClassCrash = "crash"

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
