//go:build race

package localtest_test

import "testing"

// TestChaosIdempotency runs 10,000 messages under the race detector; the
// 100,000 of the issue run without it (chaos_idempotency_norace_test.go).
func TestChaosIdempotency(t *testing.T) { chaosIdempotency(t, 10000) }

// chaosCrashMessages is how many messages TestChaosCrashIdempotency runs
// under the race detector.
const chaosCrashMessages = 1000

// chaosRecordsRun is how many records TestChaos runs under the race
// detector (the 100,000 run without it).
const chaosRecordsRun = 20000
