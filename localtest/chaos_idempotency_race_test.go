//go:build race

package localtest_test

import "testing"

// TestChaosIdempotency runs 10,000 messages under the race detector; the
// 100,000 of the issue run without it (chaos_idempotency_norace_test.go).
func TestChaosIdempotency(t *testing.T) { chaosIdempotency(t, 10000) }

// chaosRecordsRun is how many records TestChaos runs under the race
// detector (the 100,000 run without it), and chaosTimeoutRate its share of
// injected timeouts (about 15, as many as a rare fault needs to fire).
const (
	chaosRecordsRun  = 20000
	chaosTimeoutRate = 0.005
)
