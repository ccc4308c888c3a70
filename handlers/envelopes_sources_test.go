package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/batchresponse"
)

// kinesisCloudWatchLogs is a Kinesis event of two records a CloudWatch Logs
// subscription filter wrote into a data stream (each data the gzip of one
// DATA_MESSAGE, captured from AWS), byte for byte as
// aws-powertools/powertools-lambda-typescript
// packages/parser/tests/events/kinesis/stream-cloudwatch-logs.json (commit
// 1e5fe1b497003615377ceb8e03b4321ce6260815) holds it.
const kinesisCloudWatchLogs = `{
  "Records": [
    {
      "kinesis": {
        "kinesisSchemaVersion": "1.0",
        "partitionKey": "da10bf66b1f54bff5d96eae99149ad1f",
        "sequenceNumber": "49635052289529725553291405521504870233219489715332317186",
        "data": "H4sIAAAAAAAAAK2Sa2vbMBSG/4ox+xg3Oror39IlvaztVmJv7WjCUGwl8+ZLZstts5L/vuOsZYUyWGEgJHiP9J7nvOghLF3b2rVLthsXjsLJOBl/uZjG8fh4Gg7C+q5yDcqUAWcSONHEoFzU6+Om7jZYGdq7dljYcpnZ4cZHwLWOJl1Zbs/r9cR6e9RVqc/rKlpXV9eXt+fy27vt8W+L2DfOlr07oXQIMAQyvHlzPk6mcbKgciktF5lQfMU5dZZqzrShLF2uFC60aLtlmzb5prc/ygvvmjYc3YRPFG+LusuurE+/Ikqb1Gd55dq8jV+8isT6+317Rk42J5PTcLFnm966yvd2D2GeISJTYIwCJSQ1BE9OtWZCABWaKMIJAMdDMyU5MYZLhmkxBhQxfY4Re1tiWiAlBsgIVQTE4Cl6tI+T8SwJZu5Hh1dPs1FApOMSDI9WVKmIC+4irTMWQZYpx7QkztrgE06MU4yCx9DmVbgbvABmQJTGtkYAB0NwEwyYQUBpqEFuSbkGrThTRKi/AlP+HHj6fvJa3P9Ap/+Rbja9/PD6POd+0jXW7xM1B8CDsp37w7woXBb8qQDZ6xeurJttEOc/HWpUBxeHKNr74LHwsXXYlsm9flrl/rmFIQeS7m3m1fVs/DlIGpu6nhMiyWQGXNKIMbcCIgkhElKbaZnZpYJUz33s1iV+z/6+StMlR3yphHNcCyxiNEXf2zed6xuEu8XuF2wb6krnAwAA",
        "approximateArrivalTimestamp": 1668093033.744
      },
      "eventSource": "aws:kinesis",
      "eventVersion": "1.0",
      "eventID": "shardId-000000000000:49635052289529725553291405521504870233219489715332317186",
      "eventName": "aws:kinesis:record",
      "invokeIdentityArn": "arn:aws:iam::231436140809:role/pt-1488-CloudWatchKinesisLogsFunctionRole-1M4G2TIWIE49",
      "awsRegion": "eu-west-1",
      "eventSourceARN": "arn:aws:kinesis:eu-west-1:231436140809:stream/pt-1488-KinesisStreamCloudWatchLogs-D8tHs0im0aJG"
    },
    {
      "kinesis": {
        "kinesisSchemaVersion": "1.0",
        "partitionKey": "cf4c4c2c9a49bdfaf58d7dbbc2b06081",
        "sequenceNumber": "49635052289529725553291405520881064510298312199003701250",
        "data": "H4sIAAAAAAAAAK2SW2/TQBCF/4pl8ViTvc7u5i0laVraQhUbWtREaG1PgsGXYK/bhqr/nXVoBRIgUYnXc2bPfHO092GFXWc3mOy2GI7D6SSZfDyfxfFkPgsPwua2xtbLjFPBgQqiifFy2WzmbdNvvTOyt92otFWa29HWRVRoHU37qtqdNZupdfaorzNXNHW0qS+vLm7O4PPr3fxHROxatNWQThgbUTqiZHT94mySzOJkBUqYLOWY8ZQLbaTRkEvDciUYzWzKfETXp13WFtsh/qgoHbZdOL4OnyhelU2fX1qXffIoXdKcFjV2RRf/9iqSmy933Sk53h5PT8LVnm12g7Ub4u7DIveIXFFjFNGUKUlAaMY0EUJKLjkQbxhKGCWeknMKoAGUkYoJ7TFd4St2tvJtDRYxDAg3VB08Ve/j42SySIIFfu396Ek+DkS+xkwAiYhM00isgUV6jXmEMrM5EmMsh+C9v9hfMQ4eS1vW4cPBH4CZVpoTJkEIAp5RUMo8vGFae3JNCCdUccMVgPw7sP4VePZm+lzc/0AH/0i3mF28fX6fSzftW+v2jZKXRgVVt3SHRVliHvx06F4+x6ppd0FcfEMvMR2cH3rR3gWPxrsO/Vau9vqyvlpMPgRJazMcYGgEHHLKBhLGJaBA0JLxNc0JppoS9Cwxbir/B4d5QDBAQSnfFFGp8aa/vxw2uLbHYUH4sHr4Dj5RJxfMAwAA",
        "approximateArrivalTimestamp": 1668092612.992
      },
      "eventSource": "aws:kinesis",
      "eventVersion": "1.0",
      "eventID": "shardId-000000000000:49635052289529725553291405520881064510298312199003701250",
      "eventName": "aws:kinesis:record",
      "invokeIdentityArn": "arn:aws:iam::231436140809:role/pt-1488-CloudWatchKinesisLogsFunctionRole-1M4G2TIWIE49",
      "awsRegion": "eu-west-1",
      "eventSourceARN": "arn:aws:kinesis:eu-west-1:231436140809:stream/pt-1488-KinesisStreamCloudWatchLogs-D8tHs0im0aJG"
    }
  ]
}`

