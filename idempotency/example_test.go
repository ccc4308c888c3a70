package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/idempotency"
)

func ExampleDo() {
	ctx := context.Background()
	store := idempotency.NewMemoryStore()
	charge := func(context.Context) ([]byte, error) {
		fmt.Println("charging order-42")
		return []byte("receipt-1"), nil
	}
	for range 2 { // a redelivery: the second call returns the stored receipt
		receipt, err := idempotency.Do(ctx, store, "orders/order-42", charge)
		fmt.Println(string(receipt), err)
	}

	// A failure gives the claim back, so the retry runs at once.
	failing := func(context.Context) ([]byte, error) { return nil, errors.New("card declined") }
	_, err := idempotency.Do(ctx, store, "orders/order-43", failing)
	fmt.Println(err)
	receipt, err := idempotency.Do(ctx, store, "orders/order-43", charge)
	fmt.Println(string(receipt), err)
	// Output:
	// charging order-42
	// receipt-1 <nil>
	// receipt-1 <nil>
	// card declined
	// charging order-42
	// receipt-1 <nil>
}
