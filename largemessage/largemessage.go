package largemessage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handlers"
)

// The class names the SQS Extended Client writes first in a pointer: the
// payload offloading library's, which the current clients write, and the
// one the Java client wrote before it (version 1), which the Python client
// still writes with use_legacy_attribute. Both reference clients read
// both: the Java client swaps the legacy name for the current one before
// it parses a pointer, and the Python client does not look at the name.
const (
	PointerClass       = "software.amazon.payloadoffloading.PayloadS3Pointer"
	LegacyPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"
)

// The message attributes that mark an offloaded message and hold the
// payload's size in bytes: the current name, and the legacy one, which the
// Java client still writes by default (until
// withLegacyReservedAttributeNameDisabled) and the Python client with
// use_legacy_attribute. A message with either is offloaded; when it has
// both, SizeAttribute is read, as the Java client reads it.
const (
	SizeAttribute       = "ExtendedPayloadSize"
	LegacySizeAttribute = "SQSLargePayloadSize"
)

// DefaultMaxSize is the largest payload read from S3 unless WithMaxSize
// says otherwise: the function holds it in memory.
const DefaultMaxSize = 256 << 20

// GetObjectAPI is the S3 call this package makes, with aws-sdk-go-v2's
// signature; *s3.Client implements it.
type GetObjectAPI interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ GetObjectAPI = (*s3.Client)(nil)

// Pointer is where the SQS Extended Client stored a message's payload.
type Pointer struct {
	Bucket string `json:"s3BucketName"`
	Key    string `json:"s3Key"`
}

// ParsePointer reads a message body as the SQS Extended Client writes a
// pointer, with either class name (PointerClass, LegacyPointerClass) and
// any JSON spacing (the Python client writes a space after each comma and
// colon). ok is false when the body is not a pointer at all; err is set
// when it is a pointer's array with a pointer class but a bad object.
func ParsePointer(body string) (p Pointer, ok bool, err error) {
	b := bytes.TrimSpace([]byte(body))
	if len(b) == 0 || b[0] != '[' {
		return Pointer{}, false, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(b, &parts) != nil || len(parts) != 2 {
		return Pointer{}, false, nil
	}
	var class string
	if json.Unmarshal(parts[0], &class) != nil || class != PointerClass && class != LegacyPointerClass {
		return Pointer{}, false, nil
	}
	if err := json.Unmarshal(parts[1], &p); err != nil {
		return Pointer{}, true, fmt.Errorf("largemessage: the S3 pointer is malformed: %w", err)
	}
	if p.Bucket == "" || p.Key == "" {
		return Pointer{}, true, fmt.Errorf("largemessage: the S3 pointer lacks s3BucketName or s3Key: %s", parts[1])
	}
	return p, true, nil
}

// offloadedSize returns the size attribute's value and name; name is ""
// when the message has neither (it is then not offloaded).
func offloadedSize(attrs map[string]events.SQSMessageAttribute) (size int64, name string, err error) {
	for _, name := range []string{SizeAttribute, LegacySizeAttribute} {
		a, ok := attrs[name]
		if !ok {
			continue
		}
		if a.StringValue == nil {
			return 0, name, fmt.Errorf("largemessage: message attribute %s has no value", name)
		}
		n, err := strconv.ParseInt(*a.StringValue, 10, 64)
		if err != nil || n < 0 {
			return 0, name, fmt.Errorf("largemessage: message attribute %s is %q, not a size", name, *a.StringValue)
		}
		return n, name, nil
	}
	return 0, "", nil
}

// missing returns the S3 error code of err when it says the object or
// its bucket does not exist (NoSuchKey, NoSuchBucket), else "". It reads
// the code, not the SDK's error type: GetObject's deserializer types
// NoSuchKey but leaves NoSuchBucket a generic API error with that code.
func missing(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch c := api.ErrorCode(); c {
		case "NoSuchKey", "NoSuchBucket":
			return c
		}
	}
	return ""
}

type config struct {
	codec   handlers.Codec
	maxSize int64
}

// An Option configures SQS.
type Option func(*config)

// WithCodec sets how payloads are decoded into T (default handlers.JSON();
// T string or []byte get the payload as is, as in package handlers).
func WithCodec(c handlers.Codec) Option { return func(cfg *config) { cfg.codec = c } }

// WithMaxSize sets the largest payload read from S3 (default
// DefaultMaxSize); a larger one fails its message permanently.
func WithMaxSize(n int64) Option { return func(cfg *config) { cfg.maxSize = n } }

