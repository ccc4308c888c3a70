package largemessage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sluicehq/sluice/batch"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/largemessage"
)

type order struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

// s3Client starts gofakes3, an S3 API server, on 127.0.0.1 and returns an
// aws-sdk-go-v2 client of it, as the S3 destination tests do.
func s3Client(t testing.TB) *s3.Client {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), BaseEndpoint: aws.String(srv.URL)}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
}

// pointer is a message body as the SQS Extended Client Library writes it
// for an offloaded payload (the PayloadS3Pointer of the payload offloading
// library it uses; see
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-s3-messages.html),
// with the ExtendedPayloadSize message attribute it sets beside it.
func pointer(bucket, key string) string {
	return `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"` + bucket + `","s3Key":"` + key + `"}]`
}

func sizeAttr(name string, n int) map[string]events.SQSMessageAttribute {
	v := strconv.Itoa(n)
	return map[string]events.SQSMessageAttribute{name: {StringValue: &v, DataType: "Number"}}
}

// TestSQSOffloadedMessages reads offloaded payloads from a real S3 API
// server over HTTP.
func TestSQSOffloadedMessages(t *testing.T) {
	ctx := context.Background()
	c := s3Client(t)
	bucket := "large-messages"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	big := order{ID: "big"}
	for i := range 20000 {
		big.Lines = append(big.Lines, fmt.Sprintf("line %05d of a payload over SQS's 256 KiB", i))
	}
	payload, _ := json.Marshal(big)
	if len(payload) < 256<<10 {
		t.Fatalf("payload of %d bytes is not large", len(payload))
	}
	key := "9a6b8f3e-6a2f-4c55-9d0b-1c2d3e4f5a6b"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(payload)}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}

	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	b.Add(pointer(bucket, key))             // offloaded
	b.Add(`{"id":"small","lines":["one"]}`) // sent as is
	b.Add(pointer(bucket, "gone"))          // the object is missing
	b.Add(pointer(bucket, key))             // the size attribute does not match
	b.Add(pointer(bucket, key))             // the legacy attribute name
	b.Add(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":""}]`)
	ev := b.Event()
	ev.Records[0].MessageAttributes = sizeAttr(largemessage.SizeAttribute, len(payload))
	ev.Records[2].MessageAttributes = sizeAttr(largemessage.SizeAttribute, 10)
	ev.Records[3].MessageAttributes = sizeAttr(largemessage.SizeAttribute, len(payload)-1)
	ev.Records[4].MessageAttributes = sizeAttr(largemessage.LegacySizeAttribute, len(payload))
	ev.Records[5].MessageAttributes = sizeAttr(largemessage.SizeAttribute, 10)
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}

	var got []order
	var errs []error
	h, err := handlers.NewSQS(largemessage.SQS(c, func(ctx context.Context, r handlers.SQSRecord[order]) error {
		got = append(got, r.Value)
		return nil
	}), handlers.WithConcurrency(1), handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithoutRetry(),
		handlers.WithOnBatch(func(_ context.Context, r handlers.BatchReport) {
			for _, o := range r.Records {
				errs = append(errs, o.Err)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, f := range resp.BatchItemFailures {
		reported = append(reported, f.ItemIdentifier)
	}
	if want := []string{ev.Records[2].MessageId, ev.Records[3].MessageId, ev.Records[5].MessageId}; !slices.Equal(reported, want) {
		t.Fatalf("reported %v, want %v; errors %v", reported, want, errs)
	}
	if len(got) != 3 || got[0].ID != "big" || len(got[0].Lines) != 20000 || got[1].ID != "small" || got[2].ID != "big" {
		t.Fatalf("decoded %d orders", len(got))
	}
	for i, want := range map[int]string{2: "is gone", 3: "says", 5: "lacks s3BucketName"} {
		if errs[i] == nil || !strings.Contains(errs[i].Error(), want) || batch.Classify(errs[i]) != batch.ClassPermanent {
			t.Errorf("message %d: error %v, want one that %s", i, errs[i], want)
		}
	}
}

// An S3 error other than a missing object or bucket fails the message as
// a plain error (SQS redelivers it); a missing object fails it permanently.
func TestSQSTransientError(t *testing.T) {
	fail := getObjectFunc(func(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
		return nil, errors.New("connection reset")
	})
	body := pointer("b", "k")
	_, err := largemessage.Payload(context.Background(), fail, body, sizeAttr(largemessage.SizeAttribute, 3), largemessage.DefaultMaxSize)
	if batch.Classify(err) != batch.ClassPlain || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("error %v (%v)", err, batch.Classify(err))
	}
}

type getObjectFunc func(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)

func (f getObjectFunc) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return f(ctx, in, o...)
}

// memS3 is a bucket in memory, for the example and the benchmark.
type memS3 map[string][]byte

func (m memS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b, ok := m[*in.Bucket+"/"+*in.Key]
	if !ok {
		return nil, errors.New("no such object")
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b))}, nil
}