// cwlControlMessage is the message CloudWatch Logs writes to check that a
// subscription's destination is reachable: messageType CONTROL_MESSAGE
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html),
// with the fields AWS's Lambda blueprint for Firehose,
// kinesis-firehose-cloudwatch-logs-processor, answers Dropped.
const cwlControlMessage = `{"messageType":"CONTROL_MESSAGE","owner":"CloudwatchLogs","logGroup":"","logStream":"",` +
	`"subscriptionFilters":[],"logEvents":[{"id":"","timestamp":1668093033744,"message":"CWL CONTROL MESSAGE: Checking health of destination Kinesis stream."}]}`

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withControlMessage is kinesisCloudWatchLogs with a third record, the
// gzip of a control message, as CloudWatch Logs writes one into the
// stream.
func withControlMessage(t testing.TB) ([]byte, []string) {
	var ev events.KinesisEvent
	if err := json.Unmarshal([]byte(kinesisCloudWatchLogs), &ev); err != nil {
		t.Fatal(err)
	}
	ctl := ev.Records[1]
	ctl.Kinesis.Data = gz(t, cwlControlMessage)
	ctl.Kinesis.SequenceNumber = "49635052289529725553291405521504870233219489715332317187"
	ctl.EventID = "shardId-000000000000:" + ctl.Kinesis.SequenceNumber
	ev.Records = append(ev.Records, ctl)
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for _, r := range ev.Records {
		seqs = append(seqs, r.Kinesis.SequenceNumber)
	}
	return raw, seqs
}

// CloudWatch Logs data through a Kinesis stream decodes into its log
// events; the control message is acknowledged without running the
// function, as the s3:TestEvent message is.
func TestCloudWatchLogsInKinesis(t *testing.T) {
	ev, seqs := withControlMessage(t)
	var got []CloudWatchLogs
	var ids []string
	h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[CloudWatchLogs]) error {
		got = append(got, r.Value)
		for i := range r.Value.LogEvents {
			ids = append(ids, ItemID(r.SequenceNumber(), i))
		}
		return nil
	}, quiet()...))
	if f := invoke(t, h, ev); len(f) != 0 || len(got) != 2 {
		t.Fatalf("reported %v, ran %d; want the two data messages run, the control message acknowledged", f, len(got))
	}
	a := got[0]
	if a.MessageType != "DATA_MESSAGE" || a.Owner != "231436140809" || a.LogGroup != "/aws/lambda/pt-1488-DummyLogDataFunction-gnWXPvL6jJyG" ||
		a.LogStream != "2022/11/10/[$LATEST]26b6a45d574f442ea28438923cbf7bf7" || !slices.Equal(a.SubscriptionFilters, []string{"pt-1488-CloudWatchLogsToKinesisSubscriptionFilter-5gkxsK0HpHDI"}) ||
		len(a.LogEvents) != 3 || a.Control() {
		t.Fatalf("first message %+v", a)
	}
	if e := a.LogEvents[0]; e.ID != "37199717562907174288355125807040114704837640994633613312" || e.Timestamp != 1668093027015 ||
		e.Message != "START RequestId: 06e46194-f277-454e-88d3-1dd7e3860eaa Version: $LATEST\n" {
		t.Fatalf("first event %+v", e)
	}
	if k := (&a).envelopeKey(); k != "231436140809:/aws/lambda/pt-1488-DummyLogDataFunction-gnWXPvL6jJyG:2022/11/10/[$LATEST]26b6a45d574f442ea28438923cbf7bf7:"+
		"pt-1488-CloudWatchLogsToKinesisSubscriptionFilter-5gkxsK0HpHDI:37199717562907174288355125807040114704837640994633613312:37199717563107880995141901415313936169291476248187437058:3" {
		t.Fatalf("idempotency key %q", k)
	}
	if len(ids) != 6 || ids[0] != seqs[0]+"#0" || ids[5] != seqs[1]+"#2" {
		t.Fatalf("item ids %v", ids)
	}
}

