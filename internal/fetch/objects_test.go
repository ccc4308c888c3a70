package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/internal/redrive"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/destination"
	"github.com/sluicehq/sluice/localtest/onfailure"
)

// s3Server starts gofakes3, an S3 API server, on 127.0.0.1 and returns a
// client and the SDK configuration for it.
func s3Server(t *testing.T) (*s3.Client, aws.Config) {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }), cfg
}

type failing struct{}

func (failing) Invoke(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") }

// failAll runs m over recs with a function that always fails, so that
// every batch ends at the destination; it returns the records the
// function was sent, by payload id.
func failAll(t *testing.T, m *localtest.Mapping, recs []localtest.InputRecord, dest onfailure.Destination) {
	t.Helper()
	rep, err := localtest.Run(testCtx(t), localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(failing{}), Destination: dest})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.OnFailureRecords) == 0 {
		t.Fatalf("no on-failure record: %+v", rep)
	}
}

// objects lists the bucket's keys.
func objects(t *testing.T, c *s3.Client, bucket string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(testCtx(t), &s3.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// envelopeIDs are the payload ids of the envelopes' records, in order.
func envelopeIDs(t *testing.T, envs []*dlq.Envelope) []string {
	t.Helper()
	var ids []string
	for _, e := range envs {
		var r struct {
			Kinesis  struct{ Data []byte }
			Value    []byte
			DynamoDB struct {
				NewImage struct{ ID struct{ S string } }
			} `json:"dynamodb"`
		}
		if err := json.Unmarshal(e.Record, &r); err != nil {
			t.Fatalf("record %s: %v", e.Record, err)
		}
		var c struct{ ID string }
		switch e.Source {
		case sevents.SourceKinesis:
			json.Unmarshal(r.Kinesis.Data, &c)
		case sevents.SourceKafka:
			json.Unmarshal(r.Value, &c)
		case sevents.SourceDynamoDB:
			c.ID = r.DynamoDB.NewImage.ID.S
		}
		ids = append(ids, c.ID)
	}
	return ids
}

// TestBucketRecoversBatches: the batches a Kinesis, a DynamoDB and a Kafka
// mapping gave up on, put by the runner into a bucket over the S3 API as
// Lambda puts them, come back as one envelope per record from the
// objects' payloads alone (the Fetcher has no stream client), each
// object's envelopes rebuild its batch's event byte for byte, and the
// objects are deleted once written.
func TestBucketRecoversBatches(t *testing.T) {
	c, cfg := s3Server(t)
	ctx := testCtx(t)
	const bucket = "failed-batches"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	var want []string
	var kin, ddb, kafka []localtest.InputRecord
	for i := range 7 {
		id := fmt.Sprint("k", i)
		kin = append(kin, localtest.InputRecord{PartitionKey: "p", Data: json.RawMessage(`{"id":"` + id + `"}`)})
		want = append(want, id)
	}
	for i := range 3 {
		id := fmt.Sprint("d", i)
		ddb = append(ddb, localtest.InputRecord{Keys: json.RawMessage(`{"pk":"` + id + `"}`),
			NewImage: json.RawMessage(`{"pk":"` + id + `","id":"` + id + `"}`)})
		want = append(want, id)
	}
	for i := range 4 {
		id := fmt.Sprint("f", i)
		p := i % 2
		kafka = append(kafka, localtest.InputRecord{Partition: &p, Value: json.RawMessage(`{"id":"` + id + `"}`)})
		want = append(want, id)
	}
	zero := 0
	for _, run := range []struct {
		m    *localtest.Mapping
		recs []localtest.InputRecord
	}{
		{&localtest.Mapping{EventSource: sevents.SourceKinesis, UUID: "11111111-1111-4111-8111-111111111111", StartingPosition: "TRIM_HORIZON",
			BatchSize: aws.Int(3), MaximumRetryAttempts: &zero}, kin},
		{&localtest.Mapping{EventSource: sevents.SourceDynamoDB, UUID: "22222222-2222-4222-8222-222222222222", StartingPosition: "TRIM_HORIZON",
			BatchSize: aws.Int(2), MaximumRetryAttempts: &zero}, ddb},
		{&localtest.Mapping{EventSource: sevents.SourceKafka, UUID: "33333333-3333-4333-8333-333333333333", StartingPosition: "TRIM_HORIZON",
			Mode: localtest.KafkaProvisioned, Partitions: aws.Int(2), Topic: "payments", BatchSize: aws.Int(2), MaximumRetryAttempts: &zero}, kafka},
	} {
		run.m.DestinationConfig = &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "s3://" + bucket}}
		failAll(t, run.m, run.recs, destination.S3(cfg, bucket, run.m.UUID))
	}
	keys := objects(t, c, bucket)
	if len(keys) < 3 {
		t.Fatalf("objects %v", keys)
	}
	// Each object's envelopes rebuild its payload exactly.
	src := Bucket(c, bucket, "")
	msgs, err := src.Next(ctx, 100)
	if err != nil || len(msgs) != len(keys) {
		t.Fatalf("Next: %d messages, %v; want %d", len(msgs), err, len(keys))
	}
	f := New(Options{}) // no stream client: the payload must do
	for _, m := range msgs {
		rec, err := Parse(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		envs, err := f.Fetch(ctx, rec)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		ev, err := redrive.Event(envs)
		if err != nil {
			t.Fatal(err)
		}
		got, want := ev, []byte(rec.Payload)
		if rec.KafkaBatchInfo != nil {
			// A rebuilt Kafka event lacks bootstrapServers, which no
			// envelope carries: its records are the payload's.
			var g, w struct{ Records json.RawMessage }
			json.Unmarshal(ev, &g)
			json.Unmarshal(want, &w)
			got, want = g.Records, w.Records
		}
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: the envelopes rebuild\n%s\nnot the payload\n%s", m.ID, ev, rec.Payload)
		}
		for _, e := range envs {
			if e.Reason != ReasonOnFailure || e.Attempts != 1 || e.FunctionName == "" || !strings.Contains(e.Error, "read from the on-failure object's payload") ||
				e.RecordID == "" || e.EventID == "" || e.ArrivalTime.IsZero() {
				t.Errorf("envelope %+v", e)
			}
		}
	}
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// The whole run, as sluice fetch-failed --from-bucket does it.
	out := filepath.Join(t.TempDir(), "envelopes.jsonl")
	sink, err := dlq.OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(ctx, Bucket(c, bucket, ""), f, sink, nil)
	sink.Close()
	if err != nil || sum.Fetched != len(keys) || sum.Failed != 0 || sum.Records != len(want) {
		t.Fatalf("Run: %+v %v", sum, err)
	}
	envs := readEnvelopes(t, out)
	got := envelopeIDs(t, envs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("envelopes of %v, want every record once: %v", got, want)
	}
	for _, e := range envs {
		if e.Source == sevents.SourceKinesis && (e.Shard != "shardId-000000000000" || e.PartitionKey != "p" || e.EventID != e.Shard+":"+e.RecordID) ||
			e.Source == sevents.SourceKafka && (e.Topic != "payments" || e.Partition == nil || e.Offset == nil ||
				e.RecordID != fmt.Sprintf("payments-%d@%d", *e.Partition, *e.Offset)) ||
			e.Source == sevents.SourceDynamoDB && !strings.HasPrefix(e.PartitionKey, `{"pk":`) {
			t.Errorf("envelope %+v", e)
		}
	}
	if left := objects(t, c, bucket); len(left) != 0 {
		t.Fatalf("objects left after their envelopes were written: %v", left)
	}
}

