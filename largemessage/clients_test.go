package largemessage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/largemessage"
	"github.com/sluicehq/sluice/localtest/source"
)

func TestMain(m *testing.M) {
	code := m.Run()
	_ = servers.StopAll()
	os.Exit(code)
}

// producer is one way a reference client writes an offloaded message: the
// pointer's class name, the size attribute's name and the JSON spacing.
//
// The Java client (awslabs/amazon-sqs-java-extended-client-lib,
// AmazonSQSExtendedClient.storeMessageInS3) writes the pointer with
// PayloadS3Pointer.toJson of awslabs/payload-offloading-java-common-lib-for-aws
// (Jackson with default typing NON_FINAL: the compact array
// ["<class>",{"s3BucketName":...,"s3Key":...}]) and the size attribute with
// AmazonSQSExtendedClientUtil.updateMessageAttributePayloadSize: DataType
// Number, the body's size in UTF-8 bytes, under SQSLargePayloadSize unless
// the configuration says withLegacyReservedAttributeNameDisabled
// (ExtendedClientConfiguration's useLegacyReservedAttributeName is true by
// default). Its version 1 wrote the class com.amazon.sqs.javamessaging.MessageS3Pointer,
// which the current receiveMessage still replaces with the current name.
//
// The Python client (awslabs/amazon-sqs-python-extended-client-lib,
// src/sqs_extended_client/client.py, _store_message_in_s3) writes
// json.dumps([class, {"s3BucketName": ..., "s3Key": ...}]), with Python's
// default separators ", " and ": ", and ExtendedPayloadSize, or with
// use_legacy_attribute the legacy class and SQSLargePayloadSize.
type producer struct {
	name, class, attr string
	python            bool
}

var producers = []producer{
	{"java default", largemessage.PointerClass, largemessage.LegacySizeAttribute, false},
	{"java withLegacyReservedAttributeNameDisabled", largemessage.PointerClass, largemessage.SizeAttribute, false},
	{"java 1.x", largemessage.LegacyPointerClass, largemessage.LegacySizeAttribute, false},
	{"python", largemessage.PointerClass, largemessage.SizeAttribute, true},
	{"python use_legacy_attribute", largemessage.LegacyPointerClass, largemessage.LegacySizeAttribute, true},
}

func (p producer) body(bucket, key string) string {
	if p.python {
		return `["` + p.class + `", {"s3BucketName": "` + bucket + `", "s3Key": "` + key + `"}]`
	}
	return `["` + p.class + `",{"s3BucketName":"` + bucket + `","s3Key":"` + key + `"}]`
}

// s3Servers are the S3 API servers the pointers are read from: gofakes3,
// the S3 server the runner's destination tests use, and fauxqs, the SQS,
// SNS and S3 server that sluice local start runs (its S3 API on the same
// endpoint as its SQS API).
func s3Servers(t *testing.T) map[string]*s3.Client {
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	fake := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), BaseEndpoint: aws.String(srv.URL)}
	return map[string]*s3.Client{
		"gofakes3": s3.NewFromConfig(fake, func(o *s3.Options) { o.UsePathStyle = true }),
		"fauxqs":   s3.NewFromConfig(servers.SQS(t).AWSConfig(), func(o *s3.Options) { o.UsePathStyle = true }),
	}
}