// The control message is reported as answered without the function, with
// its reason, so a local runner can tell it from a record whose work was
// lost (RecordOutcome.Skipped, the skips file).
func TestCloudWatchLogsControlMessageReportedSkipped(t *testing.T) {
	ev, seqs := withControlMessage(t)
	skipped := map[string]string{}
	h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[CloudWatchLogs]) error { return nil },
		opts(WithOnBatch(func(_ context.Context, r BatchReport) {
			for _, o := range r.Records {
				if o.Skipped != "" {
					skipped[o.Record] = o.Skipped
				}
			}
		}))...))
	if f := invoke(t, h, ev); len(f) != 0 {
		t.Fatalf("reported %v", f)
	}
	if len(skipped) != 1 || skipped[seqs[2]] != SkipControlMessage {
		t.Fatalf("skipped %v, want only %s for %s", skipped, SkipControlMessage, seqs[2])
	}
}

// CloudWatch Logs delivering a message twice (two records, one message)
// runs it once by the default idempotency key; the control message takes
// no key of its own.
func TestCloudWatchLogsIdempotency(t *testing.T) {
	var ev events.KinesisEvent
	if err := json.Unmarshal([]byte(kinesisCloudWatchLogs), &ev); err != nil {
		t.Fatal(err)
	}
	dup := ev.Records[0]
	dup.Kinesis.SequenceNumber = "49635052289529725553291405521504870233219489715332317999"
	dup.EventID = "shardId-000000000000:" + dup.Kinesis.SequenceNumber
	ev.Records = append(ev.Records, dup)
	raw, _ := json.Marshal(ev)
	runs := 0
	h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[CloudWatchLogs]) error { runs++; return nil },
		opts(WithIdempotency(idempotency.NewMemoryStore()))...))
	if f := invoke(t, h, raw); len(f) != 0 || runs != 2 {
		t.Fatalf("reported %v, ran %d; want the two messages once each", f, runs)
	}
	var c CloudWatchLogs
	if err := decodeValue(JSON(), gz(t, cwlControlMessage), &c); err != nil || !c.Control() || (&c).envelopeKey() != "" || (&c).skipReason() != SkipControlMessage {
		t.Fatalf("control message %+v: %v", c, err)
	}
}

// Data that is not CloudWatch Logs subscription data fails its record
// permanently with an error that says what was expected; JSON that a
// Firehose stream already decompressed is read as is.
func TestCloudWatchLogsRejected(t *testing.T) {
	data := `{"messageType":"DATA_MESSAGE","owner":"123456789012","logGroup":"g","logStream":"s","subscriptionFilters":["f"],` +
		`"logEvents":[{"id":"1","timestamp":1,"message":"m"}],"policyLevel":"ACCOUNT_LEVEL_POLICY"}`
	var ok CloudWatchLogs
	if err := decodeValue(JSON(), []byte(data), &ok); err != nil || ok.PolicyLevel != "ACCOUNT_LEVEL_POLICY" || ok.LogEvents[0].Message != "m" {
		t.Fatalf("decompressed data: %+v %v", ok, err)
	}
	truncated := gz(t, data)
	for name, in := range map[string][]byte{
		"truncated gzip":   truncated[:len(truncated)-9],
		"not JSON":         gz(t, "hello"),
		"other type":       gz(t, strings.Replace(data, "DATA_MESSAGE", "OTHER", 1)),
		"no events":        gz(t, strings.Replace(data, `[{"id":"1","timestamp":1,"message":"m"}]`, "[]", 1)),
		"a Kinesis record": []byte(`{"id":"o-1"}`),
	} {
		var v CloudWatchLogs
		err := decodeValue(JSON(), in, &v)
		if err == nil || !strings.Contains(err.Error(), "CloudWatch Logs") {
			t.Errorf("%s: %v", name, err)
		}
	}
	ev, seqs := kinesisEventOf(t, string(gz(t, data)), `{"id":"o-1"}`)
	var errs []error
	h := must(NewKinesis(func(ctx context.Context, r KinesisRecord[CloudWatchLogs]) error { return nil }, opts(WithOnBatch(func(_ context.Context, r BatchReport) {
		for _, o := range r.Records {
			errs = append(errs, o.Err)
		}
	}))...))
	if f := invoke(t, h, ev); !slices.Equal(f, seqs[1:]) || batch.Classify(errs[1]) != batch.ClassPermanent {
		t.Fatalf("reported %v, errors %v", f, errs)
	}
}

