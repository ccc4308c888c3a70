package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

func sqsEvent(t *testing.T, fifo bool, msgs ...[2]string) ([]byte, []string) {
	t.Helper()
	b := &sevents.SQSBuilder{}
	if fifo {
		b.QueueARN = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
	}
	for i, m := range msgs { // m = {group, action}
		b.AddFIFO(string(payload(fmt.Sprint(i), m[1])), m[0], "")
	}
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ev.Records))
	for i, r := range ev.Records {
		ids[i] = r.MessageId
	}
	return raw, ids
}

func pick(ids []string, idx ...int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, ids[i])
	}
	return out
}

func TestSQSStandardReportsEveryFailure(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "fail"}, [2]string{"", "ok"}, [2]string{"", "panic"}, [2]string{"", "permanent"}, [2]string{"", "ok"})
	var mu sync.Mutex
	seen := 0
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
		mu.Lock()
		seen++
		mu.Unlock()
		return act(r.Value.Action)
	}, opts(WithConcurrency(3))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); !slices.Equal(got, pick(ids, 1, 3, 4)) || seen != 6 {
		t.Fatalf("reported %v (seen %d), want %v", got, seen, pick(ids, 1, 3, 4))
	}
}

func TestSQSGoldenEvent(t *testing.T) {
	var got []string
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[string]) error {
		got = append(got, r.MessageID()+"|"+r.Body()+"|"+fmt.Sprint(r.ReceiveCount())+"|"+r.SentTime().UTC().Format(time.RFC3339Nano))
		return nil
	}, opts(WithConcurrency(1), WithCodec(CodecFunc(func(data []byte, v any) error {
		*(v.(*string)) = string(data)
		return nil
	})))...)
	out, err := h.Invoke(context.Background(), golden(t, "sqs.json"))
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	want := []string{
		"059f36b4-87a3-44ab-83d2-661975830a7d|test|1|2018-12-17T21:37:29.183Z",
		"2e1424d4-f796-459a-8184-9c92662be6da|test|1|2018-12-17T21:37:30.636Z",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestSQSFIFO(t *testing.T) {
	msgs := [][2]string{{"a", "ok"}, {"b", "ok"}, {"a", "fail"}, {"b", "ok"}, {"a", "ok"}, {"c", "ok"}}
	tests := []struct {
		name   string
		fifo   bool // queue ARN ends in .fifo
		ctor   func(fn func(context.Context, SQSRecord[msg]) error, o ...Option) (*SQSHandler[msg], error)
		extra  []Option
		seen   []string
		report []int
	}{
		{"stop at first failure and report every later message", true, NewSQS[msg], nil, []string{"0", "1", "2"}, []int{2, 3, 4, 5}},
		{"forced FIFO on a queue without suffix", false, NewSQSFIFO[msg], nil, []string{"0", "1", "2"}, []int{2, 3, 4, 5}},
		{"skip group reports only the failed group", true, NewSQS[msg], []Option{WithSkipGroupOnFailure()}, []string{"0", "1", "2", "3", "5"}, []int{2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ids := sqsEvent(t, tt.fifo, msgs...)
			var seen []string
			h, err := tt.ctor(func(ctx context.Context, r SQSRecord[msg]) error {
				seen = append(seen, r.Value.ID)
				return act(r.Value.Action)
			}, opts(tt.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := failures(t, out); !slices.Equal(got, pick(ids, tt.report...)) {
				t.Fatalf("reported %v, want %v", got, pick(ids, tt.report...))
			}
			if !slices.Equal(seen, tt.seen) {
				t.Fatalf("processed %v, want %v", seen, tt.seen)
			}
		})
	}
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[string]) error {
		if r.GroupID() != "1" {
			return errors.New("group")
		}
		return nil
	}, opts(WithCodec(CodecFunc(func([]byte, any) error { return nil })))...)
	if out, err := h.Invoke(context.Background(), golden(t, "sqs-fifo.json")); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("golden FIFO: %s %v", out, err)
	}
}

func TestSQSMalformedRecordFailsAlone(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"}, [2]string{"", "ok"})
	// Give the second message a wrongly typed attribute: encoding/json cannot
	// decode the event as a whole.
	var ev map[string][]map[string]any
	json.Unmarshal(raw, &ev)
	ev["Records"][1]["attributes"] = 42
	raw, _ = json.Marshal(ev)
	var seen []string
	h, _ := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
		seen = append(seen, r.Value.ID)
		return nil
	}, opts(WithConcurrency(1))...)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); !slices.Equal(got, pick(ids, 1)) || !slices.Equal(seen, []string{"0", "2"}) {
		t.Fatalf("reported %v seen %v", got, seen)
	}
	// Without a messageId the record cannot be reported alone.
	ev["Records"][1]["messageId"] = nil
	raw, _ = json.Marshal(ev)
	if out, err := h.Invoke(context.Background(), raw); err == nil || !strings.Contains(err.Error(), "identifier") {
		t.Fatalf("want a function error, got %s %v", out, err)
	}
}

