package localtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	awsevents "github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// badChecksum is a KPL aggregate whose MD5 trailer is wrong: a consumer
// reads it as an ordinary record, its bytes as they are.
func badChecksum() []byte {
	agg := kpl.Encode([]kpl.Record{{PartitionKey: "a", Data: []byte(`{"id":"u1"}`)}, {PartitionKey: "b", Data: []byte(`{"id":"u2"}`)}})
	agg[len(agg)-1] ^= 0xff
	return agg
}

// receipts records what the function received, per record, in delivery
// order.
type receipts struct {
	mu   sync.Mutex
	recs []json.RawMessage // Kinesis / DynamoDB / SQS Records elements, Kafka records
}

func (c *receipts) function() fn {
	return func(_ context.Context, p []byte) ([]byte, error) {
		var ev struct {
			Records json.RawMessage
		}
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		var list []json.RawMessage
		if json.Unmarshal(ev.Records, &list) == nil {
			c.recs = append(c.recs, list...)
			return []byte(`{}`), nil
		}
		var parts map[string][]json.RawMessage
		if err := json.Unmarshal(ev.Records, &parts); err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(parts))
		for k := range parts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c.recs = append(c.recs, parts[k]...)
		}
		return []byte(`{}`), nil
	}
}

// runCaptured runs recs through m's emulated source into a function that
// succeeds, and returns the records it received.
func runCaptured(t *testing.T, m *Mapping, recs []InputRecord) []json.RawMessage {
	t.Helper()
	c := &receipts{}
	rep, err := Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: InProcess(c.function())})
	if err != nil {
		t.Fatal(err)
	}
	// Every record of the run processed (a KPL aggregate's user records
	// are records of the run), every input record delivered.
	if rep.Totals.Processed != rep.Totals.Records || rep.Totals.Records < len(recs) || len(c.recs) != len(recs) {
		t.Fatalf("%d records: %d received, totals %+v", len(recs), len(c.recs), rep.Totals)
	}
	return c.recs
}

