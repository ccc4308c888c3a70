package redisstore_test

import (
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/idempotency/redisstore"
)

// The Redis key that holds an idempotency key's record, with the default
// prefix and with one of the function's own. New does not contact the
// server, and Key is pure: this runs without one (the address is never
// dialled).
func ExampleStore_Key() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	for _, opts := range [][]redisstore.Option{nil, {redisstore.WithPrefix("orders:")}} {
		store, err := redisstore.New(client, opts...)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(store.Key("order-42"))
	}
	// Output:
	// idempotency:order-42
	// orders:order-42
}
