package handlers

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestKeptValuesSurviveBufferReuse: aws-lambda-go reuses its payload buffer
// for the next invocation, and the default codec's strings share memory with
// the payload they were decoded from. Values a function keeps must not
// change when the runtime overwrites its buffer or Sluice decodes the next
// batch.
func TestKeptValuesSurviveBufferReuse(t *testing.T) {
	var kept []benchOrder
	var keptRaw []string
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[benchOrder]) error {
		kept = append(kept, r.Value)
		keptRaw = append(keptRaw, r.SequenceNumber()+r.PartitionKey())
		return nil
	}, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	buf := kinesisFixture(t, 50)
	if _, err := h.Invoke(context.Background(), buf); err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(kept))
	for i, o := range kept {
		want[i] = fmt.Sprintf("%s %s %s %s %v", o.OrderID, o.CustomerID, o.Currency, o.Items[0].SKU, keptRaw[i])
	}
	// The runtime reuses the buffer for the next event.
	for i := range buf {
		buf[i] = 'x'
	}
	next := bytes.ReplaceAll(kinesisFixture(t, 50), []byte("ord-k-"), []byte("ORD-K-"))
	if _, err := h.Invoke(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	for i, o := range kept[:len(want)] {
		if got := fmt.Sprintf("%s %s %s %s %v", o.OrderID, o.CustomerID, o.Currency, o.Items[0].SKU, keptRaw[i]); got != want[i] {
			t.Fatalf("record %d changed after the buffer was reused:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

// The same for SQS, whose envelope goes through a scanner of its own: the message
// fields a function keeps must not share the runtime's buffer.
func TestKeptSQSFieldsSurviveBufferReuse(t *testing.T) {
	var kept []string
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[benchOrder]) error {
		kept = append(kept, r.Raw.MessageId+"|"+r.Raw.Body+"|"+r.Raw.Attributes["SentTimestamp"]+"|"+r.Value.OrderID)
		return nil
	}, opts(WithConcurrency(1))...)
	if err != nil {
		t.Fatal(err)
	}
	buf := sqsFixture(t, 20)
	if _, err := h.Invoke(context.Background(), buf); err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(kept))
	for i, k := range kept {
		want[i] = strings.Clone(k)
	}
	for i := range buf {
		buf[i] = 'x'
	}
	for i, k := range kept {
		if k != want[i] || !bytes.Contains([]byte(k), []byte("ord-s-")) {
			t.Fatalf("message %d changed after the buffer was reused: %q", i, k)
		}
	}
}

// TestDefaultCodecLeavesPayloadAlone: the default codec must never write to
// the payload it decodes (r.Data() and an SQS body stay as delivered), even
// when strings need unescaping.
func TestDefaultCodecLeavesPayloadAlone(t *testing.T) {
	payload := []byte(`{"orderId":"a\"b\\c\u00e9\n","items":[{"sku":"x\ty"}]}`)
	orig := string(payload)
	var o benchOrder
	if err := decodeValue(JSON(), payload, &o); err != nil {
		t.Fatal(err)
	}
	if string(payload) != orig || o.OrderID != "a\"b\\cé\n" || o.Items[0].SKU != "x\ty" {
		t.Fatalf("payload %q, decoded %+v", payload, o)
	}
	body := strings.Clone(orig)
	o = benchOrder{}
	if err := decodeStringValue(JSON(), body, &o); err != nil || body != orig || o.OrderID != "a\"b\\cé\n" {
		t.Fatalf("body %q, decoded %+v, %v", body, o, err)
	}
}