type ddbItem struct {
	ID      int    `dynamodbav:"Id"`
	Message string `dynamodbav:"Message"`
}

func TestDynamoDBGoldenEvent(t *testing.T) {
	var got []string
	h, err := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbItem]) error {
		var k struct {
			ID int `dynamodbav:"Id"`
		}
		if err := r.UnmarshalKeys(&k); err != nil {
			return err
		}
		s := fmt.Sprintf("%s %s key=%d", r.SequenceNumber(), r.EventName(), k.ID)
		if r.Old != nil {
			s += " old=" + r.Old.Message
		}
		if r.New != nil {
			s += " new=" + r.New.Message
		}
		if r.Expired() {
			s += " ttl"
		}
		got = append(got, s)
		return nil
	}, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), golden(t, "dynamodb.json"))
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	want := []string{
		"111 INSERT key=101 new=New item!",
		"222 MODIFY key=101 old=New item! new=This item has changed",
		"333 REMOVE key=101 old=This item has changed",
		"444 REMOVE key=102 old=Expired item ttl",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestDynamoDBDecodeErrors(t *testing.T) {
	b := &sevents.DynamoDBBuilder{}
	k := map[string]int{"Id": 1}
	b.Insert(k, ddbItem{1, "a"})
	b.Insert(k, map[string]any{"Id": "not-a-number", "Message": "b"})
	b.Modify(k, ddbItem{1, "a"}, ddbItem{1, "c"})
	ev := b.Event()
	ev.Records[2].Change.NewImage = nil // a MODIFY on a NEW_AND_OLD_IMAGES stream without its new image
	raw, _ := json.Marshal(ev)
	var seen []string
	h, _ := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbItem]) error {
		seen = append(seen, r.SequenceNumber())
		return nil
	}, opts(WithPartialResponseWhenNoneSucceed())...)
	// Stream order: record 1 fails and stops the batch; it is reported.
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(t, out); !slices.Equal(got, []string{ev.Records[1].Change.SequenceNumber}) {
		t.Fatalf("reported %v", got)
	}
	// The missing image alone.
	ev.Records = ev.Records[2:]
	raw, _ = json.Marshal(ev)
	var logged error
	h2, _ := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbItem]) error { return nil }, quiet()...)
	_, logged = h2.Invoke(context.Background(), raw)
	if logged == nil || !strings.Contains(logged.Error(), "missing image") || !strings.Contains(logged.Error(), ev.Records[0].Change.SequenceNumber) {
		t.Fatalf("want an error naming the record and the missing image, got %v", logged)
	}
}

func TestDynamoDBKeysOnlyHasNoImages(t *testing.T) {
	b := &sevents.DynamoDBBuilder{StreamViewType: "KEYS_ONLY"}
	b.Insert(map[string]int{"Id": 7}, ddbItem{7, "x"})
	raw, _ := json.Marshal(b.Event())
	h, _ := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbItem]) error {
		if r.New != nil || r.Old != nil {
			return errors.New("KEYS_ONLY records carry no images")
		}
		return nil
	}, quiet()...)
	if out, err := h.Invoke(context.Background(), raw); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
}

