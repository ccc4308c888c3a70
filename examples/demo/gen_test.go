package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	sevents "github.com/sluicehq/sluice/events"
)

var update = flag.Bool("update", false, "rewrite testdata/orders-*.json")

// samplePayloads are the demo's eight orders; the fifth is not JSON.
func samplePayloads() [][]byte {
	orders := []Order{
		{"ord-1001", "alice", 42.50, "EUR"},
		{"ord-1002", "bob", 19.99, "USD"},
		{"ord-1003", "carol", 120.00, "EUR"},
		{"ord-1004", "alice", -5.00, "EUR"},
		{},
		{"ord-1006", "bob", 7.25, "GBP"},
		{"ord-1007", "mallory", 99.00, "USD"},
		{"ord-1008", "carol", 15.00, "EUR"},
	}
	out := make([][]byte, len(orders))
	for i, o := range orders {
		out[i], _ = json.Marshal(o)
	}
	out[4] = []byte(`{"orderId": "ord-1005", "amount": 12.`) // truncated
	return out
}

func sampleEvents(t *testing.T) map[string][]byte {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { at = at.Add(250 * time.Millisecond); return at }
	kin := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:eu-west-1:123456789012:stream/orders", Region: "eu-west-1", Clock: clock}
	sqs := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:eu-west-1:123456789012:orders", Region: "eu-west-1", Clock: clock}
	for i, p := range samplePayloads() {
		kin.Add([]string{"alice", "bob", "carol"}[i%3], p)
		sqs.Add(string(p))
	}
	out := map[string][]byte{}
	for name, ev := range map[string]any{"orders-kinesis.json": kin.Event(), "orders-sqs.json": sqs.Event()} {
		raw, err := sevents.MarshalEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		json.Indent(&pretty, raw, "", "  ")
		out[name] = append(pretty.Bytes(), '\n')
	}
	return out
}

// TestSamplesUpToDate keeps the embedded samples equal to what the builders
// make; run with -update to rewrite them.
func TestSamplesUpToDate(t *testing.T) {
	for name, want := range sampleEvents(t) {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s is out of date (%v): go test ./examples/demo -run TestSamplesUpToDate -update", path, err)
		}
	}
}
