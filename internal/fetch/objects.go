package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/internal/inbox"
)

// DefaultPrefix is where Lambda writes the objects of an S3 on-failure
// destination: aws/lambda/<mapping UUID>/<shard or topic-partition>/
// YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<UUID> (Lambda guide,
// kinesis-on-failure-destination).
const DefaultPrefix = "aws/lambda/"

// MaxObjectBytes is the largest on-failure object Bucket and Dir read:
// an invocation payload is at most 6 MB, and its record around it is
// small.
const MaxObjectBytes = 16 << 20

// S3API is the part of the S3 client Bucket uses.
type S3API interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// BucketSource reads the on-failure objects of an S3 bucket, each
// object one on-failure record with its batch as payload.
type BucketSource struct {
	api            S3API
	bucket, prefix string
	token          *string // the next listing page
	done           bool
	keys           []string // listed, not yet handed out
}

var _ Source = (*BucketSource)(nil)

// Bucket returns a Source of the objects under prefix in bucket (prefix
// "" is DefaultPrefix; a mapping's own objects are under
// DefaultPrefix+"<mapping UUID>/"). An object is deleted once its
// envelopes are written; the others stay.
func Bucket(api S3API, bucket, prefix string) *BucketSource {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &BucketSource{api: api, bucket: bucket, prefix: prefix}
}

// Name is s3://bucket/prefix.
func (b *BucketSource) Name() string { return "s3://" + b.bucket + "/" + b.prefix }

// Next returns up to max objects, in key order (which is time order within
// a shard), listing a page at a time.
func (b *BucketSource) Next(ctx context.Context, max int) ([]Message, error) {
	var out []Message
	for len(out) < max {
		if len(b.keys) == 0 {
			if b.done {
				break
			}
			if err := b.list(ctx); err != nil {
				return out, err
			}
			continue
		}
		key := b.keys[0]
		b.keys = b.keys[1:]
		body, err := b.get(ctx, key)
		if err != nil {
			return out, err
		}
		out = append(out, Message{ID: b.id(key), Body: body})
	}
	return out, nil
}

func (b *BucketSource) id(key string) string { return "s3://" + b.bucket + "/" + key }

func (b *BucketSource) list(ctx context.Context) error {
	out, err := b.api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &b.prefix, ContinuationToken: b.token})
	if err != nil {
		return clientErr(ctx, "S3 bucket "+b.bucket+": ListObjectsV2", err)
	}
	for _, o := range out.Contents {
		if k := aws.ToString(o.Key); k != "" && !strings.HasSuffix(k, "/") {
			b.keys = append(b.keys, k)
		}
	}
	b.token = out.NextContinuationToken
	b.done = !aws.ToBool(out.IsTruncated) || b.token == nil
	return nil
}

func (b *BucketSource) get(ctx context.Context, key string) ([]byte, error) {
	out, err := b.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return nil, clientErr(ctx, "S3 object "+b.id(key)+": GetObject", err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, MaxObjectBytes+1))
	if err != nil {
		return nil, clientErr(ctx, "S3 object "+b.id(key)+": reading it", err)
	}
	if len(body) > MaxObjectBytes {
		return nil, fmt.Errorf("S3 object %s is over %d bytes: not an on-failure record", b.id(key), MaxObjectBytes)
	}
	return body, nil
}

// Done deletes the objects whose envelopes were written.
func (b *BucketSource) Done(ctx context.Context, msgs []Message) error {
	for _, m := range msgs {
		key, ok := strings.CutPrefix(m.ID, "s3://"+b.bucket+"/")
		if !ok {
			return fmt.Errorf("S3 bucket %s: %s is not one of its objects", b.bucket, m.ID)
		}
		if _, err := b.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key}); err != nil {
			return clientErr(ctx, "S3 object "+m.ID+": DeleteObject", err)
		}
	}
	return nil
}

// Close does nothing: what is not done stays in the bucket.
func (b *BucketSource) Close(context.Context) error { return nil }

// DirSource reads on-failure objects stored as files under a directory,
// as `sluice run` writes them for a file://dir/ destination (the key's
// slashes making directories).
type DirSource struct {
	root  string
	files []string
}

var _ Source = (*DirSource)(nil)

// Dir returns a Source of the files under root, in path order. A file is
// removed once its envelopes are written.
func Dir(root string) (*DirSource, error) {
	d := &DirSource{root: root}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			d.files = append(d.files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(d.files)
	return d, nil
}

// Name is the directory.
func (d *DirSource) Name() string { return d.root }

// Next returns up to max files.
func (d *DirSource) Next(_ context.Context, max int) ([]Message, error) {
	var out []Message
	for len(out) < max && len(d.files) > 0 {
		path := d.files[0]
		d.files = d.files[1:]
		st, err := os.Stat(path)
		if err != nil {
			return out, err
		}
		if st.Size() > MaxObjectBytes {
			return out, fmt.Errorf("%s is over %d bytes: not an on-failure record", path, MaxObjectBytes)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return out, err
		}
		out = append(out, Message{ID: path, Body: body})
	}
	return out, nil
}

// Done removes the files whose envelopes were written.
func (d *DirSource) Done(_ context.Context, msgs []Message) error {
	var errs []error
	for _, m := range msgs {
		if err := os.Remove(m.ID); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close does nothing: what is not done stays.
func (d *DirSource) Close(context.Context) error { return nil }

// Message is one on-failure record a Source hands out.
type Message = inbox.Message
