package batch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff gives the wait before retry number n (1 for the first retry).
type Backoff interface {
	Delay(n int) time.Duration
}

// BackoffFunc adapts a function to a Backoff.
type BackoffFunc func(n int) time.Duration

// Delay calls f(n).
func (f BackoffFunc) Delay(n int) time.Duration { return f(n) }

// Exponential returns a backoff of base, 2*base, 4*base, ... for retries 1, 2, 3, ...
func Exponential(base time.Duration) Backoff {
	return BackoffFunc(func(n int) time.Duration {
		if n < 1 {
			n = 1
		}
		if n > 62 {
			n = 62
		}
		d := base << (n - 1)
		if d <= 0 || d>>(n-1) != base { // overflow
			return time.Duration(1<<63 - 1)
		}
		return d
	})
}

// Capped limits the delays of b to at most max.
func Capped(b Backoff, max time.Duration) Backoff {
	return BackoffFunc(func(n int) time.Duration {
		return min(b.Delay(n), max)
	})
}

// FullJitter picks each delay uniformly in [0, d] where d is b's delay
// ("full jitter", which spreads retries of many records apart). rnd returns a
// number in [0, 1); nil means math/rand/v2's Float64.
func FullJitter(b Backoff, rnd func() float64) Backoff {
	if rnd == nil {
		rnd = rand.Float64
	}
	return BackoffFunc(func(n int) time.Duration {
		return time.Duration(rnd() * float64(b.Delay(n)+1))
	})
}

// RetryPolicy configures in-process retries of transient errors.
type RetryPolicy struct {
	// Retries is how many times a transient failure is retried (not counting
	// the first attempt). 0 disables retries.
	Retries int
	// Backoff gives the wait before each retry. Nil means the default:
	// full jitter over exponential from 50 ms, capped at 2 s.
	Backoff Backoff
	// Sleep waits for d or until ctx is done. Nil means a timer select.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if set, is called before the wait of each retry, with the
	// number of the attempt that failed (1 for the first), its error and the
	// wait, for logs and metrics. The handlers in package handlers already
	// count and log every retry; OnRetry is for what they do not do.
	OnRetry func(ctx context.Context, attempt int, err error, wait time.Duration)
}

// DefaultRetryPolicy retries a transient error twice with full-jitter
// exponential backoff from 50 ms capped at 2 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Retries: 2}
}

func (p RetryPolicy) validate() error {
	if p.Retries < 0 {
		return fmt.Errorf("batch: retry policy: Retries is %d, must be >= 0", p.Retries)
	}
	return nil
}

// Retry returns a middleware that retries a record whose handler returns a
// transient error (see Transient), up to p.Retries times. A retry is made only
// if its wait ends before ctx's deadline; otherwise, and when the retries are
// used up, the last error is returned. Permanent and plain errors, and panics,
// are returned at once.
func Retry[R any](p RetryPolicy) (Middleware[R], error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Backoff == nil {
		p.Backoff = FullJitter(Capped(Exponential(50*time.Millisecond), 2*time.Second), nil)
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	return func(next Handler[R]) Handler[R] {
		if p.Retries == 0 {
			return next
		}
		if f, ok := next.(HandlerFunc[R]); ok {
			return &retrier[R]{call: f, p: p}
		}
		return &retrier[R]{call: next.Handle, p: p}
	}, nil
}

type retrier[R any] struct {
	call func(context.Context, R) error
	p    RetryPolicy
}

func (h *retrier[R]) Handle(ctx context.Context, r R) error {
	err := h.call(ctx, r)
	for n := 1; n <= h.p.Retries && err != nil && Classify(err) == ClassTransient; n++ {
		d := h.p.Backoff.Delay(n)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
			return fmt.Errorf("%w (not retried: the wait of %v would pass the deadline)", err, d)
		}
		if h.p.OnRetry != nil {
			h.p.OnRetry(ctx, n, err, d)
		}
		if serr := h.p.Sleep(ctx, d); serr != nil {
			return errors.Join(err, serr)
		}
		err = h.call(ctx, r)
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
