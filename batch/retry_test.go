package batch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := Capped(Exponential(50*time.Millisecond), 300*time.Millisecond)
	want := []time.Duration{50, 100, 200, 300, 300}
	for i, w := range want {
		if got := b.Delay(i + 1); got != w*time.Millisecond {
			t.Errorf("Delay(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	if got := Exponential(time.Second).Delay(80); got <= 0 {
		t.Errorf("overflow must saturate, got %v", got)
	}
	j := FullJitter(Exponential(100*time.Millisecond), func() float64 { return 0.5 })
	if got := j.Delay(2); got != 100*time.Millisecond {
		t.Errorf("jitter 0.5 of 200ms = %v, want 100ms", got)
	}
	for range 1000 {
		if d := FullJitter(Exponential(10*time.Millisecond), nil).Delay(3); d < 0 || d > 40*time.Millisecond {
			t.Fatalf("jittered delay %v outside [0, 40ms]", d)
		}
	}
}

type counter struct {
	calls int
	errs  []error // returned in turn; nil after the end
}

func (c *counter) Handle(ctx context.Context, r string) error {
	c.calls++
	if c.calls <= len(c.errs) {
		return c.errs[c.calls-1]
	}
	return nil
}

func TestRetry(t *testing.T) {
	boom := errors.New("boom")
	var slept []time.Duration
	var noted []int
	policy := RetryPolicy{
		OnRetry: func(ctx context.Context, attempt int, err error, wait time.Duration) {
			if wait != 10*time.Millisecond<<(attempt-1) || err == nil {
				t.Errorf("OnRetry(%d, %v, %v): want the failed attempt's error and its wait", attempt, err, wait)
			}
			noted = append(noted, attempt)
		},
		Retries: 2,
		Backoff: Exponential(10 * time.Millisecond),
		Sleep: func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		},
	}
	tests := []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{"success", nil, 1, false},
		{"transient then success", []error{Transient(boom)}, 2, false},
		{"transient twice then success", []error{Transient(boom), Transient(boom)}, 3, false},
		{"transient exhausts retries", []error{Transient(boom), Transient(boom), Transient(boom)}, 3, true},
		{"plain not retried", []error{boom}, 1, true},
		{"permanent not retried", []error{Permanent(boom)}, 1, true},
		{"panic not retried", []error{&PanicError{Value: 1}}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slept, noted = nil, nil
			mw, err := Retry[string](policy)
			if err != nil {
				t.Fatal(err)
			}
			c := &counter{errs: tt.errs}
			err = mw(c).Handle(context.Background(), "r")
			if c.calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Fatalf("calls %d err %v; want calls %d err %v", c.calls, err, tt.wantCalls, tt.wantErr)
			}
			if len(slept) != c.calls-1 {
				t.Fatalf("slept %d times for %d calls", len(slept), c.calls)
			}
			if want := []int{1, 2}[:c.calls-1]; !slices.Equal(noted, want) {
				t.Fatalf("OnRetry saw attempts %v, want %v", noted, want)
			}
		})
	}
	if _, err := Retry[string](RetryPolicy{Retries: -1}); err == nil {
		t.Fatal("negative retries must be rejected")
	}
}

func TestRetryNeverWaitsPastDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	mw, _ := Retry[string](RetryPolicy{Retries: 5, Backoff: Exponential(time.Second)})
	c := &counter{errs: []error{Transient(errors.New("busy"))}}
	start := time.Now()
	err := mw(c).Handle(ctx, "r")
	if c.calls != 1 || err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("calls %d err %v: want one call and an error naming the deadline", c.calls, err)
	}
	if time.Since(start) > 40*time.Millisecond {
		t.Fatalf("waited %v although the wait would pass the deadline", time.Since(start))
	}
}

func TestRetrySleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	mw, _ := Retry[string](RetryPolicy{Retries: 1, Backoff: Exponential(time.Hour)})
	c := &counter{errs: []error{Transient(errors.New("busy"))}}
	cancel()
	if err := mw(c).Handle(ctx, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled in %v", err)
	}
}
