package redrive

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
)

// envelopes makes the envelopes quarantine would write for every record of
// an event payload, as Lambda delivered it.
func envelopes(t testing.TB, payload []byte) []*dlq.Envelope {
	t.Helper()
	var env struct {
		Records        json.RawMessage              `json:"Records"`
		KafkaRecords   map[string][]json.RawMessage `json:"records"`
		EventSourceArn string                       `json:"eventSourceArn"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	base := dlq.Envelope{Version: dlq.Version, Attempts: 3, FirstFailure: now, LastFailure: now, Error: "boom", Class: "plain", Reason: "attempts"}
	var out []*dlq.Envelope
	if env.KafkaRecords != nil {
		for _, recs := range env.KafkaRecords {
			for _, raw := range recs {
				var r events.KafkaRecord
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatal(err)
				}
				e := base
				e.Source, e.SourceARN, e.Topic = sevents.SourceKafka, env.EventSourceArn, r.Topic
				p, o := r.Partition, r.Offset
				e.Partition, e.Offset = &p, &o
				e.RecordID = fmt.Sprintf("%s@%d", sevents.KafkaPartitionKey(r.Topic, r.Partition), r.Offset)
				e.EventID = fmt.Sprintf("%s-%d-%d", r.Topic, r.Partition, r.Offset)
				e.Record = raw
				out = append(out, &e)
			}
		}
		return out
	}
	var recs []json.RawMessage
	if err := json.Unmarshal(env.Records, &recs); err != nil {
		t.Fatal(err)
	}
	for _, raw := range recs {
		var r struct {
			EventSource    string `json:"eventSource"`
			EventSourceARN string `json:"eventSourceARN"`
			EventID        string `json:"eventID"`
			MessageID      string `json:"messageId"`
			Kinesis        *struct {
				SequenceNumber string `json:"sequenceNumber"`
				PartitionKey   string `json:"partitionKey"`
			} `json:"kinesis"`
			DynamoDB *struct {
				SequenceNumber string `json:"SequenceNumber"`
			} `json:"dynamodb"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		e := base
		e.SourceARN, e.Record = r.EventSourceARN, raw
		switch r.EventSource {
		case "aws:kinesis":
			e.Source, e.RecordID, e.EventID = sevents.SourceKinesis, r.Kinesis.SequenceNumber, r.EventID
			e.SequenceNumber, e.PartitionKey = r.Kinesis.SequenceNumber, r.Kinesis.PartitionKey
			e.Shard, _, _ = strings.Cut(r.EventID, ":")
		case "aws:dynamodb":
			e.Source, e.RecordID, e.EventID, e.SequenceNumber = sevents.SourceDynamoDB, r.DynamoDB.SequenceNumber, r.EventID, r.DynamoDB.SequenceNumber
		case "aws:sqs":
			e.Source, e.RecordID, e.EventID = sevents.SourceSQS, r.MessageID, r.MessageID
		default:
			t.Fatalf("eventSource %q", r.EventSource)
		}
		out = append(out, &e)
	}
	return out
}

// marshal encodes an event as Lambda sends it.
func marshal(t testing.TB, ev any) []byte {
	t.Helper()
	b, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lines encodes envelopes as JSON lines, through Marshal and Unmarshal.
func lines(t testing.TB, envs []*dlq.Envelope) string {
	t.Helper()
	var b strings.Builder
	for _, e := range envs {
		line, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func kinesisEvent(n int, data func(i int) string) events.KinesisEvent {
	b := &sevents.KinesisBuilder{}
	for i := range n {
		b.Add(fmt.Sprint("pk", i%3), []byte(data(i)))
	}
	return b.Event()
}

func sqsEvent(n int, body func(i int) string) events.SQSEvent {
	b := &sevents.SQSBuilder{}
	for i := range n {
		b.Add(body(i))
	}
	return b.Event()
}
