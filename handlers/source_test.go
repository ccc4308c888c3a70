package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	sevents "github.com/sluicehq/sluice/events"
)

// sourceEvents are one small event of every source, keyed by name, with the
// eventSource it carries ("" when it carries none).
func sourceEvents(t *testing.T) map[string]struct {
	raw []byte
	src string
} {
	t.Helper()
	mustJSON := func(v any, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		switch b := v.(type) {
		case []byte:
			return b
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	kin := (&sevents.KinesisBuilder{}).Add("pk", payload("1", "ok")).Add("pk", payload("2", "ok")).Event()
	ddb := &sevents.DynamoDBBuilder{}
	ddb.Insert(map[string]int{"Id": 1}, ddbItem{1, "a"})
	sqs := (&sevents.SQSBuilder{}).Add(string(payload("1", "ok"))).Event()
	fifo := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}
	fifo.AddFIFO(string(payload("1", "ok")), "g", "")
	msk := (&sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/demo/1"}).Add("t", 0, nil, payload("1", "ok")).Event()
	smk := (&sevents.KafkaBuilder{}).Add("t", 0, nil, payload("1", "ok")).Event()
	mixed := (&sevents.KinesisBuilder{}).Add("pk", payload("1", "ok")).Add("pk", payload("2", "ok")).Event()
	mixed.Records[1].EventSource = "aws:sqs"
	return map[string]struct {
		raw []byte
		src string
	}{
		"kinesis":                    {mustJSON(kin, nil), sourceKinesis},
		"dynamodb":                   {mustJSON(ddb.Event(), nil), sourceDynamoDB},
		"sqs":                        {mustJSON(sevents.MarshalEvent(sqs)), sourceSQS},
		"sqs-fifo":                   {mustJSON(sevents.MarshalEvent(fifo.Event())), sourceSQS},
		"msk":                        {mustJSON(sevents.MarshalEvent(msk)), sourceMSK},
		"self-managed-kafka":         {mustJSON(sevents.MarshalEvent(smk)), sourceSelfManagedKafka},
		"kinesis with an sqs record": {mustJSON(mixed, nil), sourceSQS},
		"s3":                         {[]byte(`{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}]}`), "aws:s3"},
		"eventbridge":                {[]byte(`{"version":"0","id":"x","detail-type":"d","source":"aws.events","detail":{}}`), ""},
		"empty object":               {[]byte(`{}`), ""},
		"null":                       {[]byte(`null`), ""},
	}
}

func TestSourceMismatch(t *testing.T) {
	type handler struct {
		h       lambda.Handler
		name    string
		accepts []string // event names it serves
		want    []string
		array   string
	}
	ran := 0
	count := func() error { ran++; return nil }
	handlersUnderTest := []handler{
		{must(NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return count() }, quiet()...)),
			"handlers.NewKinesis", []string{"kinesis"}, []string{"aws:kinesis"}, "Records"},
		{MustKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return count() }, quiet()...),
			"handlers.MustKinesis", []string{"kinesis"}, []string{"aws:kinesis"}, "Records"},
		{MustDynamoDB(func(ctx context.Context, r DynamoDBRecord[ddbItem]) error { return count() }, quiet()...),
			"handlers.MustDynamoDB", []string{"dynamodb"}, []string{"aws:dynamodb"}, "Records"},
		{MustSQS(func(ctx context.Context, r SQSRecord[msg]) error { return count() }, quiet()...),
			"handlers.MustSQS", []string{"sqs", "sqs-fifo"}, []string{"aws:sqs"}, "Records"},
		{MustSQSFIFO(func(ctx context.Context, r SQSRecord[msg]) error { return count() }, quiet()...),
			"handlers.MustSQSFIFO", []string{"sqs", "sqs-fifo"}, []string{"aws:sqs"}, "Records"},
		{must(NewSQSFIFO(func(ctx context.Context, r SQSRecord[msg]) error { return count() }, quiet()...)),
			"handlers.NewSQSFIFO", []string{"sqs", "sqs-fifo"}, []string{"aws:sqs"}, "Records"},
		{MustKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return count() }, quiet()...),
			"handlers.MustKafka", []string{"msk", "self-managed-kafka"}, []string{"aws:kafka", "SelfManagedKafka"}, "records"},
	}
	evs := sourceEvents(t)
	for _, h := range handlersUnderTest {
		for name, ev := range evs {
			t.Run(h.name+"/"+name, func(t *testing.T) {
				ran = 0
				out, err := h.h.Invoke(context.Background(), ev.raw)
				if slices.Contains(h.accepts, name) {
					if err != nil || ran == 0 {
						t.Fatalf("its own source: want records run and a response, got %s %v (ran %d)", out, err, ran)
					}
					return
				}
				var sm *SourceMismatchError
				if !errors.As(err, &sm) || out != nil {
					t.Fatalf("want a *SourceMismatchError and no body, got %s %v", out, err)
				}
				if ran != 0 {
					t.Fatalf("%d records ran", ran)
				}
				// aws-lambda-go names a returned error's type without the
				// pointer: errorType "SourceMismatchError". It must be the
				// returned error itself, not wrapped.
				if typ := reflect.TypeOf(err); typ.Kind() != reflect.Pointer || typ.Elem().Name() != "SourceMismatchError" {
					t.Fatalf("errorType would be %v", typ)
				}
				if name == "kinesis with an sqs record" && !slices.Contains(h.accepts, "kinesis") {
					ev.src = sourceKinesis // its first record is the first from another source
				}
				if sm.Handler != h.name || sm.Got != ev.src || !slices.Equal(sm.Want, h.want) || sm.Array != h.array {
					t.Fatalf("got %+v, want handler %s, got %q, want %v, array %s", sm, h.name, ev.src, h.want, h.array)
				}
			})
		}
	}
}

