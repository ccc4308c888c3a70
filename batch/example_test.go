package batch_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/batch"
)

// A record function says how its error should be treated by wrapping it:
// Permanent (bad input: never retried, quarantined when dead letters are
// on), Transient (retried in process), or neither (the record fails and
// Lambda's own retries apply). Any error type can declare its class with a
// Permanent() or Transient() method, without importing batch.
func ExampleClassify() {
	badAmount := batch.Permanent(errors.New("order o-7: amount must be positive"))
	throttled := batch.Transient(errors.New("payments API: 429 Too Many Requests"))
	plain := errors.New("payments API: connection reset")

	for _, err := range []error{badAmount, throttled, plain, fmt.Errorf("charge: %w", badAmount), nil} {
		fmt.Println(batch.Classify(err))
	}
	// Output:
	// permanent
	// transient
	// plain
	// permanent
	// none
}

// Retry runs a record again while it fails transiently, waiting out the
// policy's backoff, but never past the context's deadline; the handlers
// install it for you (handlers.WithRetry). Here the payment API throttles
// twice, then accepts.
func ExampleRetry() {
	retry, err := batch.Retry[string](batch.RetryPolicy{
		Retries: 3,
		Backoff: batch.Exponential(time.Millisecond),
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d failed (%v), retrying after %v\n", attempt, err, wait)
		},
	})
	if err != nil {
		panic(err)
	}
	calls := 0
	h := retry(batch.HandlerFunc[string](func(ctx context.Context, payment string) error {
		calls++
		if calls < 3 {
			return batch.Transient(errors.New("throttled"))
		}
		fmt.Println("charged", payment)
		return nil
	}))
	fmt.Println(h.Handle(context.Background(), "pay-001"))
	// Output:
	// attempt 1 failed (throttled), retrying after 1ms
	// attempt 2 failed (throttled), retrying after 2ms
	// charged pay-001
	// <nil>
}