func kafkaFailures(t *testing.T, out []byte) []sevents.KafkaItemIdentifier {
	t.Helper()
	var r sevents.KafkaEventResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	ids := []sevents.KafkaItemIdentifier{}
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestKafkaStopsOnlyTheFailedPartition(t *testing.T) {
	for _, msk := range []bool{true, false} {
		t.Run(fmt.Sprintf("msk=%v", msk), func(t *testing.T) {
			b := &sevents.KafkaBuilder{}
			if msk {
				b.EventSourceARN = "arn:aws:kafka:us-east-1:123456789012:cluster/demo/1"
			}
			for i, a := range []string{"ok", "fail", "ok", "ok"} {
				b.Add("orders", 0, []byte(fmt.Sprint("k", i)), payload(fmt.Sprint("p0-", i), a))
				b.Add("orders", 1, nil, payload(fmt.Sprint("p1-", i), "ok"))
			}
			raw, _ := sevents.MarshalEvent(b.Event())
			var mu sync.Mutex
			seen := map[int64][]int64{}
			h, err := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error {
				mu.Lock()
				seen[r.Partition()] = append(seen[r.Partition()], r.Offset())
				mu.Unlock()
				if r.Partition() == 0 && string(r.Key) != fmt.Sprint("k", r.Offset()) {
					return errors.New("key not decoded")
				}
				return act(r.Value.Action)
			}, opts(WithConcurrency(2))...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			want := []sevents.KafkaItemIdentifier{{Partition: "orders-0", Offset: 1}, {Partition: "orders-0", Offset: 2}, {Partition: "orders-0", Offset: 3}}
			if got := kafkaFailures(t, out); !slices.Equal(got, want) {
				t.Fatalf("reported %v, want %v", got, want)
			}
			if !slices.Equal(seen[0], []int64{0, 1}) || !slices.Equal(seen[1], []int64{0, 1, 2, 3}) {
				t.Fatalf("processed %v", seen)
			}
		})
	}
}

func TestKafkaGoldenEventsAndHeaders(t *testing.T) {
	for _, name := range []string{"msk.json", "self-managed-kafka.json"} {
		var got string
		h, _ := NewKafka(func(ctx context.Context, r KafkaRecord[[]byte]) error {
			hv, _ := r.Header("headerKey")
			got = fmt.Sprintf("%s %s %d %s %s", r.TopicPartition(), r.Value, r.Offset(), hv, r.Timestamp().UTC().Format(time.RFC3339Nano))
			return nil
		}, quiet()...)
		out, err := h.Invoke(context.Background(), golden(t, name))
		if err != nil || len(kafkaFailures(t, out)) != 0 {
			t.Fatalf("%s: %s %v", name, out, err)
		}
		if want := "mytopic-0 Hello, this is a test. 15 headerValue 2018-12-17T22:10:50.987Z"; got != want {
			t.Fatalf("%s: got %q want %q", name, got, want)
		}
	}
	// A header with bytes >= 0x80 arrives as negative numbers.
	raw := []byte(`{"eventSource":"SelfManagedKafka","records":{"t-0":[{"topic":"t","partition":0,"offset":3,"timestamp":1,"value":"eyJpZCI6IjEiLCJhY3Rpb24iOiJvayJ9","headers":[{"sig":[-1,-128,127,0]}]}]}}`)
	var hv []byte
	h, _ := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error {
		hv, _ = r.Header("sig")
		return nil
	}, quiet()...)
	if _, err := h.Invoke(context.Background(), raw); err != nil || !slices.Equal(hv, []byte{0xff, 0x80, 0x7f, 0}) {
		t.Fatalf("header %v err %v", hv, err)
	}
}

func TestKafkaMalformedRecordAndTombstone(t *testing.T) {
	raw := []byte(`{"eventSource":"SelfManagedKafka","records":{"t-0":[
		{"topic":"t","partition":0,"offset":1,"timestamp":1,"value":"eyJpZCI6IjEiLCJhY3Rpb24iOiJvayJ9"},
		{"topic":"t","partition":0,"offset":2,"timestamp":1},
		{"topic":"t","partition":0,"offset":3,"timestamp":1,"value":"eyJpZCI6IjEiLCJhY3Rpb24iOiJvayJ9","headers":[{"h":[300]}]},
		{"topic":"t","partition":0,"offset":4,"timestamp":1,"value":"!!!"}],
		"t-1":[{"topic":"t","partition":1,"offset":9,"timestamp":1,"value":"!!!"}]}}`)
	var tomb []int64
	h, _ := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error {
		if r.Tombstone {
			tomb = append(tomb, r.Offset())
		}
		return nil
	}, opts(WithConcurrency(1))...)
	out, err := h.Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	want := []sevents.KafkaItemIdentifier{{Partition: "t-0", Offset: 3}, {Partition: "t-0", Offset: 4}, {Partition: "t-1", Offset: 9}}
	if got := kafkaFailures(t, out); !slices.Equal(got, want) || !slices.Equal(tomb, []int64{2}) {
		t.Fatalf("reported %v tombstones %v", got, tomb)
	}
}

func TestResponsesAreNeverPartialWithError(t *testing.T) {
	// Whatever the mix of outcomes, a handler answers either a body or an
	// error, never both.
	actions := []string{"ok", "fail", "panic", "permanent"}
	for mask := 0; mask < 1<<8; mask++ {
		var acts []string
		for i := 0; i < 4; i++ {
			acts = append(acts, actions[(mask>>(2*i))&3])
		}
		raw, _ := kinesisTestEvent(acts...)
		h, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) }, quiet()...)
		out, err := h.Invoke(context.Background(), raw)
		if (out == nil) == (err == nil) {
			t.Fatalf("%v: body %s and error %v", acts, out, err)
		}
		if err == nil {
			var r events.KinesisEventResponse
			if json.Unmarshal(out, &r) != nil {
				t.Fatalf("%v: invalid JSON %s", acts, out)
			}
		}
	}
}