func TestParsePointer(t *testing.T) {
	for _, tc := range []struct {
		body string
		p    largemessage.Pointer
		ok   bool
		err  bool
	}{
		{pointer("b", "k"), largemessage.Pointer{Bucket: "b", Key: "k"}, true, false},
		{" " + pointer("b", "a/b c") + "\n", largemessage.Pointer{Bucket: "b", Key: "a/b c"}, true, false},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]`, largemessage.Pointer{}, true, true},
		{`["software.amazon.payloadoffloading.PayloadS3Pointer",[]]`, largemessage.Pointer{}, true, true},
		{`["com.amazon.sqs.javamessaging.MessageS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`, largemessage.Pointer{Bucket: "b", Key: "k"}, true, false},
		{`["com.amazon.sqs.javamessaging.MessageS3Pointer", {"s3BucketName": "b", "s3Key": "k"}]`, largemessage.Pointer{Bucket: "b", Key: "k"}, true, false},
		{`["com.example.OtherPointer",{"s3BucketName":"b","s3Key":"k"}]`, largemessage.Pointer{}, false, false},
		{`["a","b","c"]`, largemessage.Pointer{}, false, false},
		{`{"s3BucketName":"b","s3Key":"k"}`, largemessage.Pointer{}, false, false},
		{`Hello World`, largemessage.Pointer{}, false, false},
		{``, largemessage.Pointer{}, false, false},
	} {
		p, ok, err := largemessage.ParsePointer(tc.body)
		if p != tc.p || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("ParsePointer(%q) = %+v, %v, %v", tc.body, p, ok, err)
		}
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{pointer("b", "k"), `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"\u00e9","s3Key":1}]`, `[`, `[]`, `["x",{}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p, ok, err := largemessage.ParsePointer(body)
		if !ok && (err != nil || p != (largemessage.Pointer{})) {
			t.Fatalf("not a pointer, yet %+v %v", p, err)
		}
		if ok && err == nil {
			if p.Bucket == "" || p.Key == "" {
				t.Fatalf("a pointer without bucket or key: %+v", p)
			}
			// What a pointer holds survives a round trip through the
			// Extended Client's own format.
			b, _ := json.Marshal([]any{largemessage.PointerClass, p})
			q, ok2, err2 := largemessage.ParsePointer(string(b))
			if !ok2 || err2 != nil || q != p {
				t.Fatalf("%q: %+v, then %s: %+v %v %v", body, p, b, q, ok2, err2)
			}
		}
	})
}

func BenchmarkSQSOffloaded(b *testing.B) {
	payload := []byte(`{"id":"o-1","lines":["a","b","c"]}`)
	store := memS3{"bucket/key": payload}
	sb := &sevents.SQSBuilder{}
	for range 100 {
		sb.Add(pointer("bucket", "key"))
	}
	ev := sb.Event()
	for i := range ev.Records {
		ev.Records[i].MessageAttributes = sizeAttr(largemessage.SizeAttribute, len(payload))
	}
	raw, _ := sevents.MarshalEvent(ev)
	h, err := handlers.NewSQS(largemessage.SQS(store, func(ctx context.Context, r handlers.SQSRecord[order]) error { return nil }),
		handlers.WithConcurrency(1), handlers.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, err := h.Invoke(context.Background(), raw); err != nil || string(out) != `{"batchItemFailures":[]}` {
			b.Fatalf("%s %v", out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/record")
}
