// Package remote holds what the rooms of localtest that talk to real
// endpoints (localtest/source, localtest/destination) share.
package remote

import (
	"context"
	"fmt"
	"time"
)

// Err wraps an error of a client (AWS SDK, franz-go) without exposing its
// type: the context's cause if ctx is done (so callers can test
// errors.Is(err, context.Canceled)), else the client error's text.
func Err(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	return fmt.Errorf("%s: %v", what, err)
}

// ISOTime is a time as Lambda writes it in on-failure records, in UTC with
// milliseconds.
func ISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