// A data message that inflates past MaxCloudWatchLogsBytes fails
// permanently instead of filling the function's memory.
func TestCloudWatchLogsInflateBound(t *testing.T) {
	_, err := gunzip(gz(t, strings.Repeat("a", 1<<16)), 1<<10)
	if err == nil || !strings.Contains(err.Error(), "inflates past 1024 bytes") {
		t.Fatalf("%v", err)
	}
	b, err := gunzip(gz(t, "abc"), 3)
	if err != nil || string(b) != "abc" {
		t.Fatalf("%q %v", b, err)
	}
}

// The readers are pooled: records decoded at once do not share one.
func TestCloudWatchLogsConcurrent(t *testing.T) {
	var ev events.KinesisEvent
	if err := json.Unmarshal([]byte(kinesisCloudWatchLogs), &ev); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			var v CloudWatchLogs
			if err := decodeValue(JSON(), ev.Records[i%2].Kinesis.Data, &v); err != nil || len(v.LogEvents) != 3 {
				t.Errorf("%+v %v", v, err)
			}
		})
	}
	wg.Wait()
}

// firehoseKinesisSource is a transformation event of a Firehose stream
// reading a Kinesis data stream, as
// aws-powertools/powertools-lambda-typescript
// packages/parser/tests/events/kinesis/firehose.json (commit
// 1e5fe1b497003615377ceb8e03b4321ce6260815) writes it: invocationId,
// sourceKinesisStreamArn, region, and each record's kinesisRecordMetadata.
const firehoseKinesisSource = `{
  "invocationId": "2b4d1ad9-2f48-94bd-a088-767c317e994a",
  "sourceKinesisStreamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/kinesis-source",
  "deliveryStreamArn": "arn:aws:firehose:us-east-2:123456789012:deliverystream/delivery-stream-name",
  "region": "us-east-2",
  "records": [
    {
      "data": "SGVsbG8gV29ybGQ=",
      "recordId": "record1",
      "approximateArrivalTimestamp": 1664028820148,
      "kinesisRecordMetadata": {
        "shardId": "shardId-000000000000",
        "partitionKey": "4d1ad2b9-24f8-4b9d-a088-76e9947c317a",
        "approximateArrivalTimestamp": 1664028820148,
        "sequenceNumber": "49546986683135544286507457936321625675700192471156785154",
        "subsequenceNumber": 0
      }
    },
    {
      "data": "eyJIZWxsbyI6ICJXb3JsZCJ9",
      "recordId": "record2",
      "approximateArrivalTimestamp": 1664028793294,
      "kinesisRecordMetadata": {
        "shardId": "shardId-000000000001",
        "partitionKey": "4d1ad2b9-24f8-4b9d-a088-76e9947c318a",
        "approximateArrivalTimestamp": 1664028793294,
        "sequenceNumber": "49546986683135544286507457936321625675700192471156785155",
        "subsequenceNumber": 0
      }
    }
  ]
}`

// firehoseDirectPut is the same for Direct PUT, as firehose-put.json of
// the same commit writes it (no source, no kinesisRecordMetadata).
const firehoseDirectPut = `{
  "invocationId": "2b4d1ad9-2f48-94bd-a088-767c317e994a",
  "deliveryStreamArn": "arn:aws:firehose:us-east-2:123456789012:deliverystream/delivery-stream-name",
  "region": "us-east-2",
  "records": [
    {
      "recordId": "record1",
      "approximateArrivalTimestamp": 1664029185290,
      "data": "SGVsbG8gV29ybGQ="
    },
    {
      "recordId": "record2",
      "approximateArrivalTimestamp": 1664029186945,
      "data": "eyJIZWxsbyI6ICJXb3JsZCJ9"
    }
  ]
}`

