package handlers

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// firehoseEventOf is a transformation event as Firehose sends it to its
// Lambda processor, a Kinesis stream as its source: the input of
// https://docs.aws.amazon.com/lambda/latest/dg/services-kinesisfirehose.html
// with the kinesisRecordMetadata of aws-lambda-go's
// events/testdata/kinesis-firehose-event.json.
func firehoseEventOf(datas ...string) []byte {
	var recs []string
	for i, d := range datas {
		recs = append(recs, fmt.Sprintf(`{
       "data": %q,
       "recordId": "4954698668313554428650745793632162567570019247115678515%d",
       "approximateArrivalTimestamp": 1507217624302,
       "kinesisRecordMetadata": {
         "shardId": "shardId-000000000000",
         "partitionKey": "4d1ad2b9-24f8-4b9d-a088-76e9947c317a",
         "approximateArrivalTimestamp": 1507217624302,
         "sequenceNumber": "4954698668313554428650745793632162567570019247115678515%d",
         "subsequenceNumber": 0
       }
     }`, base64.StdEncoding.EncodeToString([]byte(d)), i, i))
	}
	return []byte(`{
   "invocationId": "invocationIdExample",
   "deliveryStreamArn": "arn:aws:firehose:us-east-1:123456789012:deliverystream/orders",
   "sourceKinesisStreamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
   "region": "us-east-1",
   "records": [` + strings.Join(recs, ",") + `]
 }`)
}

type click struct {
	Customer string `json:"customer_id"`
	Action   string `json:"action"`
}

