package destination_test

import (
	"context"
	"testing"
	"time"
)

// awsCtx is a context for calls to a local server, cancelled at the end of
// the test.
func awsCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