func eventFile(t *testing.T, ev any) []byte {
	t.Helper()
	raw, err := events.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// An event file's Kinesis data reaches the function byte for byte: gzip'd
// data, a KPL aggregate with a bad checksum, an aggregate whose user
// records are binary, an empty record, text. Before, bytes that were not
// UTF-8 became U+FFFD and the run went on with altered data.
func TestEventFileKinesisBytesReachTheFunction(t *testing.T) {
	binUsers := kpl.Encode([]kpl.Record{{PartitionKey: "a", Data: []byte{0, 0xff, 1}}, {PartitionKey: "b", Data: []byte("text")}})
	tagged := kpl.Encode([]kpl.Record{{PartitionKey: "a", Data: []byte("x"), Tags: []kpl.Tag{{Key: "k", Value: "v"}}}})
	datas := [][]byte{gzipped(t, `{"id":"o1"}`), badChecksum(), binUsers, tagged, {}, []byte(`{"id":"o2"}`), {0x00, 0x00, 0x00, 0x00, 0x07, 0x02}}
	b := &events.KinesisBuilder{Clock: bytesClock}
	for _, d := range datas {
		b.Add("pk", d)
	}
	recs, err := ReadRecordsFor(bytes.NewReader(eventFile(t, b.Event())), events.SourceKinesis, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := runCaptured(t, kinesisMapping(10, func(m *Mapping) { m.Shards = ptr(1) }), recs)
	for i, raw := range got {
		var r awsevents.KinesisEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Kinesis.Data, datas[i]) {
			t.Errorf("record %d: the function got % x, the file holds % x", i+1, r.Kinesis.Data, datas[i])
		}
	}
}

// An event file's Kafka keys, values and headers reach the function byte
// for byte, headers in their order with repeated names.
func TestEventFileKafkaBytesReachTheFunction(t *testing.T) {
	type rec struct {
		key, value []byte
		headers    []events.KafkaHeader
	}
	in := []rec{
		{[]byte{0xff, 'k'}, []byte{0, 0, 0, 0, 1, 0x0a, 'o', '1'}, []events.KafkaHeader{{Key: "z", Value: []byte{0x80}}, {Key: "a", Value: []byte("t")}, {Key: "z", Value: []byte("2")}}},
		{[]byte("k"), []byte(`{"id":"o2"}`), []events.KafkaHeader{{Key: "b", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}},
		{nil, gzipped(t, "x"), nil},
	}
	b := &events.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1", Clock: bytesClock}
	for _, r := range in {
		b.Add("orders", 0, r.key, r.value, r.headers...)
	}
	recs, err := ReadRecordsFor(bytes.NewReader(eventFile(t, b.Event())), events.SourceKafka, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := runCaptured(t, &Mapping{EventSource: events.SourceKafka, StartingPosition: "TRIM_HORIZON", Topic: "orders"}, recs)
	for i, raw := range got {
		var r awsevents.KafkaRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		key, _ := base64.StdEncoding.DecodeString(r.Key)
		value, _ := base64.StdEncoding.DecodeString(r.Value)
		if !bytes.Equal(key, in[i].key) || !bytes.Equal(value, in[i].value) {
			t.Errorf("record %d: key % x value % x; the file holds % x, % x", i+1, key, value, in[i].key, in[i].value)
		}
		var hs []events.KafkaHeader
		for _, h := range r.Headers {
			for k, v := range h {
				hs = append(hs, events.KafkaHeader{Key: k, Value: v})
			}
		}
		if fmt.Sprint(hs) != fmt.Sprint(in[i].headers) {
			t.Errorf("record %d: headers %v, the file holds %v", i+1, hs, in[i].headers)
		}
	}
}

// An event file's DynamoDB keys and images reach the function with every
// attribute's type: B and BS stay binary, SS and NS sets, L, M, BOOL, NULL
// and every digit of N as they are. Before, B became its base64 text (S)
// and sets became lists.
func TestEventFileDynamoDBTypesReachTheFunction(t *testing.T) {
	keys := map[string]awsevents.DynamoDBAttributeValue{"pk": awsevents.NewBinaryAttribute([]byte{0xff, 0}), "sk": awsevents.NewNumberAttribute("123456789012345678901234567890")}
	img := map[string]awsevents.DynamoDBAttributeValue{
		"pk":   awsevents.NewBinaryAttribute([]byte{0xff, 0}),
		"sk":   awsevents.NewNumberAttribute("123456789012345678901234567890"),
		"b":    awsevents.NewBinaryAttribute([]byte("AAE=")),
		"bs":   awsevents.NewBinarySetAttribute([][]byte{{1}, {2, 3}}),
		"ss":   awsevents.NewStringSetAttribute([]string{"x", "y"}),
		"ns":   awsevents.NewNumberSetAttribute([]string{"1", "2.50"}),
		"l":    awsevents.NewListAttribute([]awsevents.DynamoDBAttributeValue{awsevents.NewStringAttribute("1"), awsevents.NewNumberAttribute("1")}),
		"m":    awsevents.NewMapAttribute(map[string]awsevents.DynamoDBAttributeValue{"n": awsevents.NewNullAttribute()}),
		"t":    awsevents.NewBooleanAttribute(true),
		"null": awsevents.NewNullAttribute(),
	}
	b := &events.DynamoDBBuilder{Clock: bytesClock}
	if err := b.Insert(keys, img); err != nil {
		t.Fatal(err)
	}
	if err := b.Modify(keys, img, img); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRecordsFor(bytes.NewReader(eventFile(t, b.Event())), events.SourceDynamoDB, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := runCaptured(t, &Mapping{EventSource: events.SourceDynamoDB, StartingPosition: "TRIM_HORIZON", Shards: ptr(1)}, recs)
	want, _ := json.Marshal(img)
	wantKeys, _ := json.Marshal(keys)
	for i, raw := range got {
		var r awsevents.DynamoDBEventRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		k, _ := json.Marshal(r.Change.Keys)
		n, _ := json.Marshal(r.Change.NewImage)
		if string(k) != string(wantKeys) || string(n) != string(want) {
			t.Errorf("record %d:\nkeys %s\nwant %s\nnew image %s\nwant      %s", i+1, k, wantKeys, n, want)
		}
		if i == 1 {
			o, _ := json.Marshal(r.Change.OldImage)
			if string(o) != string(want) {
				t.Errorf("old image %s\nwant %s", o, want)
			}
		}
	}
}

// Records lines carry payloads that are not text in their base64 forms,
// and the function receives those bytes: Kinesis data and user records of
// an aggregate, Kafka keys, values and headers, DynamoDB attributes in
// AttributeValue JSON, an SQS body given as bytes of text.
func TestRecordsLineBase64Forms(t *testing.T) {
	avro := []byte{0, 0, 0, 0, 1, 0x04, 'o', '1'}
	t.Run("kinesis", func(t *testing.T) {
		recs := readLines(t, `{"partitionKey":"k","dataBase64":"`+enc64(gzipped(t, "x"))+`"}
{"partitionKey":"k","dataBase64":"`+enc64(badChecksum())+`"}
{"partitionKey":"k","dataBase64":""}
{"aggregate":[{"partitionKey":"a","dataBase64":"AP8B"},{"partitionKey":"b","data":{"id":"u"}}]}
{"partitionKey":"k","data":"{\"dataBase64\":\"AP8B\"}"}`)
		got := runCaptured(t, kinesisMapping(10, func(m *Mapping) { m.Shards = ptr(1) }), recs)
		wantAgg := kpl.Encode([]kpl.Record{{PartitionKey: "a", Data: []byte{0, 0xff, 1}}, {PartitionKey: "b", Data: []byte(`{"id":"u"}`)}})
		for i, want := range [][]byte{gzipped(t, "x"), badChecksum(), {}, wantAgg, []byte(`{"dataBase64":"AP8B"}`)} {
			var r awsevents.KinesisEventRecord
			json.Unmarshal(got[i], &r)
			if !bytes.Equal(r.Kinesis.Data, want) {
				t.Errorf("line %d: % x, want % x", i+1, r.Kinesis.Data, want)
			}
		}
	})
	t.Run("kafka", func(t *testing.T) {
		recs := readLines(t, `{"partition":0,"keyBase64":"/2s=","valueBase64":"`+enc64(avro)+`","headersBase64":[{"z":"gA=="},{"a":"dA=="},{"z":"Mg=="}]}
{"partition":0,"key":"k","value":{"id":"o2"},"headers":{"b":"1","a":"2"}}
{"partition":0,"key":"k","value":null}`)
		got := runCaptured(t, &Mapping{EventSource: events.SourceKafka, StartingPosition: "TRIM_HORIZON"}, recs)
		for i, want := range []struct{ key, value, headers string }{
			{"/2s=", enc64(avro), `[{"z":[-128]},{"a":[116]},{"z":[50]}]`},
			{"aw==", enc64([]byte(`{"id":"o2"}`)), `[{"b":[49]},{"a":[50]}]`},
			{"aw==", "", `[]`},
		} {
			var r struct {
				Key     string          `json:"key"`
				Value   *string         `json:"value"`
				Headers json.RawMessage `json:"headers"`
			}
			json.Unmarshal(got[i], &r)
			value := ""
			if r.Value != nil {
				value = *r.Value
			}
			if r.Key != want.key || value != want.value || string(r.Headers) != want.headers {
				t.Errorf("line %d: key %q value %q headers %s; want %q %q %s", i+1, r.Key, value, r.Headers, want.key, want.value, want.headers)
			}
		}
	})
	t.Run("dynamodb", func(t *testing.T) {
		recs := readLines(t, `{"dynamodb":{"Keys":{"pk":{"B":"/wA="}},"NewImage":{"pk":{"B":"/wA="},"tags":{"SS":["a","b"]},"n":{"NS":["1","2"]},"payload":{"S":"{\"id\":\"d1\"}"}}}}
{"keys":{"pk":"x","big":123456789012345678901234567890},"newImage":{"pk":"x"}}`)
		got := runCaptured(t, &Mapping{EventSource: events.SourceDynamoDB, StartingPosition: "TRIM_HORIZON", Shards: ptr(1)}, recs)
		var joined []string
		for _, raw := range got {
			var r awsevents.DynamoDBEventRecord
			json.Unmarshal(raw, &r)
			k, _ := json.Marshal(r.Change.Keys)
			n, _ := json.Marshal(r.Change.NewImage)
			joined = append(joined, string(k)+" "+string(n))
		}
		want := []string{`{"pk":{"B":"/wA="}} {"n":{"NS":["1","2"]},"payload":{"S":"{\"id\":\"d1\"}"},"pk":{"B":"/wA="},"tags":{"SS":["a","b"]}}`,
			`{"big":{"N":"123456789012345678901234567890"},"pk":{"S":"x"}} {"pk":{"S":"x"}}`}
		sort.Strings(joined)
		sort.Strings(want)
		if strings.Join(joined, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(joined, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("sqs", func(t *testing.T) {
		recs := readLines(t, `{"bodyBase64":"`+enc64([]byte("héllo\n"))+`"}`)
		got := runCaptured(t, &Mapping{EventSource: events.SourceSQS}, recs)
		var m awsevents.SQSMessage
		json.Unmarshal(got[0], &m)
		if m.Body != "héllo\n" {
			t.Errorf("body %q", m.Body)
		}
	})
}

func enc64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func readLines(t *testing.T, lines string) []InputRecord {
	t.Helper()
	recs, err := ReadRecords(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Lines that hold no record are refused with their line, as a misspelled
// field is, instead of becoming a message with an empty body.
func TestRecordsLinesThatHoldNoRecord(t *testing.T) {
	for _, tc := range []struct {
		name, lines string
		source      events.Source
		want        string
	}{
		{"null", "null", events.SourceSQS, "records line 1: null is not a record"},
		{"not UTF-8", "{\"body\":\"\xff\"}", events.SourceSQS, "records line 1: the line is not UTF-8 text (byte 9 is 0xff)"},
		{"an empty object on sqs", `{"body":"a"}` + "\n{}", events.SourceSQS, `records line 2: an SQS message needs a "body"`},
		{"expect only on sqs", `{"expect":"processed"}`, events.SourceSQS, `records line 1: an SQS message needs a "body"`},
		{"an empty object on kinesis", `{}`, events.SourceKinesis, `records line 1: a Kinesis record needs "data" or "dataBase64"`},
		{"an empty object on kafka", `{}`, events.SourceKafka, `records line 1: a Kafka record needs a "value"`},
		{"an empty object on dynamodb", `{}`, events.SourceDynamoDB, `records line 1: a DynamoDB record needs "keys"`},
		{"bad base64", `{"partitionKey":"k","dataBase64":"!!"}`, events.SourceKinesis, `records line 1: illegal base64 data`},
		{"a bad header", `{"value":1,"headers":{"a":1}}`, events.SourceKafka, `header "a": the value is not a string`},
		{"a header not base64", `{"value":1,"headersBase64":[{"a":"!"}]}`, events.SourceKafka, `header "a": the value is not base64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ReadRecords(strings.NewReader(tc.lines))
			if err == nil {
				m := &Mapping{EventSource: tc.source, StartingPosition: "TRIM_HORIZON"}
				if tc.source == events.SourceSQS {
					m.StartingPosition = ""
				}
				_, err = Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) {
					t.Fatal("the function was invoked")
					return nil, nil
				}))})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

func bytesClock() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// FuzzKafkaHeaders: any "headers" or "headersBase64" value is read or
// refused, never a panic; what is read writes back (the list form) and
// reads again to the same headers.
func FuzzKafkaHeaders(f *testing.F) {
	for _, s := range []string{`{"a":"1","b":"2"}`, `[{"z":"1"},{"a":"2"},{"z":"3"}]`, `{"a":"AAH/"}`, `null`, `[]`, `{}`, `[{"a":1}]`, `{"a":"x"} x`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, b64 bool) {
		hs, err := decodeHeaders(data, b64)
		if err != nil {
			return
		}
		out, err := encodeHeaders(hs, b64)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeHeaders(out, b64)
		if err != nil {
			t.Fatalf("%s does not read back: %v", out, err)
		}
		if !b64 {
			// Text goes through JSON strings, which carry UTF-8 only.
			for i := range hs {
				hs[i].Value = []byte(strings.ToValidUTF8(string(hs[i].Value), "\uFFFD"))
			}
		}
		if fmt.Sprint(back) != fmt.Sprint(hs) {
			t.Fatalf("%q read %v, wrote %s, read back %v", data, hs, out, back)
		}
	})
}