func TestSourceMismatchMessages(t *testing.T) {
	evs := sourceEvents(t)
	kin := MustKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return nil }, quiet()...)
	kafka := MustKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return nil }, quiet()...)
	for _, tt := range []struct {
		h    lambda.Handler
		ev   string
		want string
	}{
		{kin, "sqs", "event records come from aws:sqs but this handler expects aws:kinesis (handlers.MustKinesis): " +
			"the event source mapping and the handler do not match"},
		{kin, "empty object", `event has no "Records" array of aws:kinesis records, which this handler expects (handlers.MustKinesis): ` +
			"the event source mapping and the handler do not match"},
		{kafka, "dynamodb", "event records come from aws:dynamodb but this handler expects aws:kafka or SelfManagedKafka (handlers.MustKafka): " +
			"the event source mapping and the handler do not match"},
	} {
		_, err := tt.h.Invoke(context.Background(), evs[tt.ev].raw)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s:\n got %v\nwant %s", tt.ev, err, tt.want)
		}
	}
}

func TestMalformedEventIsNotASourceMismatch(t *testing.T) {
	kin := MustKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return nil }, quiet()...)
	sqs := MustSQS(func(ctx context.Context, r SQSRecord[msg]) error { return nil }, quiet()...)
	kafka := MustKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return nil }, quiet()...)
	for _, in := range []string{`{"Records":[`, `[]`, `{"Records":"x"}`, ``, `"x"`} {
		for _, h := range []lambda.Handler{kin, sqs} {
			_, err := h.Invoke(context.Background(), []byte(in))
			var sm *SourceMismatchError
			if err == nil || errors.As(err, &sm) {
				t.Errorf("%q: want a plain decode error, got %v", in, err)
			}
		}
	}
	for _, in := range []string{`{"records":[`, `{"records":"x"}`} {
		_, err := kafka.Invoke(context.Background(), []byte(in))
		var sm *SourceMismatchError
		if err == nil || errors.As(err, &sm) {
			t.Errorf("%q: want a plain decode error, got %v", in, err)
		}
	}
	// An empty batch of the right shape is no error.
	for h, in := range map[lambda.Handler]string{kin: `{"Records":[]}`, sqs: `{"Records":[]}`, kafka: `{"eventSource":"aws:kafka","records":{}}`} {
		if out, err := h.Invoke(context.Background(), []byte(in)); err != nil || out == nil {
			t.Errorf("%s: %s %v", in, out, err)
		}
	}
}