func readEnvelopes(t *testing.T, path string) []*dlq.Envelope {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var envs []*dlq.Envelope
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		e, err := dlq.Unmarshal(l)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	return envs
}

// pages serves a bucket's listing two keys a page, and can fail a delete.
type pages struct {
	S3API
	failDelete string
	deleted    []string
}

func (p *pages) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	in.MaxKeys = aws.Int32(2)
	return p.S3API.ListObjectsV2(ctx, in, o...)
}

func (p *pages) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, o ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if aws.ToString(in.Key) == p.failDelete {
		return nil, errors.New("AccessDenied")
	}
	p.deleted = append(p.deleted, aws.ToString(in.Key))
	return p.S3API.DeleteObject(ctx, in, o...)
}

// TestBucketSource: every object under the prefix is read, over pages of
// the listing, in key order; what is not an on-failure record, and an
// object that cannot be deleted, stay with their reasons.
func TestBucketSource(t *testing.T) {
	c, _ := s3Server(t)
	ctx := testCtx(t)
	const bucket = "bkt"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	rec := onFailure(nil, false)
	rec.KinesisBatchInfo = &sevents.StreamBatchInfo{ShardID: "shardId-000000000000",
		StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", BatchSize: 1}
	kb := &sevents.KinesisBuilder{FirstSequence: 5}
	kb.Add("p", []byte(`{"id":"a"}`))
	ev, _ := sevents.MarshalEvent(kb.Event())
	rec.Payload = string(ev)
	seq := kb.Last().Kinesis.SequenceNumber
	rec.KinesisBatchInfo.StartSequenceNumber, rec.KinesisBatchInfo.EndSequenceNumber = seq, seq
	good, _ := json.Marshal(rec)
	put := func(key string, body []byte) {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: &key, Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		put(fmt.Sprintf("aws/lambda/u/shardId-000000000000/2026/12/01/2026-12-01T00.00.0%d-x", i), good)
	}
	put("aws/lambda/u/shardId-000000000000/2026/12/01/2026-12-01T00.00.05-junk", []byte("not json"))
	put("elsewhere/not-mine", good) // outside the prefix
	api := &pages{S3API: c, failDelete: "aws/lambda/u/shardId-000000000000/2026/12/01/2026-12-01T00.00.03-x"}
	src := Bucket(api, bucket, "")
	if src.Name() != "s3://bkt/aws/lambda/" {
		t.Fatal(src.Name())
	}
	var sink memSink
	sum, err := Run(ctx, src, New(Options{}), &sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 6 || sum.Fetched != 4 || sum.Failed != 2 || len(sum.Leftovers) != 2 {
		t.Fatalf("summary %+v", sum)
	}
	reasons := sum.Leftovers[0].Reason + " " + sum.Leftovers[1].Reason
	if !strings.Contains(reasons, "AccessDenied") || !strings.Contains(reasons, "not a Lambda on-failure record") {
		t.Fatalf("leftovers %+v", sum.Leftovers)
	}
	if len(api.deleted) != 4 || !slices.IsSorted(api.deleted) {
		t.Fatalf("deleted %v", api.deleted)
	}
	left := objects(t, c, bucket)
	if len(left) != 3 || !slices.Contains(left, "elsewhere/not-mine") || !slices.Contains(left, api.failDelete) {
		t.Fatalf("left %v", left)
	}
}

// TestDirSource: the objects sluice run writes for a file://dir/
// destination come back the same way, and each file is removed once its
// envelopes are written.
func TestDirSource(t *testing.T) {
	dir := t.TempDir()
	var recs []localtest.InputRecord
	for i := range 5 {
		recs = append(recs, localtest.InputRecord{PartitionKey: "p", Data: json.RawMessage(fmt.Sprintf(`{"id":"k%d"}`, i))})
	}
	zero := 0
	m := &localtest.Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: aws.Int(2), MaximumRetryAttempts: &zero,
		DestinationConfig: &localtest.DestinationConfig{OnFailure: &localtest.OnFailure{Destination: "file://" + dir + "/"}}}
	failAll(t, m, recs, localtest.DirDestination(dir, ""))
	src, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	sum, err := Run(testCtx(t), src, New(Options{}), &sink, nil)
	if err != nil || sum.Fetched != 3 || sum.Records != 5 || sum.Failed != 0 {
		t.Fatalf("Run: %+v %v", sum, err)
	}
	got := envelopeIDs(t, sink.envs)
	slices.Sort(got) // the objects' keys end in random ids
	if !slices.Equal(got, []string{"k0", "k1", "k2", "k3", "k4"}) {
		t.Fatalf("envelopes of %v", got)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			t.Errorf("%s is left", path)
		}
		return nil
	})
}

