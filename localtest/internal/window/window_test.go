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
