package tracing_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/trace"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
	"github.com/sluicehq/sluice/tracing"
)

type order struct {
	ID string `json:"id"`
}

// seen records the span context each record's function ran under.
type seen struct {
	mu  sync.Mutex
	ctx map[string]trace.SpanContext
}

func (s *seen) note(ctx context.Context, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		s.ctx = map[string]trace.SpanContext{}
	}
	s.ctx[id] = trace.SpanContextFromContext(ctx)
}

// ranUnder checks that each record's function ran under its record span.
func (s *seen) ranUnder(t *testing.T, set spanSet) {
	t.Helper()
	for id, sc := range s.ctx {
		rs, ok := set.records[id]
		if !ok {
			t.Errorf("record %s ran, but has no span", id)
			continue
		}
		if sc.SpanID() != rs.SpanContext().SpanID() {
			t.Errorf("record %s ran under span %s, not its own %s", id, sc.SpanID(), rs.SpanContext().SpanID())
		}
	}
}

// An SQS message links to the producer in its AWSTraceHeader system
// attribute and in its traceparent/tracestate message attributes; an SNS
// notification in the body to its MessageAttributes' traceparent. The
// spans follow the conventions for SQS under Lambda.
func TestSQSLinks(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	var s seen
	h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[json.RawMessage]) error {
		s.note(ctx, m.MessageID())
		return nil
	}, opts(r, logger)...)

	viaXRay, viaAttrs, viaSNS := producer(t, "send orders"), producer(t, "send orders"), producer(t, "publish topic")
	viaAttrs = withState(t, viaAttrs, "vendor=abc")
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	b.Add(`{"id":"1"}`).Add(`{"id":"2"}`)
	// A JSON body (the envelope-free default), and an SNS notification
	// whose MessageAttributes carry the publisher's context.
	tp := traceContext(viaSNS)["traceparent"]
	sns := strings.Replace(awsevents.SNSNotification("sns-1", `{"id":"3"}`), `"myKey1" : {"Type":"String","Value":"myValue1"}`,
		`"traceparent" : {"Type":"String","Value":"`+tp+`"}`, 1)
	b.Add(sns).Add(`{"id":"4"}`)
	ev := b.Event()
	ev.Records[0].Attributes["AWSTraceHeader"] = xrayHeader(viaXRay)
	c := traceContext(viaAttrs)
	for k, v := range c {
		ev.Records[1].MessageAttributes[k] = events.SQSMessageAttribute{StringValue: &v, DataType: "String"}
	}
	if _, err := invoke(t, lambdaCtx("req-1"), h, ev); err != nil {
		t.Fatal(err)
	}
	set := spansOf(t, r)
	if len(set.records) != 4 {
		t.Fatalf("%d record spans, want 4", len(set.records))
	}
	s.ranUnder(t, set)
	id := func(i int) string { return ev.Records[i].MessageId }
	linksTo(t, "AWSTraceHeader", set.records[id(0)], "AWSTraceHeader", viaXRay)
	linksTo(t, "message attributes", set.records[id(1)], "message-attributes", viaAttrs)
	linksTo(t, "SNS notification", set.records[id(2)], "sns-message-attributes", viaSNS)
	linksTo(t, "no context", set.records[id(3)], "")
	linksTo(t, "batch", set.batch, "", viaXRay, viaAttrs, viaSNS)

	// The conventions: names, kinds, attributes.
	inv := set.invocation
	if inv == nil {
		t.Fatal("no invocation span")
	}
	if set.batch.Parent().SpanID() != inv.SpanContext().SpanID() {
		t.Errorf("the batch span's parent is %s, not the invocation's", set.batch.Parent().SpanID())
	}
	for _, c := range []struct {
		span      string
		key, want string
	}{
		{"invocation", "faas.trigger", "pubsub"},
		{"invocation", "faas.invocation_id", "req-1"},
		{"invocation", "cloud.account.id", "123456789012"},
		{"invocation", "faas.coldstart", "true"},
		{"batch", "messaging.system", "aws_sqs"},
		{"batch", "messaging.operation.type", "process"},
		{"batch", "messaging.operation.name", "process"},
		{"batch", "messaging.destination.name", "orders"},
		{"batch", "messaging.batch.message_count", "4"},
		{"batch", "faas.trigger", "pubsub"},
		{"batch", "sluice.succeeded", "4"},
		{"record", "messaging.system", "aws_sqs"},
		{"record", "messaging.message.id", id(0)},
		{"record", "messaging.destination.name", "orders"},
		{"record", "sluice.outcome", "succeeded"},
		{"record", "sluice.attempts", "1"},
		{"record", "sluice.reported", "false"},
	} {
		var got string
		switch c.span {
		case "invocation":
			got = str(inv, c.key)
		case "batch":
			got = str(set.batch, c.key)
		default:
			got = str(set.records[id(0)], c.key)
		}
		if got != c.want {
			t.Errorf("%s span: %s = %q, want %q", c.span, c.key, got, c.want)
		}
	}
	if set.batch.Name() != "process orders" || set.records[id(0)].Name() != "process orders" {
		t.Errorf("span names %q, %q; want \"process orders\"", set.batch.Name(), set.records[id(0)].Name())
	}
	if set.batch.SpanKind() != trace.SpanKindConsumer || set.records[id(0)].SpanKind() != trace.SpanKindConsumer {
		t.Error("batch and record spans must be CONSUMER")
	}
}

