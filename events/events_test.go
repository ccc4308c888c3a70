package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/internal/testsupport/jsonshape"
)

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shape lists the key paths of a JSON document (see internal/testsupport/jsonshape).
func shape(t *testing.T, doc []byte) []string {
	t.Helper()
	p, err := jsonshape.Paths(doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var fixed = func() time.Time { return time.Date(2018, 12, 17, 22, 10, 50, 987e6, time.UTC) }

func TestBuildersMatchAWSShapes(t *testing.T) {
	kin := &KinesisBuilder{Clock: fixed}
	kin.Add("1", []byte("Hello, this is a test.")).Add("1", []byte("This is only a test."))

	ddb := &DynamoDBBuilder{Clock: fixed}
	type item struct {
		ID      int    `dynamodbav:"Id"`
		Message string `dynamodbav:"Message"`
	}
	key := map[string]int{"Id": 101}
	must(t, ddb.Insert(key, item{101, "New item!"}))
	must(t, ddb.Modify(key, item{101, "New item!"}, item{101, "This item has changed"}))
	must(t, ddb.Remove(key, item{101, "This item has changed"}))
	must(t, ddb.Expire(map[string]int{"Id": 102}, item{102, "Expired item"}))

	sqs := &SQSBuilder{Clock: fixed}
	sqs.Add("test").Add("test")
	fifo := &SQSBuilder{Clock: fixed, QueueARN: "arn:aws:sqs:us-east-2:123456789012:fifo.fifo"}
	fifo.AddFIFO("Test message.", "1", "1")

	msk := &KafkaBuilder{Clock: fixed, EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1"}
	msk.Add("mytopic", 0, []byte("k"), []byte("Hello"), KafkaHeader{"headerKey", []byte("headerValue")})
	self := &KafkaBuilder{Clock: fixed}
	self.Add("mytopic", 0, []byte("k"), []byte("Hello"), KafkaHeader{"headerKey", []byte("headerValue")})

	tests := []struct {
		golden string
		event  any
	}{
		{"kinesis.json", kin.Event()},
		{"sqs.json", sqs.Event()},
		{"sqs-fifo.json", fifo.Event()},
		{"msk.json", msk.Event()},
		{"self-managed-kafka.json", self.Event()},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got, err := MarshalEvent(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := shape(t, got), shape(t, golden(t, tt.golden)); !slices.Equal(g, w) {
				t.Fatalf("shape differs from the AWS sample\n got: %v\nwant: %v", g, w)
			}
		})
	}
	t.Run("dynamodb.json", func(t *testing.T) {
		// The AWS sample leaves ApproximateCreationDateTime out of some
		// records; Lambda sends it on all, so compare against the TTL record.
		got, _ := json.Marshal(ddb.Event())
		g := shape(t, got)
		w := shape(t, golden(t, "dynamodb.json"))
		if !slices.Equal(g, w) {
			t.Fatalf("shape differs\n got: %v\nwant: %v", g, w)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestBuilderSequencesIncrease(t *testing.T) {
	b := &KinesisBuilder{}
	for range 20 {
		b.Add("k", []byte("x"))
	}
	ev := b.Event()
	for i := 1; i < len(ev.Records); i++ {
		p, c := ev.Records[i-1].Kinesis.SequenceNumber, ev.Records[i].Kinesis.SequenceNumber
		if len(p) != 56 || len(c) != 56 || c <= p {
			t.Fatalf("sequence numbers must be 56 digits and increase: %s then %s", p, c)
		}
		if !strings.HasSuffix(ev.Records[i].EventID, ":"+c) {
			t.Fatalf("eventID %s must end with the sequence number", ev.Records[i].EventID)
		}
	}
	k := &KafkaBuilder{}
	k.Add("t", 0, nil, []byte("a")).Add("t", 1, nil, []byte("b")).Add("t", 0, nil, []byte("c"))
	kev := k.Event()
	if o := kev.Records["t-0"]; len(o) != 2 || o[0].Offset != 0 || o[1].Offset != 1 {
		t.Fatalf("t-0 offsets: %+v", o)
	}
	if kev.EventSource != "SelfManagedKafka" || kev.EventSourceARN != "" {
		t.Fatalf("no ARN means self-managed, got %q %q", kev.EventSource, kev.EventSourceARN)
	}
}

func TestKafkaHeadersAreSignedBytes(t *testing.T) {
	b := &KafkaBuilder{}
	val := []byte{0x00, 0x7f, 0x80, 0xff, 'h'}
	b.Add("t", 0, nil, []byte("v"), KafkaHeader{"bin", val})
	raw, err := json.Marshal(b.Event())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"bin":[0,127,-128,-1,104]`)) {
		t.Fatalf("header bytes >= 0x80 must serialise as negative numbers: %s", raw)
	}
	var back events.KafkaEvent
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if got := []byte(back.Records["t-0"][0].Headers[0]["bin"]); !bytes.Equal(got, val) {
		t.Fatalf("header round trip: got %v want %v", got, val)
	}
	var bad events.KafkaEvent
	if err := json.Unmarshal([]byte(`{"records":{"t-0":[{"headers":[{"h":[128]}]}]}}`), &bad); err == nil {
		t.Fatal("128 is outside a signed byte and must be rejected")
	}
}

func TestParseKafkaPartitionKey(t *testing.T) {
	tests := []struct {
		key       string
		topic     string
		partition int64
		ok        bool
	}{
		{"orders-0", "orders", 0, true},
		{"my-topic-with-dashes-12", "my-topic-with-dashes", 12, true},
		{"t-2147483647", "t", 2147483647, true},
		{"t-2147483648", "", 0, false},
		{"orders", "", 0, false},
		{"orders-", "", 0, false},
		{"-3", "", 0, false},
		{"orders--1", "orders-", 1, true},
		{"orders-1a", "", 0, false},
		{"orders-+1", "", 0, false},
		{"orders-007", "", 0, false},
		{"orders-0", "orders", 0, true},
		{"", "", 0, false},
	}
	for _, tt := range tests {
		topic, p, err := ParseKafkaPartitionKey(tt.key)
		if (err == nil) != tt.ok || topic != tt.topic || p != tt.partition {
			t.Errorf("ParseKafkaPartitionKey(%q) = %q, %d, %v", tt.key, topic, p, err)
		}
		if err != nil && !errors.Is(err, ErrBadKafkaPartitionKey) {
			t.Errorf("error must wrap ErrBadKafkaPartitionKey: %v", err)
		}
		if err == nil && KafkaPartitionKey(topic, p) != tt.key {
			t.Errorf("KafkaPartitionKey(%q, %d) does not give back %q", topic, p, tt.key)
		}
	}
}

func TestKafkaResponseJSON(t *testing.T) {
	r := KafkaEventResponse{BatchItemFailures: []KafkaBatchItemFailure{{ItemIdentifier: KafkaItemIdentifier{Partition: "orders-0", Offset: 100}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":100}}]}`; string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

func TestOnFailureRecordRoundTrip(t *testing.T) {
	raw := golden(t, "kinesis-on-failure.json")
	var r OnFailureRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.KinesisBatchInfo == nil || r.KinesisBatchInfo.BatchSize != 500 || r.RequestContext.Condition != ConditionRetryAttemptsExhausted {
		t.Fatalf("decoded %+v", r)
	}
	back, _ := json.Marshal(r)
	if g, w := shape(t, back), shape(t, raw); !slices.Equal(g, w) {
		t.Fatalf("round trip changes the shape\n got %v\nwant %v", g, w)
	}
}

func TestOnFailureRecordResponseContextShapes(t *testing.T) {
	unhandled := FunctionErrorUnhandled
	for _, tc := range []struct {
		name string
		rc   *OnFailureResponseContext
		want string
	}{
		{"function error", &OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: &unhandled},
			`"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"}`},
		{"failed through the response", &OnFailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"},
			`"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":null}`},
		{"record age exceeded", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(OnFailureRecord{ResponseContext: tc.rc, Version: "1.0"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if strings.Contains(string(b), "responseContext") {
					t.Fatalf("got %s, want no responseContext", b)
				}
				return
			}
			if !strings.Contains(string(b), tc.want) {
				t.Fatalf("got %s\nwant it to contain %s", b, tc.want)
			}
			var back OnFailureRecord
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if (back.ResponseContext.FunctionError == nil) != (tc.rc.FunctionError == nil) {
				t.Fatalf("functionError did not round-trip: %s", b)
			}
		})
	}
}

func TestImageRoundTripWithDynamoDBAVTags(t *testing.T) {
	type Address struct {
		City string `dynamodbav:"city"`
	}
	type Customer struct {
		ID      string            `dynamodbav:"pk"`
		Age     int               `dynamodbav:"age,omitempty"`
		Tags    []string          `dynamodbav:"tags,stringset"`
		Addr    Address           `dynamodbav:"addr"`
		Blob    []byte            `dynamodbav:"blob"`
		Active  bool              `dynamodbav:"active"`
		Extra   map[string]string `dynamodbav:"extra"`
		Skipped string            `dynamodbav:"-"`
		Nothing *string           `dynamodbav:"nothing,nullempty"`
	}
	in := Customer{ID: "c1", Age: 42, Tags: []string{"a", "b"}, Addr: Address{"Oslo"}, Blob: []byte{1, 2}, Active: true, Extra: map[string]string{"x": "y"}, Skipped: "no"}
	img, err := MarshalImage(in)
	if err != nil {
		t.Fatal(err)
	}
	if img["pk"].String() != "c1" || img["age"].Number() != "42" || img["tags"].DataType() != events.DataTypeStringSet {
		t.Fatalf("image %v", img)
	}
	if _, ok := img["Skipped"]; ok {
		t.Fatal(`dynamodbav:"-" must be left out`)
	}
	var out Customer
	if err := UnmarshalImage(img, &out); err != nil {
		t.Fatal(err)
	}
	in.Skipped = ""
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip\n got %+v\nwant %+v", out, in)
	}
	// Through JSON, as the image arrives in a stream event.
	raw, _ := json.Marshal(img)
	var back map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	out = Customer{}
	if err := UnmarshalImage(back, &out); err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("through JSON: %v %+v", err, out)
	}
	var wrong struct {
		ID int `dynamodbav:"pk"`
	}
	if err := UnmarshalImage(img, &wrong); err == nil {
		t.Fatal("a string into an int field must fail")
	}
}

// TestKinesisAddAggregated: the record carries the KPL's bytes and the
// first user record's partition key; its data deaggregates to the user
// records.
func TestKinesisAddAggregated(t *testing.T) {
	b := &KinesisBuilder{}
	users := []kpl.Record{{PartitionKey: "o-1", Data: []byte(`{"orderId":"o-1"}`)}, {PartitionKey: "o-2", ExplicitHashKey: "42", Data: []byte(`{"orderId":"o-2"}`)}}
	rec := b.AddAggregated(users...).Last()
	if rec.Kinesis.PartitionKey != "o-1" || string(rec.Kinesis.Data[:4]) != kpl.Magic {
		t.Fatalf("partition key %q, data %q", rec.Kinesis.PartitionKey, rec.Kinesis.Data)
	}
	got, ok, err := kpl.Deaggregate(rec.Kinesis.Data)
	if !ok || err != nil || len(got) != 2 || got[1].ExplicitHashKey != "42" || string(got[1].Data) != `{"orderId":"o-2"}` {
		t.Fatalf("ok %v err %v %+v", ok, err, got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("AddAggregated() of nothing did not panic")
		}
	}()
	b.AddAggregated()
}