// TestReferenceClientsMessages does what a new user does: a producer
// offloads payloads as each reference client writes them (the object in
// S3, the pointer and its attribute sent to an SQS queue on fauxqs), the
// runner's SQS source receives them as Lambda's event records, and an SQS
// handler wrapped in largemessage.SQS reads them back. Every client's
// pointer resolves; a pointer into a missing bucket or to a missing
// object fails its message permanently, and a message whose legacy
// attribute does not match names that attribute.
func TestReferenceClientsMessages(t *testing.T) {
	ctx := context.Background()
	sqsClient := sqs.NewFromConfig(servers.SQS(t).AWSConfig())
	for name, s3c := range s3Servers(t) {
		t.Run(name, func(t *testing.T) {
			bucket := "payloads-" + name
			if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
				t.Fatalf("CreateBucket: %v", err)
			}
			// Over the clients' 256 KiB threshold, with text that is longer
			// in UTF-8 bytes than in characters (the size attribute counts
			// bytes).
			big := order{ID: "big"}
			for i := range 10000 {
				big.Lines = append(big.Lines, fmt.Sprintf("ligne %05d, déjà payée", i))
			}
			payload, _ := json.Marshal(big)
			if len(payload) <= 256<<10 {
				t.Fatalf("payload of %d bytes is under the clients' threshold", len(payload))
			}
			put := func(key string, b []byte) {
				t.Helper()
				if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(b)}); err != nil {
					t.Fatalf("PutObject: %v", err)
				}
			}
			queueName := servers.UniqueName(t, "orders")
			q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &queueName})
			if err != nil {
				t.Fatal(err)
			}
			send := func(body, attr string, size int) string {
				t.Helper()
				out, err := sqsClient.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: &body,
					MessageAttributes: map[string]sqstypes.MessageAttributeValue{attr: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(size))}}})
				if err != nil {
					t.Fatalf("SendMessage: %v", err)
				}
				return aws.ToString(out.MessageId)
			}

			ok := map[string]string{} // message id -> producer
			for i, p := range producers {
				key := fmt.Sprintf("9a6b8f3e-6a2f-4c55-9d0b-1c2d3e4f5a6%d", i)
				put(key, payload)
				ok[send(p.body(bucket, key), p.attr, len(payload))] = p.name
			}
			current, python, legacy := producers[1], producers[3], producers[2]
			want := map[string]string{ // message id -> what its error must say
				send(current.body("no-such-bucket-"+bucket, "k"), current.attr, 10):                            "the bucket no-such-bucket-" + bucket + " does not exist",
				send(python.body(bucket, "gone"), python.attr, 10):                                             "is gone",
				send(legacy.body(bucket, "9a6b8f3e-6a2f-4c55-9d0b-1c2d3e4f5a60"), legacy.attr, len(payload)+1): "but the message's SQSLargePayloadSize says",
				send(`{"id":"not offloaded"}`, legacy.attr, 10):                                                "the message has the SQSLargePayloadSize attribute but its body is not an S3 pointer",
			}

			msgs, err := source.SQSQueue(servers.SQS(t).AWSConfig(), aws.ToString(q.QueueUrl)).Receive(ctx, 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != len(ok)+len(want) {
				t.Fatalf("received %d messages, want %d", len(msgs), len(ok)+len(want))
			}
			recs := make([]json.RawMessage, len(msgs))
			for i, m := range msgs {
				recs[i] = m.Event
			}
			event, _ := json.Marshal(map[string]any{"Records": recs})

			ran := map[string]int{}
			errs := map[string]error{}
			h, err := handlers.NewSQS(largemessage.SQS(s3c, func(ctx context.Context, r handlers.SQSRecord[order]) error {
				if r.Value.ID != "big" || len(r.Value.Lines) != 10000 || r.Value.Lines[9999] != "ligne 09999, déjà payée" {
					return fmt.Errorf("decoded %q with %d lines", r.Value.ID, len(r.Value.Lines))
				}
				ran[r.Raw.MessageId]++
				return nil
			}), handlers.WithConcurrency(1), handlers.WithoutRetry(), handlers.WithLogger(slog.New(slog.DiscardHandler)),
				handlers.WithOnBatch(func(_ context.Context, r handlers.BatchReport) {
					for _, o := range r.Records {
						errs[o.ID] = o.Err
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(ctx, event)
			if err != nil {
				t.Fatal(err)
			}
			for id, p := range ok {
				if ran[id] != 1 {
					t.Errorf("%s: the pointer did not resolve: %v", p, errs[id])
				}
			}
			for id, says := range want {
				if e := errs[id]; e == nil || !strings.Contains(e.Error(), says) || batch.Classify(e) != batch.ClassPermanent {
					t.Errorf("message %s: error %v (%v), want a permanent one that says %q", id, e, batch.Classify(e), says)
				}
				if !strings.Contains(string(out), id) {
					t.Errorf("message %s is not reported in %s", id, out)
				}
			}
		})
	}
}

// A missing bucket is told by the code S3 answers: GetObject's
// deserializer does not type NoSuchBucket (the real servers above answer
// it as a generic API error). Any other code stays a plain error.
func TestMissingClassifiedByCode(t *testing.T) {
	for _, tc := range []struct {
		err   error
		class batch.Class
	}{
		{&smithy.GenericAPIError{Code: "NoSuchBucket", Message: "The specified bucket does not exist"}, batch.ClassPermanent},
		{&smithy.GenericAPIError{Code: "NoSuchKey", Message: "The specified key does not exist."}, batch.ClassPermanent},
		{fmt.Errorf("operation error S3: GetObject: %w", &smithy.GenericAPIError{Code: "NoSuchBucket"}), batch.ClassPermanent},
		{&smithy.GenericAPIError{Code: "AccessDenied"}, batch.ClassPlain},
		{&smithy.GenericAPIError{Code: "SlowDown"}, batch.ClassPlain},
		{errors.New("connection reset"), batch.ClassPlain},
	} {
		get := getObjectFunc(func(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
			return nil, tc.err
		})
		_, err := largemessage.Payload(context.Background(), get, pointer("b", "k"), sizeAttr(largemessage.SizeAttribute, 3), largemessage.DefaultMaxSize)
		if c := batch.Classify(err); c != tc.class {
			t.Errorf("%v: %v, want %v (%v)", tc.err, c, tc.class, err)
		}
	}
}