// TestFromPayloadRefusesMismatch: an object whose payload disagrees with
// its batch info is not trusted.
func TestFromPayloadRefusesMismatch(t *testing.T) {
	kb := &sevents.KinesisBuilder{}
	kb.Add("p", []byte(`{"id":"a"}`)).Add("p", []byte(`{"id":"b"}`))
	kev, _ := sevents.MarshalEvent(kb.Event())
	first, last := kb.Event().Records[0].Kinesis.SequenceNumber, kb.Last().Kinesis.SequenceNumber
	kinesis := func(start, end, payload string) *sevents.OnFailureRecord {
		r := onFailure(&sevents.StreamBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: start, EndSequenceNumber: end,
			StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/stream", BatchSize: 2}, false)
		r.Payload = payload
		return r
	}
	fb := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1"}
	fb.Add("t", 0, nil, []byte(`{"id":"f"}`))
	fev, _ := sevents.MarshalEvent(fb.Event())
	kafka := func(key, first, last string) *sevents.OnFailureRecord {
		r := onFailure(nil, false)
		r.KafkaBatchInfo = &sevents.KafkaBatchInfo{BatchSize: 1, EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/c/1",
			RecordsInfo: map[string]sevents.KafkaPartitionRecords{key: {FirstRecordOffset: first, LastRecordOffset: last}}}
		r.Payload = string(fev)
		return r
	}
	for name, c := range map[string]struct {
		rec  *sevents.OnFailureRecord
		want string
	}{
		"the batch":            {kinesis(first, last, string(kev)), ""},
		"a record before":      {kinesis(last, last, string(kev)), "is outside the batch info's"},
		"a record after":       {kinesis(first, first, string(kev)), "is outside the batch info's"},
		"another source":       {kinesis(first, last, string(fev)), "the batch info is Kinesis but its payload is a Kafka event"},
		"not an event":         {kinesis(first, last, `{"hello":1}`), "its payload is not the batch's Lambda event"},
		"no records":           {kinesis(first, last, `{"Records":[]}`), "holds no record"},
		"kafka batch":          {kafka("t-0", "0", "0"), ""},
		"kafka other part":     {kafka("t-1", "0", "0"), "partition t-0 is not in the batch info's recordsInfo"},
		"kafka offset outside": {kafka("t-0", "1", "3"), "offset 0 is outside"},
	} {
		t.Run(name, func(t *testing.T) {
			envs, err := New(Options{}).Fetch(context.Background(), c.rec)
			if c.want == "" {
				if err != nil || len(envs) == 0 {
					t.Fatalf("%v %v", envs, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrNotOnFailure) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrNotOnFailure with %q", err, c.want)
			}
		})
	}
}

// FuzzFromPayload: whatever an object holds, reading it never panics, and
// every envelope holds a record that is valid JSON taken from the payload.
func FuzzFromPayload(f *testing.F) {
	kb := &sevents.KinesisBuilder{}
	kb.Add("p", []byte(`{"id":"a"}`))
	ev, _ := sevents.MarshalEvent(kb.Event())
	seq := kb.Last().Kinesis.SequenceNumber
	r := onFailure(&sevents.StreamBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: seq, EndSequenceNumber: seq,
		StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/stream", BatchSize: 1}, false)
	r.Payload = string(ev)
	seed, _ := json.Marshal(r)
	f.Add(seed)
	fb := &sevents.KafkaBuilder{}
	fb.Add("t", 3, []byte("k"), []byte(`{"id":"f"}`))
	fev, _ := sevents.MarshalEvent(fb.Event())
	kr := onFailure(nil, false)
	kr.KafkaBatchInfo = &sevents.KafkaBatchInfo{RecordsInfo: map[string]sevents.KafkaPartitionRecords{"t-3": {FirstRecordOffset: "0", LastRecordOffset: "0"}}}
	kr.Payload = string(fev)
	seed, _ = json.Marshal(kr)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, err := Parse(body)
		if err != nil || rec.Payload == "" {
			return
		}
		envs, err := fromPayload(rec)
		if err != nil {
			return
		}
		for _, e := range envs {
			if !json.Valid(e.Record) || !strings.Contains(rec.Payload, string(e.Record)) {
				t.Fatalf("envelope record %q is not JSON from the payload", e.Record)
			}
		}
	})
}

// memSink keeps the envelopes sent to it.
type memSink struct{ envs []*dlq.Envelope }

func (m *memSink) Send(_ context.Context, envs []*dlq.Envelope) error {
	m.envs = append(m.envs, envs...)
	return nil
}
