package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/redisstore"
)

// A store on a Redis (or Valkey) server, used by Do; with package handlers,
// pass it to handlers.WithIdempotency as any store. REDIS_ADDR is where the
// function finds its server (e.g. an ElastiCache endpoint).
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.WithPrefix("orders:"))
	if err != nil {
		log.Fatal(err)
	}
	receipt, err := idempotency.Do(ctx, store, "order-42", func(context.Context) ([]byte, error) {
		return []byte("receipt-1"), nil // the side effect, run at most once
	})
	fmt.Println(string(receipt), err)
}
