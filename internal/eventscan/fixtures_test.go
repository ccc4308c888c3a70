package eventscan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	sevents "github.com/sluicehq/sluice/events"
)

// The seeds' events, in the shapes of the handlers' benchmark fixtures:
// n orders, built with the events package's builders as Lambda sends them.

type order struct {
	OrderID    string  `json:"orderId" dynamodbav:"orderId"`
	CustomerID string  `json:"customerId" dynamodbav:"customerId"`
	Amount     float64 `json:"amount" dynamodbav:"amount"`
	Currency   string  `json:"currency" dynamodbav:"currency"`
	Status     string  `json:"status,omitempty" dynamodbav:"status"`
	Version    int     `json:"version,omitempty" dynamodbav:"version"`
	CreatedAt  string  `json:"createdAt" dynamodbav:"createdAt"`
}

func orderOf(rnd *rand.Rand, kind string, i int) order {
	return order{OrderID: fmt.Sprintf("ord-%s-%08d", kind, i), CustomerID: fmt.Sprintf("cust-%06d", rnd.IntN(50000)),
		Amount: float64(rnd.IntN(100000)) / 100, Currency: "EUR", CreatedAt: "2025-11-03T09:30:00.000Z"}
}

func kinesisFixture(tb testing.TB, n int) []byte {
	tb.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 11, 3, 9, 30, 0, 0, time.UTC)
	at := base
	b := &sevents.KinesisBuilder{
		StreamARN:         "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
		ShardID:           "shardId-000000000003",
		InvokeIdentityARN: "arn:aws:iam::123456789012:role/orders-consumer",
		Clock:             func() time.Time { return at },
	}
	for i := range n {
		at = base.Add(time.Duration(i) * 3 * time.Millisecond)
		data, _ := json.Marshal(orderOf(rnd, "k", i))
		b.Add(fmt.Sprintf("pk-%03d", rnd.IntN(100)), data)
	}
	return marshal(tb, b.Event())
}

// kinesisTestEvent is an event of messages {"id":..,"action":..}.
func kinesisTestEvent(actions ...string) []byte {
	b := &sevents.KinesisBuilder{}
	for i, a := range actions {
		data, _ := json.Marshal(map[string]string{"id": fmt.Sprint(i), "action": a})
		b.Add(fmt.Sprintf("pk-%d", i%3), data)
	}
	raw, _ := json.Marshal(b.Event())
	return raw
}

func sqsFixture(tb testing.TB, n int) []byte {
	tb.Helper()
	rnd := rand.New(rand.NewPCG(3, 4))
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	for i := range n {
		body, _ := json.Marshal(orderOf(rnd, "s", i))
		b.Add(string(body))
	}
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func dynamodbFixture(tb testing.TB, n int) []byte {
	tb.Helper()
	rnd := rand.New(rand.NewPCG(5, 6))
	b := &sevents.DynamoDBBuilder{}
	for i := range n {
		o := orderOf(rnd, "d", i)
		o.Status, o.Version = "PLACED", 1
		nw := o
		nw.Status, nw.Version = "PAID", 2
		if err := b.Modify(map[string]string{"orderId": o.OrderID}, o, nw); err != nil {
			tb.Fatal(err)
		}
	}
	return marshal(tb, b.Event())
}

func kafkaFixture(tb testing.TB, n int) []byte {
	tb.Helper()
	rnd := rand.New(rand.NewPCG(7, 8))
	b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/orders/abc"}
	for i := range n {
		o := orderOf(rnd, "f", i)
		v, _ := json.Marshal(o)
		b.Add("orders", int64(i%4), []byte(o.CustomerID), v)
	}
	raw, err := sevents.MarshalEvent(b.Event())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

func marshal(tb testing.TB, v any) []byte {
	tb.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}
