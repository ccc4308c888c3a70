package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

func kinesisSeeds(f *testing.F) {
	raw, _ := kinesisTestEvent("ok", "fail", "ok")
	f.Add(raw)
	f.Add(kinesisFixture(f, 3))
	for _, s := range []string{
		`{}`, `{"Records":null}`, `{"Records":[]}`, `{"Records":[{}]}`, ` {"Records" : [ { "kinesis" : { "data" : "" } } ] } `,
		`{"Records":[{"eventID":"a\u0062c","kinesis":{"data":"eyJ9"}}]}`,
		`{"Records":[{"EventID":"x","kinesis":{"Data":"eyJ9"}}]}`,
		`{"Records":[{"kinesis":{"data":"ey\/J9"}}]}`,
		`{"Records":[{"kinesis":{"data":"eyJ9\n"}}]}`,
		`{"Records":[{"kinesis":{"data":"%%%"}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":1545084650.987,"sequenceNumber":"1"}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":1e3}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":-1.5}}]}`,
		`{"Records":[{"kinesis":{"approximateArrivalTimestamp":null}}]}`,
		`{"Records":[{"kinesis":{"partitionKey":"é"}}]}`,
		`{"Records":[{"kinesis":{}}],"Records":[]}`,
		`{"Records":[{"awsRegion":"a"},{"awsRegion":"a"},{"awsRegion":"b"}]}`,
		`{"Records":[]} x`, `{"Records":[`, `{"Records":[{"kinesis":{"data":"eyJ9"}}]`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzJSONCodecAgrees checks the default codec against encoding/json.
func FuzzJSONCodecAgrees(f *testing.F) {
	for _, s := range []string{
		`{"orderId":"ord-k-00000000","customerId":"cust-014293","amount":338.91,"currency":"EUR","items":[{"sku":"SKU-710469","qty":1,"price":108.69}],"createdAt":"2025-11-03T09:30:00.000Z"}`,
		`{"orderId":"\u00e9\ud83d\ude00","amount":1e2,"items":null}`, `{"OrderId":"x","ORDERID":"y"}`, `{"orderId":"a","orderId":"b"}`,
		`{"qty":01}`, `{"items":[{"qty":1.5}]}`, `{"orderId":"\ud800"}`, "{\"orderId\":\"\xff\"}", `{}`, `null`, `[]`, ``, `{"amount":"1"}`,
		`{"orderId":"a"} x`, `{"items":[{"sku":"a"}],"extra":{"deep":[[[[1]]]]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var a, b benchOrder
		errA := decodeValue(JSON(), append([]byte(nil), in...), &a)
		errB := json.Unmarshal(in, &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("default codec error %v, encoding/json error %v, on %q", errA, errB, in)
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("on %q:\n codec %+v\n  std %+v", in, a, b)
		}
	})
}

// fuzzInvoke feeds arbitrary events to a handler: it must never panic,
// answer a body xor an error, and report only identifiers of the event's
// records (as encoding/json reads them: the record field path names the
// identifier, e.g. "kinesis.sequenceNumber").
func fuzzInvoke(t *testing.T, h interface {
	Invoke(context.Context, []byte) ([]byte, error)
}, in []byte, idPath string, ids func(out []byte) []string) {
	out, err := h.Invoke(context.Background(), in)
	if (out == nil) == (err == nil) {
		t.Fatalf("body %q and error %v", out, err)
	}
	if err != nil {
		return
	}
	known := eventIDs(in, idPath)
	for _, id := range ids(out) {
		if !known[id] {
			t.Fatalf("reported %q, which is not a record id of the event %q (ids %v)", id, in, known)
		}
	}
}

// eventIDs reads each record's identifier at path with encoding/json, which
// matches keys case-insensitively as the handlers' decoders do.
func eventIDs(in []byte, path string) map[string]bool {
	var ev struct{ Records []json.RawMessage }
	json.Unmarshal(in, &ev)
	out := map[string]bool{}
	for _, raw := range ev.Records {
		for _, key := range strings.Split(path, ".") {
			var m map[string]json.RawMessage
			json.Unmarshal(raw, &m)
			raw = nil
			for k, v := range m {
				if strings.EqualFold(k, key) {
					raw = v // encoding/json takes the last of several matches
				}
			}
		}
		var id string
		json.Unmarshal(raw, &id)
		out[id] = true
	}
	return out
}

func stringIDs(out []byte) []string {
	var r events.SQSEventResponse
	json.Unmarshal(out, &r)
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func FuzzSQSInvoke(f *testing.F) {
	raw, _ := sevents.MarshalEvent((&sevents.SQSBuilder{}).Add(`{"id":"1","action":"fail"}`).Add(`{"id":"2","action":"ok"}`).Add("nope").Event())
	f.Add(raw)
	f.Add([]byte(`{"Records":[{"messageId":"m1","body":"{}","attributes":7},{"messageId":"m2","body":"x"}]}`))
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return act(r.Value.Action) }, opts(WithConcurrency(2))...)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzInvoke(t, h, in, "messageId", stringIDs) })
}

func FuzzDynamoDBInvoke(f *testing.F) {
	b := &sevents.DynamoDBBuilder{}
	b.Insert(map[string]int{"Id": 1}, ddbItem{1, "a"})
	b.Remove(map[string]int{"Id": 1}, ddbItem{1, "a"})
	raw, _ := json.Marshal(b.Event())
	f.Add(raw)
	f.Add([]byte(`{"Records":[{"eventName":"INSERT","dynamodb":{"SequenceNumber":"1","StreamViewType":"NEW_IMAGE","NewImage":{"Id":{"S":"x"}}}}]}`))
	f.Add([]byte(`{"Records":[{"dynamodb":{"SequenceNumber":"1","NewImage":{"Id":{"Q":"x"}}}}]}`))
	h, _ := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbItem]) error { return nil }, opts(WithPartialResponseWhenNoneSucceed())...)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzInvoke(t, h, in, "dynamodb.SequenceNumber", stringIDs) })
}

func FuzzKafkaInvoke(f *testing.F) {
	raw, _ := sevents.MarshalEvent((&sevents.KafkaBuilder{}).Add("t", 0, nil, payload("1", "fail")).Add("t", 0, nil, payload("2", "ok")).Add("t-x", 1, []byte("k"), nil).Event())
	f.Add(raw)
	f.Add([]byte(`{"records":{"t-0":[{"offset":1,"value":"!!"},{"offset":2,"headers":[{"h":[999]}]},{"value":"e30="}]}}`))
	h, _ := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return act(r.Value.Action) }, opts(WithPartialResponseWhenNoneSucceed())...)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := h.Invoke(context.Background(), in)
		if (out == nil) == (err == nil) {
			t.Fatalf("body %q and error %v", out, err)
		}
		if err != nil {
			return
		}
		var r sevents.KafkaEventResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("response %s: %v", out, err)
		}
		var ev struct {
			Records map[string][]json.RawMessage `json:"records"`
		}
		json.Unmarshal(in, &ev)
		for _, f := range r.BatchItemFailures {
			if _, ok := ev.Records[f.ItemIdentifier.Partition]; !ok {
				t.Fatalf("reported partition %q not in the event", f.ItemIdentifier.Partition)
			}
		}
	})
}

func FuzzKinesisInvoke(f *testing.F) {
	kinesisSeeds(f)
	h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) },
		WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithoutRetry(), WithPartialResponseWhenNoneSucceed())
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzInvoke(t, h, in, "kinesis.sequenceNumber", func(out []byte) []string {
			ids := stringIDs(out)
			if len(ids) > 1 {
				t.Fatalf("a stream reports at most one record, got %v", ids)
			}
			return slices.Clip(ids)
		})
	})
}
