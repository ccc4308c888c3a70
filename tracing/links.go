package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/handlers"
)

// AttrLinkSource says, on a link, where the producer's context was read:
// "AWSTraceHeader", "message-attributes", "sns-message-attributes",
// "kafka-headers" or "carrier" (WithCarrier).
const AttrLinkSource = attribute.Key("sluice.link.source")

// links returns the links of record r to its producers' span contexts:
// each distinct valid context the record carries.
func (t *Tracer) links(r handlers.TraceRecord) []trace.Link {
	var links []trace.Link
	add := func(sc trace.SpanContext, from string) {
		if !sc.IsValid() {
			return
		}
		for _, l := range links {
			if l.SpanContext.Equal(sc) {
				return
			}
		}
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{AttrLinkSource.String(from)}})
	}
	switch {
	case r.SQS != nil:
		m := r.SQS
		if h := m.Attributes["AWSTraceHeader"]; h != "" {
			add(xraySpanContext(h), "AWSTraceHeader")
		}
		if len(m.MessageAttributes) > 0 {
			add(t.extract(sqsAttributes(m.MessageAttributes)), "message-attributes")
		}
		if attrs := snsAttributes(m.Body); attrs != nil {
			add(t.extract(attrs), "sns-message-attributes")
			if h := attrs.Get("AWSTraceHeader"); h != "" {
				add(xraySpanContext(h), "sns-message-attributes")
			}
		}
	case r.Kafka != nil:
		if len(r.Kafka.Headers) > 0 {
			add(t.extract(kafkaHeaders(r.Kafka.Headers)), "kafka-headers")
		}
	}
	if t.carrier != nil {
		if c := t.carrier(r); c != nil {
			add(t.extract(c), "carrier")
		}
	}
	return links
}

func (t *Tracer) extract(c propagation.TextMapCarrier) trace.SpanContext {
	return trace.SpanContextFromContext(t.prop.Extract(context.Background(), c))
}

// xraySpanContext reads an X-Ray trace header (SQS's AWSTraceHeader).
func xraySpanContext(h string) trace.SpanContext {
	return trace.SpanContextFromContext(xray.Propagator{}.Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": h}))
}

// sqsAttributes is an SQS message's attributes as a carrier (string
// attributes only; a carrier is read, never written, here).
type sqsAttributes map[string]events.SQSMessageAttribute

func (a sqsAttributes) Get(key string) string {
	if v, ok := a[key]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	return ""
}
func (a sqsAttributes) Set(string, string) {}
func (a sqsAttributes) Keys() []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	return keys
}

// snsAttributes returns the message attributes of an SNS notification
// carried in an SQS message's body (raw message delivery off), or nil when
// the body is not one or has none. (With raw message delivery on, SNS
// turns them into the SQS message's own attributes.)
func snsAttributes(body string) propagation.MapCarrier {
	if !strings.HasPrefix(strings.TrimSpace(body), "{") || !strings.Contains(body, `"MessageAttributes"`) || !strings.Contains(body, `"TopicArn"`) {
		return nil
	}
	var n struct {
		Type              string
		TopicArn          string
		MessageAttributes map[string]struct{ Type, Value string }
	}
	if json.Unmarshal([]byte(body), &n) != nil || n.TopicArn == "" || len(n.MessageAttributes) == 0 {
		return nil
	}
	c := make(propagation.MapCarrier, len(n.MessageAttributes))
	for k, v := range n.MessageAttributes {
		if v.Type == "String" {
			c[k] = v.Value
		}
	}
	return c
}

// kafkaHeaders is a Kafka record's headers, as Lambda delivers them, as a
// carrier: a header's bytes are its value.
type kafkaHeaders []map[string]events.JSONNumberBytes

func (h kafkaHeaders) Get(key string) string {
	for _, m := range h {
		if v, ok := m[key]; ok {
			return string(v)
		}
	}
	return ""
}
func (h kafkaHeaders) Set(string, string) {}
func (h kafkaHeaders) Keys() []string {
	var keys []string
	for _, m := range h {
		for k := range m {
			keys = append(keys, k)
		}
	}
	return keys
}

// JSONCarrier is a WithCarrier for records whose payload is a JSON object
// that holds the producer's context: the object at path (a field name per
// level; none for the payload's top level) is read as a carrier, each of
// its string fields a key ("traceparent", "tracestate"). It reads a
// Kinesis record's data (a KPL user record's own) and an SQS message's
// body.
//
//	tracing.WithCarrier(tracing.JSONCarrier("meta", "trace"))
//	// {"order": 7, "meta": {"trace": {"traceparent": "00-...-01"}}}
func JSONCarrier(path ...string) func(handlers.TraceRecord) propagation.TextMapCarrier {
	return func(r handlers.TraceRecord) propagation.TextMapCarrier {
		var data []byte
		switch {
		case r.Kinesis != nil:
			data = r.Kinesis.Kinesis.Data
		case r.SQS != nil:
			data = []byte(r.SQS.Body)
		default:
			return nil
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || data[0] != '{' {
			return nil
		}
		for _, field := range path {
			var obj map[string]json.RawMessage
			if json.Unmarshal(data, &obj) != nil {
				return nil
			}
			data = obj[field]
			if data == nil {
				return nil
			}
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return nil
		}
		c := propagation.MapCarrier{}
		for k, v := range obj {
			var s string
			if json.Unmarshal(v, &s) == nil {
				c[k] = s
			}
		}
		return c
	}
}

// AttributeCarrier is a WithCarrier for DynamoDB Streams records whose
// item holds the producer's context: the new image (the old one for a
// REMOVE) is read as a carrier. With no name, the item's own string
// attributes are the keys ("traceparent", "tracestate" attributes on the
// item); with a name, the attributes of the item's map attribute of that
// name are.
//
//	tracing.WithCarrier(tracing.AttributeCarrier("trace"))
//	// item: {"pk": {"S": "order#7"}, "trace": {"M": {"traceparent": {"S": "00-...-01"}}}}
func AttributeCarrier(name string) func(handlers.TraceRecord) propagation.TextMapCarrier {
	return func(r handlers.TraceRecord) propagation.TextMapCarrier {
		if r.DynamoDB == nil {
			return nil
		}
		img := r.Image(false)
		if img == nil {
			img = r.Image(true)
		}
		if name != "" {
			v, ok := img[name]
			if !ok || v.DataType() != events.DataTypeMap {
				return nil
			}
			img = v.Map()
		}
		c := propagation.MapCarrier{}
		for k, v := range img {
			if v.DataType() == events.DataTypeString {
				c[k] = v.String()
			}
		}
		return c
	}
}

// destination returns the queue, stream, table or topic a record came
// from, and its shard when the source has shards.
func destination(r handlers.TraceRecord) (name, partition string) {
	switch {
	case r.SQS != nil:
		arn := r.SQS.EventSourceARN
		return arn[strings.LastIndexByte(arn, ':')+1:], ""
	case r.Kinesis != nil:
		// arn:aws:kinesis:REGION:ACCOUNT:stream/NAME
		arn := r.Kinesis.EventSourceArn
		_, name, _ = strings.Cut(arn, ":stream/")
		shard, _, _ := strings.Cut(r.Kinesis.EventID, ":")
		return name, shard
	case r.DynamoDB != nil:
		// arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL
		_, rest, _ := strings.Cut(r.DynamoDB.EventSourceArn, ":table/")
		name, _, _ = strings.Cut(rest, "/")
		return name, ""
	case r.Kafka != nil:
		return r.Kafka.Topic, ""
	}
	return "", ""
}
