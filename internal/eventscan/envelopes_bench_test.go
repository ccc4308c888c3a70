package eventscan

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

const benchOrderJSON = `{"orderId":"ord-s-00000001","customerId":"cust-012345","amount":12.5,"currency":"EUR","items":[{"sku":"SKU-000001","qty":1,"price":1},{"sku":"SKU-000002","qty":2,"price":2},{"sku":"SKU-000003","qty":3,"price":3}],"createdAt":"2025-11-03T09:30:00.000Z"}`

// The readers beside encoding/json into the same fields, on one envelope of an order.
func BenchmarkReadSNS(b *testing.B) {
	in := []byte(awsevents.SNSNotification("00000001-d533-4a47-aef9-fcf5cf758c76", benchOrderJSON))
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeSNS(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := refSNS(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadEventBridge(b *testing.B) {
	in := []byte(awsevents.EventBridgeEvent("00000001-b491-4cf7-a9f1-bf3703467718", benchOrderJSON))
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeEventBridge(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ref", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e EventBridge
			if err := json.Unmarshal(in, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadSNSPair alternates the reader and encoding/json
// in each iteration and reports their ratio (reader-x).
func BenchmarkReadSNSPair(b *testing.B) {
	in := []byte(awsevents.SNSNotification("00000001-d533-4a47-aef9-fcf5cf758c76", benchOrderJSON))
	b.ReportAllocs()
	var tr, tg time.Duration
	for b.Loop() {
		t := time.Now()
		for range 100 {
			DecodeSNS(in)
		}
		t2 := time.Now()
		for range 100 {
			refSNS(in)
		}
		tr += t2.Sub(t)
		tg += time.Since(t2)
	}
	b.ReportMetric(float64(tr)/float64(tg), "reader-x")
}

// BenchmarkReadEventBridgePair is BenchmarkReadSNSPair for EventBridge
// (the detail kept raw by both).
func BenchmarkReadEventBridgePair(b *testing.B) {
	in := []byte(awsevents.EventBridgeEvent("00000001-b491-4cf7-a9f1-bf3703467718", benchOrderJSON))
	b.ReportAllocs()
	var tr, tg time.Duration
	for b.Loop() {
		t := time.Now()
		for range 100 {
			DecodeEventBridge(in)
		}
		t2 := time.Now()
		for range 100 {
			refEventBridge(in)
		}
		tr += t2.Sub(t)
		tg += time.Since(t2)
	}
	b.ReportMetric(float64(tr)/float64(tg), "reader-x")
}
