package window

import (
	"testing"
	"time"
)

func TestWindowStartAlignsToTheEpoch(t *testing.T) {
	at := time.Unix(1_700_000_003, 500_000_000)
	for _, win := range []time.Duration{time.Second, 7 * time.Second, 60 * time.Second, 900 * time.Second} {
		got := Start(at, win)
		if got.Unix()%int64(win/time.Second) != 0 || got.After(at) || at.Sub(got) >= win {
			t.Errorf("window %v: start %v for %v is not the epoch-aligned window holding it", win, got.Unix(), at.Unix())
		}
	}
}

func TestFinalInvocationLimits(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name      string
		l         Limits
		retries   int
		newestAgo time.Duration
		exhausted bool
		expired   bool
	}{
		{"unlimited", Limits{MaxRetries: -1, MaxAge: -1}, 10_000, 48 * time.Hour, false, false},
		{"first failure, no retries allowed", Limits{MaxRetries: 0, MaxAge: -1}, 1, 0, true, false},
		{"retries left", Limits{MaxRetries: 2, MaxAge: -1}, 2, 0, false, false},
		{"retries used up", Limits{MaxRetries: 2, MaxAge: -1}, 3, 0, true, false},
		{"newest record young enough", Limits{MaxRetries: -1, MaxAge: time.Minute}, 5, time.Minute, false, false},
		{"newest record too old", Limits{MaxRetries: -1, MaxAge: time.Minute}, 5, time.Minute + time.Millisecond, false, true},
		{"until success ignores retries", Limits{MaxRetries: 0, MaxAge: -1, UntilSuccess: true}, 100, 0, false, false},
		{"until success ignores age", Limits{MaxRetries: -1, MaxAge: time.Minute, UntilSuccess: true}, 0, time.Hour, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Exhausted(tc.l, tc.retries); got != tc.exhausted {
				t.Errorf("Exhausted = %v, want %v", got, tc.exhausted)
			}
			if got := Expired(tc.l, now.Add(-tc.newestAgo), now); got != tc.expired {
				t.Errorf("Expired = %v, want %v", got, tc.expired)
			}
		})
	}
}