// SQS returns the function an SQS handler runs (handlers.NewSQS or
// handlers.NewSQSFIFO take it as it is, with handlers.SQSRecord[string]
// records): for each message it reads the payload from S3 when the message
// is offloaded, decodes it into T and calls fn with the decoded record,
// Raw as Lambda delivered it (the pointer in Raw.Body).
//
// A payload that cannot be read fails its message: S3's NoSuchKey or
// NoSuchBucket (told by the error code S3 answers), a malformed pointer, a
// payload past WithMaxSize or of another size than the attribute says, and
// a decode error, permanently (a retry would fail the same way); any other
// S3 error (which the SDK client has already retried) fails the message as
// a plain error, so SQS delivers it again after its visibility timeout.
// (S3 answers a missing object with AccessDenied, not NoSuchKey, to a role
// without s3:ListBucket on the bucket: that stays a plain error.)
func SQS[T any](client GetObjectAPI, fn func(context.Context, handlers.SQSRecord[T]) error, opts ...Option) func(context.Context, handlers.SQSRecord[string]) error {
	cfg := config{codec: handlers.JSON(), maxSize: DefaultMaxSize}
	for _, o := range opts {
		o(&cfg)
	}
	return func(ctx context.Context, r handlers.SQSRecord[string]) error {
		payload, err := Payload(ctx, client, r.Raw.Body, r.Raw.MessageAttributes, cfg.maxSize)
		if err != nil {
			return err
		}
		out := handlers.SQSRecord[T]{Raw: r.Raw}
		if err := handlers.DecodeValue(cfg.codec, payload, &out.Value); err != nil {
			return batch.Permanent(fmt.Errorf("largemessage: message %s: %w", r.Raw.MessageId, err))
		}
		return fn(ctx, out)
	}
}

// Payload returns a message's payload: its body, or the S3 object its
// pointer names when attrs mark it as offloaded.
func Payload(ctx context.Context, client GetObjectAPI, body string, attrs map[string]events.SQSMessageAttribute, maxSize int64) ([]byte, error) {
	size, attr, err := offloadedSize(attrs)
	if err != nil {
		return nil, batch.Permanent(err)
	}
	if attr == "" {
		return []byte(body), nil
	}
	p, ok, err := ParsePointer(body)
	switch {
	case err != nil:
		return nil, batch.Permanent(err)
	case !ok:
		return nil, batch.Permanent(fmt.Errorf("largemessage: the message has the %s attribute but its body is not an S3 pointer %s", attr,
			`(["`+PointerClass+`" or "`+LegacyPointerClass+`",{"s3BucketName":...,"s3Key":...}]): `+
				`was it sent by the SQS Extended Client, and not changed on the way?`))
	case size > maxSize:
		return nil, batch.Permanent(fmt.Errorf("largemessage: s3://%s/%s is %d bytes, over the limit of %d (largemessage.WithMaxSize)", p.Bucket, p.Key, size, maxSize))
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.Bucket, Key: &p.Key})
	if err != nil {
		switch missing(err) {
		case "NoSuchBucket":
			return nil, batch.Permanent(fmt.Errorf("largemessage: the payload at s3://%s/%s is gone: the bucket %s does not exist (%v): was it deleted, "+
				"or does the sender write to a bucket of another account or Region than this function reads?", p.Bucket, p.Key, p.Bucket, err))
		case "NoSuchKey":
			return nil, batch.Permanent(fmt.Errorf("largemessage: the payload at s3://%s/%s is gone (%v): was the object deleted, or did a lifecycle rule expire it before the message was processed?", p.Bucket, p.Key, err))
		}
		return nil, fmt.Errorf("largemessage: reading s3://%s/%s: %w", p.Bucket, p.Key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("largemessage: reading s3://%s/%s: %w", p.Bucket, p.Key, err)
	}
	if int64(len(data)) > maxSize {
		return nil, batch.Permanent(fmt.Errorf("largemessage: s3://%s/%s is over the limit of %d bytes (largemessage.WithMaxSize)", p.Bucket, p.Key, maxSize))
	}
	if int64(len(data)) != size {
		return nil, batch.Permanent(fmt.Errorf("largemessage: s3://%s/%s is %d bytes but the message's %s says %d: the object is not this message's payload", p.Bucket, p.Key, len(data), attr, size))
	}
	return data, nil
}
