package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// A key longer than a store's limit (an S3 object key URL-encoded into a
// notification's key, say) is kept as its head and its SHA-256.
func ExampleStoredKey() {
	key := "orders#bucket/" + strings.Repeat("%E7%BA%A2", 300) + "@0055AED6DCD90281E5"
	stored := idempotency.StoredKey(key, 2048)
	fmt.Println(len(key), len(stored), strings.Contains(stored, idempotency.DigestMarker))
	fmt.Println(idempotency.StoredKey("orders#msg-1", 2048)) // one that fits is kept as it is
	// Output:
	// 2733 2048 true
	// orders#msg-1
}

// Positions compare as strings in the order of their numbers, however
// many digits they have: a Kinesis sequence number, with a KPL user
// record's sub-sequence number after it.
func ExamplePosition() {
	a, _ := idempotency.Position("9")
	b, _ := idempotency.Position("10")
	c, _ := idempotency.Position("49590338271490256608559692538361571095921575989136588898", "2")
	fmt.Println(a, b, a < b, b < c)
	// Output:
	// 0019 00210 true true
}