// firehoseMSKEvent is a transformation event of a Firehose stream reading
// an Amazon MSK cluster, as aws/aws-lambda-java-libs
// aws-lambda-java-tests/src/test/resources/msk_firehose_event.json (commit
// c4dcbab4ffeda26ec9dff997d6ef02a9ee2ab013; MSKFirehoseEvent) writes it:
// sourceMSKArn, and each record's kafkaRecordValue (instead of data) and
// mskRecordMetadata. Its results go back as kafkaRecordValue too
// (MSKFirehoseResponse; "Required parameters for data transformation",
// https://docs.aws.amazon.com/firehose/latest/dev/data-transformation-status-model.html,
// "For Amazon MSK").
const firehoseMSKEvent = `{
  "invocationId": "12345621-4787-0000-a418-36e56Example",
  "sourceMSKArn": "arn:aws:kafka:EXAMPLE",
  "deliveryStreamArn": "arn:aws:firehose:EXAMPLE",
  "region": "us-east-1",
  "records": [
    {
      "recordId": "00000000000000000000000000000000000000000000000000000000000000",
      "approximateArrivalTimestamp": 1716369573887,
      "mskRecordMetadata": {
        "offset": "0",
        "partitionId": "1",
        "approximateArrivalTimestamp": 1716369573887
      },
      "kafkaRecordValue": "eyJOYW1lIjoiSGVsbG8gV29ybGQifQ=="
    }
  ]
}`

