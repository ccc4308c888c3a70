package dlq

import (
	"context"
	"fmt"
)

// A Destination keeps quarantined records. Send is called once per
// invocation with every envelope the batch quarantined.
//
// Send returns nil when the destination accepted every envelope, a
// *SendError when it accepted only some (its Errs say which), and any other
// error when it accepted none. A record whose envelope was not accepted is
// reported as failed, so Lambda delivers it again: a destination must never
// claim an envelope it did not keep. Send must not keep envs or their
// records after it returns, and must be safe for concurrent use.
type Destination interface {
	Send(ctx context.Context, envs []*Envelope) error
}

// SendError reports a send in which some envelopes were not accepted.
type SendError struct {
	// Errs holds one entry per envelope given to Send, in order: nil for an
	// envelope the destination accepted, else why it did not.
	Errs []error
}

func (e *SendError) Error() string {
	n, first := 0, error(nil)
	for _, err := range e.Errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	if first == nil {
		return "dlq: send: every envelope was accepted"
	}
	return fmt.Sprintf("dlq: %d of %d envelopes were not accepted; first: %v", n, len(e.Errs), first)
}

// Unwrap returns the errors of the envelopes that were not accepted.
func (e *SendError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}