// SNS and EventBridge envelopes in SQS: the typed envelope handlers link
// to the context SNS's message attributes and EventBridge's trace header
// (which EventBridge passes to SQS as AWSTraceHeader) carry.
func TestEnvelopesInSQS(t *testing.T) {
	t.Run("SNS", func(t *testing.T) {
		r := newRecorder(t)
		logger, _ := quiet()
		h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[handlers.SNSMessage[order]]) error { return nil }, opts(r, logger)...)
		pub := withState(t, producer(t, "publish orders-topic"), "k=v")
		c := traceContext(pub)
		body := strings.Replace(awsevents.SNSNotification("sns-1", `{"id":"1"}`), `"myKey2" : {"Type":"String","Value":"myValue2"}`,
			`"traceparent" : {"Type":"String","Value":"`+c["traceparent"]+`"}, "tracestate" : {"Type":"String","Value":"`+c["tracestate"]+`"}`, 1)
		b := &sevents.SQSBuilder{}
		ev := b.Add(body).Event()
		if _, err := invoke(t, lambdaCtx("r"), h, ev); err != nil {
			t.Fatal(err)
		}
		set := spansOf(t, r)
		linksTo(t, "SNS in SQS", set.records[ev.Records[0].MessageId], "sns-message-attributes", pub)
	})
	t.Run("EventBridge", func(t *testing.T) {
		r := newRecorder(t)
		logger, _ := quiet()
		h := handlers.MustSQS(func(ctx context.Context, m handlers.SQSRecord[handlers.EventBridgeEvent[order]]) error { return nil }, opts(r, logger)...)
		put := producer(t, "PutEvents")
		b := &sevents.SQSBuilder{}
		ev := b.Add(awsevents.EventBridgeEvent("eb-1", `{"id":"1"}`)).Event()
		ev.Records[0].Attributes["AWSTraceHeader"] = xrayHeader(put)
		if _, err := invoke(t, lambdaCtx("r"), h, ev); err != nil {
			t.Fatal(err)
		}
		set := spansOf(t, r)
		linksTo(t, "EventBridge in SQS", set.records[ev.Records[0].MessageId], "AWSTraceHeader", put)
	})
}

