package handlers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/eventscan"
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

// FuzzEnvelopeAgrees: the readers of SQS, DynamoDB Streams (with Raw's
// maps) and Kafka events give encoding/json's value on every input it
// decodes, and fail (the event, or the records encoding/json cannot
// decode) on every input it refuses.
func FuzzEnvelopeAgrees(f *testing.F) {
	envelopeSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		failed := func(err error, errs []error) bool {
			return err != nil || slices.ContainsFunc(errs, func(e error) bool { return e != nil })
		}
		var sqs struct{ Records []events.SQSMessage }
		sqsErr := json.Unmarshal(in, &sqs)
		msgs, errs, err := eventscan.DecodeSQS(in, nil)
		if sqsErr != nil != failed(err, errs) {
			t.Fatalf("sqs %q: errors %v %v, encoding/json %v", in, err, errs, sqsErr)
		}
		if sqsErr == nil {
			for i := range sqs.Records {
				if m := sqs.Records[i].MessageAttributes; m != nil && len(m) == 0 {
					sqs.Records[i].MessageAttributes = nil // DecodeSQS leaves {} nil
				}
			}
			if len(msgs) != len(sqs.Records) || len(msgs) > 0 && !reflect.DeepEqual(msgs, sqs.Records) {
				t.Fatalf("sqs %q:\n read %+v\n  std %+v", in, msgs, sqs.Records)
			}
		}
		var ddb struct{ Records []events.DynamoDBEventRecord }
		ddbErr := refUnmarshal(in, &ddb)
		ev, errs, err := eventscan.DecodeDynamoDB(in, true)
		if ddbErr != nil != failed(err, errs) {
			t.Fatalf("dynamodb %q: errors %v %v, encoding/json %v", in, err, errs, ddbErr)
		}
		if ddbErr == nil && (len(ev.Records) != len(ddb.Records) || len(ddb.Records) > 0 && !reflect.DeepEqual(ev.Records, ddb.Records)) {
			t.Fatalf("dynamodb %q:\n read %+v\n  std %+v", in, ev.Records, ddb.Records)
		}
		var kafka struct {
			Records map[string][]events.KafkaRecord `json:"records"`
		}
		kafkaErr := json.Unmarshal(in, &kafka)
		kev, err := eventscan.DecodeKafka(in)
		kerrs := make([]error, len(kev.Entries))
		for i, e := range kev.Entries {
			kerrs[i] = e.Err
		}
		if kafkaErr != nil != failed(err, kerrs) {
			t.Fatalf("kafka %q: errors %v %v, encoding/json %v", in, err, kerrs, kafkaErr)
		}
		if kafkaErr == nil {
			keys, n := eventscan.Partitions(kafka.Records)
			if len(kev.Entries) != n {
				t.Fatalf("kafka %q: %d records, encoding/json %d", in, len(kev.Entries), n)
			}
			i := 0
			for _, k := range keys {
				for _, r := range kafka.Records[k] {
					if !reflect.DeepEqual(kev.Entries[i].Record, r) {
						t.Fatalf("kafka %q:\n read %+v\n  std %+v", in, kev.Entries[i].Record, r)
					}
					i++
				}
			}
		}
	})
}

// refUnmarshal is json.Unmarshal, with a panic of aws-lambda-go's
// attribute value decoder (a BS holding a non-string) made an error.
func refUnmarshal(in []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("aws-lambda-go panicked: %v", p)
		}
	}()
	return json.Unmarshal(in, v)
}
