package events

import (
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
)

// MarshalEvent encodes an event exactly as Lambda delivers it. It differs
// from encoding/json on aws-lambda-go's types where those write fields that
// Lambda leaves out: an SQS message's empty md5OfMessageAttributes, and a
// self-managed Kafka event's empty eventSourceArn.
func MarshalEvent(ev any) ([]byte, error) {
	switch ev := ev.(type) {
	case events.SQSEvent:
		return marshalSQS(&ev)
	case *events.SQSEvent:
		return marshalSQS(ev)
	case events.KafkaEvent:
		return marshalKafka(&ev)
	case *events.KafkaEvent:
		return marshalKafka(ev)
	}
	return json.Marshal(ev)
}

type sqsMessageOut struct {
	events.SQSMessage
	Md5OfMessageAttributes *string `json:"md5OfMessageAttributes,omitempty"`
}

// MarshalSQSMessage encodes one SQS message as it appears in a Lambda
// event's Records array.
func MarshalSQSMessage(m events.SQSMessage) ([]byte, error) {
	out := sqsMessageOut{SQSMessage: m}
	if out.MessageAttributes == nil {
		out.MessageAttributes = map[string]events.SQSMessageAttribute{} // Lambda always sends the object
	}
	if m.Md5OfMessageAttributes != "" {
		out.Md5OfMessageAttributes = &m.Md5OfMessageAttributes
	}
	return json.Marshal(out)
}

func marshalSQS(ev *events.SQSEvent) ([]byte, error) {
	out := struct {
		Records []sqsMessageOut `json:"Records"`
	}{Records: make([]sqsMessageOut, len(ev.Records))}
	for i, m := range ev.Records {
		out.Records[i].SQSMessage = m
		if m.MessageAttributes == nil {
			out.Records[i].MessageAttributes = map[string]events.SQSMessageAttribute{} // Lambda always sends the object
		}
		if m.Md5OfMessageAttributes != "" {
			out.Records[i].Md5OfMessageAttributes = &ev.Records[i].Md5OfMessageAttributes
		}
	}
	return json.Marshal(out)
}

func marshalKafka(ev *events.KafkaEvent) ([]byte, error) {
	out := struct {
		EventSource      string                          `json:"eventSource"`
		EventSourceARN   string                          `json:"eventSourceArn,omitempty"`
		Records          map[string][]events.KafkaRecord `json:"records"`
		BootstrapServers string                          `json:"bootstrapServers"`
	}{ev.EventSource, ev.EventSourceARN, ev.Records, ev.BootstrapServers}
	return json.Marshal(out)
}