func TestFirehoseEventFields(t *testing.T) {
	type rec struct {
		r  FirehoseRecord[[]byte]
		km events.KinesisFirehoseRecordMetadata
		ok bool
	}
	collect := func(ev string) []rec {
		var got []rec
		h := must(NewFirehose(func(ctx context.Context, r FirehoseRecord[[]byte]) (FirehoseResult, error) {
			m, ok := r.KinesisMetadata()
			if _, msk := r.MSKMetadata(); msk {
				t.Errorf("record %s has MSK metadata", r.RecordID())
			}
			got = append(got, rec{r, m, ok})
			return Transformed(r.Value), nil
		}, opts(WithConcurrency(1))...))
		if _, err := h.Invoke(context.Background(), []byte(ev)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := collect(firehoseKinesisSource)
	if len(got) != 2 {
		t.Fatalf("%d records", len(got))
	}
	r := got[1]
	if r.r.InvocationID() != "2b4d1ad9-2f48-94bd-a088-767c317e994a" || r.r.Region() != "us-east-2" ||
		r.r.SourceKinesisStreamARN() != "arn:aws:kinesis:us-east-1:123456789012:stream/kinesis-source" || r.r.SourceMSKARN() != "" ||
		r.r.DeliveryStreamARN != "arn:aws:firehose:us-east-2:123456789012:deliverystream/delivery-stream-name" || string(r.r.Value) != `{"Hello": "World"}` {
		t.Fatalf("record %+v", r.r)
	}
	if !r.ok || r.km.ShardID != "shardId-000000000001" || r.km.PartitionKey != "4d1ad2b9-24f8-4b9d-a088-76e9947c318a" ||
		r.km.SequenceNumber != "49546986683135544286507457936321625675700192471156785155" || r.km.SubsequenceNumber != 0 ||
		!r.km.ApproximateArrivalTimestamp.Equal(time.UnixMilli(1664028793294)) {
		t.Fatalf("kinesis metadata %+v %v", r.km, r.ok)
	}
	for _, r := range collect(firehoseDirectPut) {
		if r.ok || r.r.SourceKinesisStreamARN() != "" || r.r.InvocationID() == "" {
			t.Fatalf("Direct PUT record %+v", r)
		}
	}
}

type mskName struct {
	Name string `json:"Name"`
}

// A record from MSK decodes from its kafkaRecordValue, tells its Kafka
// metadata, and is answered with kafkaRecordValue, which Firehose reads
// (and the runner's reader, batchresponse.Firehose, reads as Firehose
// does). Before, it decoded from its missing data, and the answer carried
// data.
func TestFirehoseMSKSource(t *testing.T) {
	for _, fail := range []bool{false, true} {
		var got []FirehoseRecord[mskName]
		h := must(NewFirehose(func(ctx context.Context, r FirehoseRecord[mskName]) (FirehoseResult, error) {
			got = append(got, r)
			if fail {
				return FirehoseResult{}, errors.New("cannot enrich")
			}
			return Transformed([]byte(strings.ToUpper(r.Value.Name))), nil
		}, opts(WithConcurrency(1))...))
		out, err := h.Invoke(context.Background(), []byte(firehoseMSKEvent))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Value.Name != "Hello World" || got[0].SourceMSKARN() != "arn:aws:kafka:EXAMPLE" || got[0].Region() != "us-east-1" {
			t.Fatalf("records %+v", got)
		}
		m, ok := got[0].MSKMetadata()
		if _, kin := got[0].KinesisMetadata(); !ok || kin || m.Offset != "0" || m.PartitionID != "1" || !m.ArrivalTime.Equal(time.UnixMilli(1716369573887)) {
			t.Fatalf("MSK metadata %+v %v", m, ok)
		}
		var resp struct {
			Records []map[string]string `json:"records"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || len(resp.Records) != 1 {
			t.Fatalf("response %s: %v", out, err)
		}
		want := map[string]string{"recordId": "00000000000000000000000000000000000000000000000000000000000000", "result": "Ok",
			"kafkaRecordValue": base64.StdEncoding.EncodeToString([]byte("HELLO WORLD"))}
		if fail {
			want["result"], want["kafkaRecordValue"] = "ProcessingFailed", "eyJOYW1lIjoiSGVsbG8gV29ybGQifQ=="
		}
		if !equalJSON(resp.Records[0], want) {
			t.Fatalf("response %s, want %v", out, want)
		}
		v := batchresponse.Firehose(out, []string{"00000000000000000000000000000000000000000000000000000000000000"})
		if wantKind := map[bool]string{false: batchresponse.Success, true: batchresponse.Partial}[fail]; v.Kind != wantKind {
			t.Fatalf("read back as %+v", v)
		}
	}
}

// CloudWatch Logs data through Firehose: each record's data is the gzip of
// one message (a Firehose stream with a CloudWatch Logs subscription
// filter as its source writes records as Direct PUT does: firehoseDirectPut's
// shape). The control message is answered Dropped without running the
// function, as AWS's blueprint kinesis-firehose-cloudwatch-logs-processor
// answers it.
func TestCloudWatchLogsInFirehose(t *testing.T) {
	var kin events.KinesisEvent
	if err := json.Unmarshal([]byte(kinesisCloudWatchLogs), &kin); err != nil {
		t.Fatal(err)
	}
	ev := `{"invocationId":"2b4d1ad9-2f48-94bd-a088-767c317e994a","deliveryStreamArn":"arn:aws:firehose:us-east-2:123456789012:deliverystream/logs",` +
		`"region":"us-east-2","records":[` +
		`{"recordId":"record1","approximateArrivalTimestamp":1664029185290,"data":"` + base64.StdEncoding.EncodeToString(kin.Records[0].Kinesis.Data) + `"},` +
		`{"recordId":"record2","approximateArrivalTimestamp":1664029185291,"data":"` + base64.StdEncoding.EncodeToString(gz(t, cwlControlMessage)) + `"},` +
		`{"recordId":"record3","approximateArrivalTimestamp":1664029185292,"data":"` + base64.StdEncoding.EncodeToString([]byte("not gzip")) + `"}]}`
	var ran []string
	h := must(NewFirehose(func(ctx context.Context, r FirehoseRecord[CloudWatchLogs]) (FirehoseResult, error) {
		ran = append(ran, r.RecordID())
		var lines []string
		for _, e := range r.Value.LogEvents {
			lines = append(lines, e.Message)
		}
		return Transformed([]byte(strings.Join(lines, ""))), nil
	}, opts(WithConcurrency(1))...))
	out, err := h.Invoke(context.Background(), []byte(ev))
	if err != nil {
		t.Fatal(err)
	}
	var resp events.KinesisFirehoseResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"record1"}) || len(resp.Records) != 3 {
		t.Fatalf("ran %v, response %s", ran, out)
	}
	if r := resp.Records; r[0].Result != FirehoseOk || !strings.HasPrefix(string(r[0].Data), "START RequestId: 06e46194") ||
		r[1].Result != FirehoseDropped || r[2].Result != FirehoseProcessingFailed {
		t.Fatalf("response %s", out)
	}
}
