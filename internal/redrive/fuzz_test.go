package redrive

import (
	"bytes"
	"testing"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/invocation"
)

// FuzzEnvelopeEvent reads a line as an envelope and rebuilds its event:
// either an error, or an event the mapping's parser accepts, with one
// record whose identifier is the envelope's and whose bytes are the
// envelope's record.
func FuzzEnvelopeEvent(f *testing.F) {
	add := func(payload []byte) {
		for _, e := range envelopes(f, payload) {
			b, err := e.Marshal()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	add(marshal(f, kinesisEvent(2, func(i int) string { return `{"id":"x"}` })))
	add(marshal(f, sqsEvent(2, func(i int) string { return "body" })))
	kb := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1"}
	kb.Add("t", 2, []byte("k"), []byte("v"))
	add(marshal(f, kb.Event()))
	ddb := &sevents.DynamoDBBuilder{}
	if err := ddb.Insert(map[string]any{"pk": "a"}, map[string]any{"pk": "a"}); err != nil {
		f.Fatal(err)
	}
	add(marshal(f, ddb.Event()))
	f.Add([]byte(`{"version":1,"source":"sqs","recordId":"a","record":{"messageId":"a"}}`))
	f.Add([]byte(`{"version":1,"source":"kafka","recordId":"t-0@1","record":{"topic":"t","partition":0,"offset":1}}`))
	f.Add([]byte(`{"version":1,"source":"kinesis","recordId":"1","truncated":{"originalBytes":9},"record":"{\"a"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := dlq.Unmarshal(line)
		if err != nil {
			return
		}
		payload, err := Event([]*dlq.Envelope{e})
		if err != nil {
			return
		}
		ev, err := invocation.ParseEvent(payload)
		if err != nil {
			t.Fatalf("Event built %s, which does not parse: %v", payload, err)
		}
		if items := ev.Items(); len(items) != 1 || items[0] != e.RecordID {
			t.Fatalf("items %q, want [%q]", items, e.RecordID)
		}
		if !bytes.Contains(payload, bytes.TrimSpace(e.Record)) {
			t.Fatalf("the event %s does not hold the record %s", payload, e.Record)
		}
		if e.Truncated != nil {
			t.Fatal("a truncated record was rebuilt")
		}
	})
}
