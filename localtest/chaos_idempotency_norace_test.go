//go:build !race

package localtest_test

import "testing"

// TestChaosIdempotency runs 100,000 messages (about 10 s on two cores); the
// race detector makes it ten times slower, so a race build runs 10,000
// (chaos_idempotency_race_test.go).
func TestChaosIdempotency(t *testing.T) { chaosIdempotency(t, 100000) }

// chaosRecordsRun is how many records TestChaos runs, and
// chaosTimeoutRate its share of injected timeouts (about 30: each waits
// out the function's timeout).
const (
	chaosRecordsRun  = 100000
	chaosTimeoutRate = 0.002
)