// The response shape is that of "Required parameters for data
// transformation",
// https://docs.aws.amazon.com/firehose/latest/dev/data-transformation-status-model.html
// (recordId, result Ok/Dropped/ProcessingFailed, base64 data), with the
// partition keys of dynamic partitioning,
// https://docs.aws.amazon.com/firehose/latest/dev/dynamic-partitioning-partitioning-keys.html
// (metadata.partitionKeys).
func TestFirehoseTransformation(t *testing.T) {
	ev := firehoseEventOf(`{"customer_id":"c1","action":"buy"}`, `{"customer_id":"c2","action":"bot"}`,
		`{"customer_id":"c3","action":"fail"}`, `not json`, `{"customer_id":"c5","action":"panic"}`, `{"customer_id":"c6","action":"bad result"}`)
	var seen []string
	h := must(NewFirehose(func(ctx context.Context, r FirehoseRecord[click]) (FirehoseResult, error) {
		seen = append(seen, r.RecordID())
		switch r.Value.Action {
		case "bot":
			return Dropped(), nil
		case "fail":
			return FirehoseResult{}, errors.New("cannot enrich")
		case "panic":
			panic("boom")
		case "bad result":
			return FirehoseResult{Result: "OK"}, nil
		}
		if r.DeliveryStreamARN != "arn:aws:firehose:us-east-1:123456789012:deliverystream/orders" || r.Raw.KinesisFirehoseRecordMetadata.ShardID != "shardId-000000000000" {
			t.Errorf("record %+v", r)
		}
		return Transformed([]byte(strings.ToUpper(string(r.Data())) + "\n")).WithPartitionKeys(map[string]string{"customer": r.Value.Customer}), nil
	}, opts(WithConcurrency(1))...))
	out, err := h.Invoke(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 5 {
		t.Fatalf("the function saw %d records, want 5 (not the one that does not decode)", len(seen))
	}
	var resp events.KinesisFirehoseResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	want := []string{FirehoseOk, FirehoseDropped, FirehoseProcessingFailed, FirehoseProcessingFailed, FirehoseProcessingFailed, FirehoseProcessingFailed}
	if len(resp.Records) != len(want) {
		t.Fatalf("%d results: %s", len(resp.Records), out)
	}
	for i, r := range resp.Records {
		if r.Result != want[i] || r.RecordID != fmt.Sprintf("4954698668313554428650745793632162567570019247115678515%d", i) {
			t.Errorf("record %d: %s %s, want %s", i, r.RecordID, r.Result, want[i])
		}
	}
	first := `{"recordId":"49546986683135544286507457936321625675700192471156785150","result":"Ok","data":"` +
		base64.StdEncoding.EncodeToString([]byte(`{"CUSTOMER_ID":"C1","ACTION":"BUY"}`+"\n")) + `","metadata":{"partitionKeys":{"customer":"c1"}}}`
	if !bytes.HasPrefix(out, []byte(`{"records":[`+first+`,{"recordId":"49546986683135544286507457936321625675700192471156785151","result":"Dropped","data":"`)) {
		t.Fatalf("response %s\nwant it to start with %s", out, first)
	}
	if bytes.Contains(out, []byte(`"metadata":{"partitionKeys":{}}`)) || bytes.Count(out, []byte(`"metadata"`)) != 1 {
		t.Fatalf("metadata only where the function gave partition keys: %s", out)
	}
}

// A transformation whose results pass Lambda's 6 MB response limit fails
// the invocation with an error that says so, rather than a response
// Lambda would refuse.
func TestFirehoseResponseTooLarge(t *testing.T) {
	ev := firehoseEventOf("a", "b", "c")
	h := must(NewFirehose(func(ctx context.Context, r FirehoseRecord[[]byte]) (FirehoseResult, error) {
		return Transformed(bytes.Repeat([]byte("x"), 2<<20)), nil
	}, quiet()...))
	_, err := h.Invoke(context.Background(), ev)
	var big *FirehoseResponseTooLargeError
	if !errors.As(err, &big) || big.At != 2 || big.Records != 3 || !strings.Contains(err.Error(), "BufferSizeInMBs") {
		t.Fatalf("error %v", err)
	}
	// Just under the limit is answered.
	h = must(NewFirehose(func(ctx context.Context, r FirehoseRecord[[]byte]) (FirehoseResult, error) {
		return Transformed(bytes.Repeat([]byte("x"), (MaxFirehoseResponse-400)/4*3)), nil
	}, quiet()...))
	out, err := h.Invoke(context.Background(), firehoseEventOf("a"))
	if err != nil || len(out) > MaxFirehoseResponse || len(out) < MaxFirehoseResponse-500 {
		t.Fatalf("%d bytes, %v", len(out), err)
	}
}

// A Firehose event given to a stream or queue handler is another source's
// event: it fails whole, naming Firehose, and runs nothing. (Before, the
// handlers decoded its records case-insensitively as records without ids.)
func TestFirehoseEventRejected(t *testing.T) {
	ev := firehoseEventOf(`{"id":"1","action":"ok"}`)
	ran := false
	for _, tc := range []struct {
		name string
		h    interface {
			Invoke(context.Context, []byte) ([]byte, error)
		}
	}{
		{"MustKinesis", MustKinesis(func(context.Context, KinesisRecord[msg]) error { ran = true; return nil }, quiet()...)},
		{"MustSQS", MustSQS(func(context.Context, SQSRecord[msg]) error { ran = true; return nil }, quiet()...)},
		{"MustSQSFIFO", MustSQSFIFO(func(context.Context, SQSRecord[msg]) error { ran = true; return nil }, quiet()...)},
		{"MustDynamoDB", MustDynamoDB(func(context.Context, DynamoDBRecord[msg]) error { ran = true; return nil }, quiet()...)},
		{"MustKafka", MustKafka(func(context.Context, KafkaRecord[msg]) error { ran = true; return nil }, quiet()...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.h.Invoke(context.Background(), ev)
			var sm *SourceMismatchError
			if !errors.As(err, &sm) || sm.Event == "" || sm.Handler != "handlers."+tc.name ||
				!strings.Contains(err.Error(), "Firehose") || !strings.Contains(err.Error(), "handlers.NewFirehose") || out != nil || ran {
				t.Fatalf("%s %v (ran %v)", out, err, ran)
			}
		})
	}
	t.Run("another source's event to NewFirehose", func(t *testing.T) {
		h := must(NewFirehose(func(context.Context, FirehoseRecord[msg]) (FirehoseResult, error) { ran = true; return Dropped(), nil }, quiet()...))
		ev, _ := kinesisEventOf(t, `{"id":"1"}`)
		_, err := h.Invoke(context.Background(), ev)
		var sm *SourceMismatchError
		if !errors.As(err, &sm) || sm.Got != "aws:kinesis" || ran {
			t.Fatalf("%v", err)
		}
	})
}

func TestFirehoseOptions(t *testing.T) {
	fn := func(context.Context, FirehoseRecord[msg]) (FirehoseResult, error) { return Dropped(), nil }
	for _, o := range []Option{WithKeyConcurrency(2), WithWholeBatchFailures(), WithSkipGroupOnFailure(), WithPartialResponseWhenNoneSucceed()} {
		if _, err := NewFirehose(fn, append(quiet(), o)...); err == nil {
			t.Errorf("an option for another source was accepted")
		}
	}
	// The mapping's ReportBatchItemFailures variable does not concern it.
	env := func(k string) (string, bool) {
		if k == EnvReportBatchItemFailures {
			return "false", true
		}
		return "", false
	}
	if _, err := NewFirehose(fn, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(env)); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSQS(func(context.Context, SQSRecord[msg]) error { return nil }, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(env)); err == nil {
		t.Fatal("the SQS handler should refuse the variable: the check is not what lets NewFirehose pass")
	}
}
