package handlers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

func envelopeSeeds(f *testing.F) {
	for _, name := range []string{"sqs.json", "sqs-fifo.json", "dynamodb.json", "msk.json", "self-managed-kafka.json"} {
		b, err := os.ReadFile(filepath.Join("..", "events", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"Records":[{"messageId":"a\u00e9\ud83d\ude00","body":"{\"x\":\"\\u0041\"}","attributes":{"K":"v"}}]}`,
		"{\"Records\":[{\"messageId\":\"\xff\",\"body\":\"\xc3\x28\"}]}",
		`{"Records":[{"MessageId":"upper","MESSAGEID":"shout","messageId":"last"}]}`,
		`{"Records":[{"messageId":null,"attributes":null,"messageAttributes":{"a":{"stringValue":"s","binaryValue":"AQI=","dataType":"Binary"}}}]}`,
		`{"Records":[{"messageAttributes":{"a":{"binaryValue":"%%%"}}}]}`,
		`{"Records":[{"messageId":1}]}`, `{"Records":[{"attributes":{"a":1}}]}`, `{"Records":{}}`, `{"Records":null}`, `{}`, `null`, `[]`,
		`{"Records":[{"dynamodb":{"Keys":{"k":{"N":"1"}},"NewImage":{"l":{"L":[{"S":"a"},{"NULL":true},{"M":{"x":{"BOOL":true}}}]}},"ApproximateCreationDateTime":1.5e9}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"b":{"B":"AQI="},"bs":{"BS":["AQI="]},"ns":{"NS":["1"]},"ss":{"SS":["a"]}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"x":{"Q":"?"}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"x":{"S":"a","N":"1"}}}}]}`,
		`{"Records":[{"dynamodb":{"SequenceNumber":"1"}}]} trailing`,
		`{"records":{"t-0":[{"offset":1,"timestamp":1545084650987,"value":"e30=","headers":[{"h":[-1,127,-128]}]}]}}`,
		`{"records":{"t-0":[{"headers":[{"h":[128]}]}]}}`, `{"records":{"t-0":[{"timestamp":1.5}]}}`,
		`{"records":{"t-0":[{"headers":[{"h":null}]},{"offset":"1"}]}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzEnvelopeAgrees: where the plan decoder (internal/jsonplan) decodes
// an SQS, DynamoDB Streams or Kafka event by itself, encoding/json must
// decode it too, to the same value; and with its fallback it must give
// encoding/json's value and error-or-not on every input.
func FuzzEnvelopeAgrees(f *testing.F) {
	envelopeSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		check := func(a, b any) {
			va := reflect.ValueOf(a)
			p := jsonplan.For(va.Type().Elem())
			errB := json.Unmarshal(in, b)
			if p.Decode(append([]byte(nil), in...), va.UnsafePointer(), false) {
				if errB != nil {
					t.Fatalf("the plan accepts what encoding/json rejects (%v): %q", errB, in)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("on %q:\n plan %+v\n  std %+v", in, a, b)
				}
			}
			va.Elem().SetZero()
			errA := p.Unmarshal(in, va.UnsafePointer(), false)
			if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
				t.Fatalf("on %q:\n plan %+v (%v)\n  std %+v (%v)", in, a, errA, b, errB)
			}
		}
		check(&struct{ Records []events.SQSMessage }{}, &struct{ Records []events.SQSMessage }{})
		check(&struct{ Records []events.DynamoDBEventRecord }{}, &struct{ Records []events.DynamoDBEventRecord }{})
		type kafka struct {
			Records map[string][]events.KafkaRecord `json:"records"`
		}
		check(&kafka{}, &kafka{})
	})
}
