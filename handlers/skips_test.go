package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/idempotency"
)

// skipEnv is an environment holding only EnvSkipsFile=path.
func skipEnv(path string) Option {
	return withLookupEnv(func(k string) (string, bool) {
		if k == EnvSkipsFile {
			return path, true
		}
		return "", false
	})
}

type skipLine struct {
	Record, Reason, Key, Lane, Position, Request string
}

func readSkipLines(t *testing.T, path string) []skipLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []skipLine
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var s skipLine
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, s)
	}
	return out
}

// TestSkipsFile: a handler whose environment names EnvSkipsFile writes one
// line for each record it answered without the function: the s3:TestEvent
// message, and a duplicate with its idempotency key, each named by its
// record id (a KPL user record's with its sub-sequence number), with the
// invocation's request id. RecordOutcome says the same.
func TestSkipsFile(t *testing.T) {
	t.Run("s3 test event", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "skips.jsonl")
		ev, ids := sqsEventOf(t, s3TestEvent, s3Notification(s3Record("a", "01")))
		var outcomes []RecordOutcome
		h := must(NewSQS(func(context.Context, SQSRecord[S3Notification]) error { return nil },
			WithLogger(slog.New(slog.DiscardHandler)), WithoutRetry(), skipEnv(path), WithOnBatch(func(_ context.Context, r BatchReport) { outcomes = r.Records })))
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
		if _, err := h.Invoke(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if got := readSkipLines(t, path); !slices.Equal(got, []skipLine{{Record: ids[0], Reason: SkipS3TestEvent, Request: "req-1"}}) {
			t.Fatalf("skips %+v", got)
		}
		if outcomes[0].Skipped != SkipS3TestEvent || outcomes[1].Skipped != "" || outcomes[0].Record != ids[0] {
			t.Fatalf("outcomes %+v", outcomes)
		}
	})
	t.Run("KPL duplicate", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "skips.jsonl")
		b := &sevents.KinesisBuilder{}
		agg := b.AddAggregated(orderRec("a", "o-1", "ok"), orderRec("b", "o-2", "ok")).Last()
		seq := agg.Kinesis.SequenceNumber
		ev := marshalEvent(t, b.Event().Records...)
		store := idempotency.NewMemoryStore()
		var outcomes []RecordOutcome
		var ran []string
		h := must(NewKinesis(func(_ context.Context, r KinesisRecord[order]) error { ran = append(ran, r.RecordID()); return nil },
			WithLogger(slog.New(slog.DiscardHandler)), WithoutRetry(), skipEnv(path), WithIdempotency(store),
			WithOnBatch(func(_ context.Context, r BatchReport) { outcomes = r.Records })))
		if f := invoke(t, h, ev); len(f) != 0 {
			t.Fatal(f)
		}
		if readSkipLines(t, path) != nil || !slices.Equal(ran, []string{seq + ":0", seq + ":1"}) {
			t.Fatalf("first delivery: ran %v, skips written", ran)
		}
		if outcomes[1].ID != seq || outcomes[1].Record != seq+":1" {
			t.Fatalf("outcome %+v", outcomes[1])
		}
		if f := invoke(t, h, ev); len(f) != 0 { // delivered again: both duplicates
			t.Fatal(f)
		}
		// The checkpoint of their lane answered them (the factor is not
		// declared: the shard and the aggregate's partition key): the
		// lines name it, and each user record's position in it, which is
		// what the store holds (no item of the records' own keys).
		shard, _, _ := strings.Cut(agg.EventID, ":")
		lane := "lane#kinesis#" + agg.EventSourceArn + "#" + shard + "#" + agg.Kinesis.PartitionKey
		at := func(sub string) string { p, _ := idempotency.Position(seq, sub); return p }
		want := []skipLine{{Record: seq + ":0", Reason: SkipDuplicate, Key: kpl.SubSequenceKey(agg.EventID, 0), Lane: lane, Position: at("0")},
			{Record: seq + ":1", Reason: SkipDuplicate, Key: kpl.SubSequenceKey(agg.EventID, 1), Lane: lane, Position: at("1")}}
		if got := readSkipLines(t, path); !slices.Equal(got, want) || len(ran) != 2 {
			t.Fatalf("skips %+v, want %+v (ran %v)", got, want, ran)
		}
		if !outcomes[0].Duplicate || outcomes[0].Skipped != SkipDuplicate {
			t.Fatalf("outcome %+v", outcomes[0])
		}
		if own, err := store.Get(context.Background(), []string{want[0].Key}); err != nil || len(own) != 0 {
			t.Fatalf("the store holds %v (%v) under the record's own key, want nothing: the lane shows it", own, err)
		}
	})
	t.Run("duplicate by its own key", func(t *testing.T) {
		// A claim per record: the record's own key completed, and the
		// line names only that key.
		path := filepath.Join(t.TempDir(), "skips.jsonl")
		b := &sevents.KinesisBuilder{}
		rec := b.Add("k", []byte(`{"id":"o-1","action":"ok"}`)).Last()
		ev := marshalEvent(t, b.Event().Records...)
		h := must(NewKinesis(func(context.Context, KinesisRecord[order]) error { return nil },
			WithLogger(slog.New(slog.DiscardHandler)), WithoutRetry(), skipEnv(path), WithIdempotency(idempotency.NewMemoryStore()),
			WithIdempotencyPerRecord()))
		invoke(t, h, ev)
		invoke(t, h, ev)
		want := []skipLine{{Record: rec.Kinesis.SequenceNumber, Reason: SkipDuplicate, Key: rec.EventID}}
		if got := readSkipLines(t, path); !slices.Equal(got, want) {
			t.Fatalf("skips %+v, want %+v", got, want)
		}
	})
	t.Run("unset writes nothing", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		ev, _ := sqsEventOf(t, s3TestEvent)
		h := must(NewSQS(func(context.Context, SQSRecord[S3Notification]) error { return nil }, opts()...))
		invoke(t, h, ev)
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("files written: %v", entries)
		}
	})
}

// TestRecordIDs: each record type names itself as the runner and dead
// letters do.
func TestRecordIDs(t *testing.T) {
	k := KinesisRecord[int]{}
	k.Raw.Kinesis.SequenceNumber = "49"
	if k.RecordID() != "49" || k.ItemID(1) != "49#1" {
		t.Fatalf("plain: %s %s", k.RecordID(), k.ItemID(1))
	}
	k.agg, k.sub = true, 2
	if k.RecordID() != "49:2" || k.ItemID(0) != "49:2#0" {
		t.Fatalf("user record: %s %s", k.RecordID(), k.ItemID(0))
	}
	s := SQSRecord[int]{}
	s.Raw.MessageId = "m"
	if s.RecordID() != "m" || s.ItemID(3) != "m#3" {
		t.Fatalf("sqs: %s %s", s.RecordID(), s.ItemID(3))
	}
	kr := KafkaRecord[int]{}
	kr.Raw.Topic, kr.Raw.Partition, kr.Raw.Offset = "orders", 3, 42
	if kr.RecordID() != "orders-3@42" {
		t.Fatalf("kafka: %s", kr.RecordID())
	}
	d := DynamoDBRecord[int]{}
	d.Raw.Change.SequenceNumber = "7"
	if d.RecordID() != "7" {
		t.Fatalf("dynamodb: %s", d.RecordID())
	}
}