// Kafka records link to their traceparent/tracestate headers, whose values
// Lambda sends as arrays of signed bytes.
func TestKafkaHeaders(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	var s seen
	h := handlers.MustKafka(func(ctx context.Context, k handlers.KafkaRecord[order]) error {
		s.note(ctx, k.TopicPartition()+"@"+itoa(k.Offset()))
		return nil
	}, opts(r, logger)...)
	p1 := withState(t, producer(t, "send payments"), "congo=t61rcWkgMzE")
	c := traceContext(p1)
	b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1"}
	b.Add("payments", 0, []byte("k1"), []byte(`{"id":"1"}`),
		sevents.KafkaHeader{Key: "binary", Value: []byte{0xff, 0x80, 0x01}},
		sevents.KafkaHeader{Key: "traceparent", Value: []byte(c["traceparent"])},
		sevents.KafkaHeader{Key: "tracestate", Value: []byte(c["tracestate"])})
	b.Add("payments", 0, nil, []byte(`{"id":"2"}`))
	payload, err := json.Marshal(b.Event())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `[-1,-128,1]`) {
		t.Fatalf("the event does not carry header bytes as signed numbers: %s", payload)
	}
	if _, err := h.Invoke(lambdaCtx("r"), payload); err != nil {
		t.Fatal(err)
	}
	set := spansOf(t, r)
	s.ranUnder(t, set)
	linksTo(t, "record with headers", set.records["payments-0@0"], "kafka-headers", p1)
	linksTo(t, "record without headers", set.records["payments-0@1"], "")
	rec := set.records["payments-0@0"]
	for key, want := range map[string]string{"messaging.system": "kafka", "messaging.destination.name": "payments",
		"messaging.destination.partition.id": "0", "messaging.kafka.offset": "0", "sluice.key": "payments-0"} {
		if got := str(rec, key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if set.batch.Name() != "process payments" {
		t.Errorf("batch span %q", set.batch.Name())
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Kinesis records carry no headers: WithCarrier(JSONCarrier) names the
// JSON object in the payload that holds the context. A KPL aggregate's
// user records are spans of their own, named by
// "<sequenceNumber>:<subSequenceNumber>", each with its own link.
func TestKinesisCarrier(t *testing.T) {
	r := newRecorder(t)
	logger, _ := quiet()
	var s seen
	h := handlers.MustKinesis(func(ctx context.Context, k handlers.KinesisRecord[order]) error {
		id := k.SequenceNumber()
		if k.Aggregated() {
			id = kpl.SubSequenceKey(id, k.SubSequenceNumber())
		}
		s.note(ctx, id)
		return nil
	}, opts(r, logger, tracing.WithCarrier(tracing.JSONCarrier("meta", "trace")))...)
	p1, u0, u1 := producer(t, "put 1"), producer(t, "put user 0"), producer(t, "put user 1")
	payload := func(id string, sc trace.SpanContext) []byte {
		m, _ := json.Marshal(map[string]any{"id": id, "meta": map[string]any{"trace": traceContext(sc)}})
		return m
	}
	b := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders"}
	b.Add("pk-1", payload("1", p1))
	b.AddAggregated(kpl.Record{PartitionKey: "pk-2", Data: payload("2", u0)}, kpl.Record{PartitionKey: "pk-3", Data: payload("3", u1)})
	b.Add("pk-4", []byte(`{"id":"4","meta":{"trace":"not an object"}}`))
	ev := b.Event()
	if _, err := invoke(t, lambdaCtx("r"), h, ev); err != nil {
		t.Fatal(err)
	}
	set := spansOf(t, r)
	if len(set.records) != 4 {
		t.Fatalf("%d record spans, want 4 (one per user record): %v", len(set.records), set.records)
	}
	s.ranUnder(t, set)
	seq := func(i int) string { return ev.Records[i].Kinesis.SequenceNumber }
	linksTo(t, "plain record", set.records[seq(0)], "carrier", p1)
	linksTo(t, "user record 0", set.records[seq(1)+":0"], "carrier", u0)
	linksTo(t, "user record 1", set.records[seq(1)+":1"], "carrier", u1)
	linksTo(t, "no context", set.records[seq(2)], "")
	for key, want := range map[string]string{"messaging.system": "aws_kinesis", "messaging.destination.name": "orders",
		"messaging.destination.partition.id": "shardId-000000000000", "sluice.key": "pk-3"} {
		if got := str(set.records[seq(1)+":1"], key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got := str(set.batch, "messaging.batch.message_count"); got != "4" {
		t.Errorf("batch message count %s, want 4 (user records)", got)
	}
}

// DynamoDB Streams records: WithCarrier(AttributeCarrier) reads the
// item's attributes, in the new image, or the old one for a REMOVE; with
// and without WithRawImages.
func TestDynamoDBCarrier(t *testing.T) {
	for _, raw := range []bool{false, true} {
		name := "fast path"
		if raw {
			name = "raw images"
		}
		t.Run(name, func(t *testing.T) {
			r := newRecorder(t)
			logger, _ := quiet()
			o := opts(r, logger, tracing.WithCarrier(tracing.AttributeCarrier("")))
			if raw {
				o = append(o, handlers.WithRawImages())
			}
			h := handlers.MustDynamoDB(func(ctx context.Context, d handlers.DynamoDBRecord[map[string]any]) error { return nil }, o...)
			ins, rem := producer(t, "PutItem"), producer(t, "DeleteItem")
			b := &sevents.DynamoDBBuilder{}
			keys := map[string]any{"pk": "order#1"}
			if err := b.Insert(keys, map[string]any{"pk": "order#1", "traceparent": traceContext(ins)["traceparent"]}); err != nil {
				t.Fatal(err)
			}
			if err := b.Remove(keys, map[string]any{"pk": "order#1", "traceparent": traceContext(rem)["traceparent"]}); err != nil {
				t.Fatal(err)
			}
			if err := b.Insert(map[string]any{"pk": "order#2"}, map[string]any{"pk": "order#2"}); err != nil {
				t.Fatal(err)
			}
			ev := b.Event()
			if _, err := invoke(t, lambdaCtx("r"), h, ev); err != nil {
				t.Fatal(err)
			}
			set := spansOf(t, r)
			seq := func(i int) string { return ev.Records[i].Change.SequenceNumber }
			linksTo(t, "INSERT", set.records[seq(0)], "carrier", ins)
			linksTo(t, "REMOVE", set.records[seq(1)], "carrier", rem)
			linksTo(t, "no context", set.records[seq(2)], "")
			if got := str(set.batch, "faas.trigger"); got != "datasource" {
				t.Errorf("faas.trigger %q, want datasource", got)
			}
			if got := str(set.batch, "messaging.system"); got != "aws_dynamodb_streams" {
				t.Errorf("messaging.system %q", got)
			}
		})
	}
	t.Run("map attribute", func(t *testing.T) {
		r := newRecorder(t)
		logger, _ := quiet()
		h := handlers.MustDynamoDB(func(ctx context.Context, d handlers.DynamoDBRecord[map[string]any]) error { return nil },
			opts(r, logger, tracing.WithCarrier(tracing.AttributeCarrier("trace")))...)
		p := producer(t, "PutItem")
		b := &sevents.DynamoDBBuilder{}
		if err := b.Insert(map[string]any{"pk": "a"}, map[string]any{"pk": "a", "trace": map[string]any(traceContextAny(p))}); err != nil {
			t.Fatal(err)
		}
		ev := b.Event()
		if _, err := invoke(t, lambdaCtx("r"), h, ev); err != nil {
			t.Fatal(err)
		}
		linksTo(t, "map attribute", spansOf(t, r).records[ev.Records[0].Change.SequenceNumber], "carrier", p)
	})
}

func traceContextAny(sc trace.SpanContext) map[string]any {
	out := map[string]any{}
	for k, v := range traceContext(sc) {
		out[k] = v
	}
	return out
}
