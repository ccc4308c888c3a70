package batch

import "fmt"

// Outcome is what became of one record in one invocation.
type Outcome uint8

const (
	// NotAttempted records were not run: the deadline was near, or an
	// earlier record they must follow failed. Their error is ErrDeadline or
	// ErrStopped.
	NotAttempted Outcome = iota
	// Succeeded records are done.
	Succeeded
	// Failed records were run and failed.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case NotAttempted:
		return "not-attempted"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Outcome(%d)", o)
}
