package handlers

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/redrive"
)

// The aggregates in these tests are the bytes the Kinesis Producer Library
// writes: the format of its aggregation-format.md
// (github.com/awslabs/amazon-kinesis-producer/blob/master/aggregation-format.md;
// "Consumer-side deaggregation" in the Kinesis Data Streams developer guide,
// docs.aws.amazon.com/streams/latest/dev/kinesis-kpl-consumer-deaggregation.html),
// written by kpl.Encode, which package kpl checks byte for byte against
// aggregates the KPL wrote; testdata/kinesis-kpl-event.json is a record the
// KPL wrote, as Lambda delivered it.

// order is the payload of the KPL tests.
type order struct {
	OrderID string `json:"orderId"`
	Action  string `json:"action"`
}

func orderRec(pk, id, action string) kpl.Record {
	b, _ := json.Marshal(order{id, action})
	return kpl.Record{PartitionKey: pk, Data: b}
}

// seen is what the function saw of one record.
type seen struct {
	seq, pk, ehk, id string
	sub              int
	agg              bool
}

func (s seen) String() string {
	if !s.agg {
		return s.id
	}
	return fmt.Sprintf("%s@%d", s.id, s.sub)
}

type seenLog struct {
	mu  sync.Mutex
	all []seen
}

func (l *seenLog) add(r KinesisRecord[order]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, seen{r.SequenceNumber(), r.PartitionKey(), r.ExplicitHashKey(), r.Value.OrderID, r.SubSequenceNumber(), r.Aggregated()})
}

func (l *seenLog) ids() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.all)
}

func (l *seenLog) reset() {
	l.mu.Lock()
	l.all = nil
	l.mu.Unlock()
}

func orderFn(l *seenLog) func(context.Context, KinesisRecord[order]) error {
	return func(_ context.Context, r KinesisRecord[order]) error {
		l.add(r)
		return act(r.Value.Action)
	}
}

func marshalEvent(t *testing.T, recs ...events.KinesisEventRecord) []byte {
	t.Helper()
	raw, err := json.Marshal(events.KinesisEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestKinesisKPLThreeOrders: three orders in one aggregate, between two
// plain records, reach the function as three records with their own
// partition keys, the aggregate's sequence number, and sub-sequence
// numbers 0 to 2. (Before deaggregation the aggregate was one poison
// record: "invalid character 'ó' looking for beginning of value".)
func TestKinesisKPLThreeOrders(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	b.Add("plain-a", []byte(`{"orderId":"p-1","action":"ok"}`))
	users := []kpl.Record{orderRec("cust-1", "o-1", "ok"), orderRec("cust-2", "o-2", "ok"), orderRec("cust-1", "o-3", "ok")}
	users[1].ExplicitHashKey = "170141183460469231731687303715884105728"
	agg := b.AddAggregated(users...).Last()
	b.Add("plain-b", []byte(`{"orderId":"p-2","action":"ok"}`))
	ev := b.Event()
	var l seenLog
	h, err := NewKinesis(orderFn(&l), quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), marshalEvent(t, ev.Records...))
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	seq := agg.Kinesis.SequenceNumber
	want := []seen{
		{ev.Records[0].Kinesis.SequenceNumber, "plain-a", "", "p-1", 0, false},
		{seq, "cust-1", "", "o-1", 0, true},
		{seq, "cust-2", users[1].ExplicitHashKey, "o-2", 1, true},
		{seq, "cust-1", "", "o-3", 2, true},
		{ev.Records[2].Kinesis.SequenceNumber, "plain-b", "", "p-2", 0, false},
	}
	if !slices.Equal(l.all, want) {
		t.Fatalf("function saw\n%+v\nwant\n%+v", l.all, want)
	}
	// Without deaggregation the aggregate's bytes are no JSON.
	var o order
	if err := json.Unmarshal(agg.Kinesis.Data, &o); err == nil || !strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("the aggregate's data decoded as JSON: %v", err)
	}
}

// TestKinesisKPLWrittenByTheKPL: a record the KPL wrote, as Lambda
// delivered it, gives its four user records.
func TestKinesisKPLWrittenByTheKPL(t *testing.T) {
	raw := golden(t, "../../handlers/testdata/kinesis-kpl-event.json")
	var got []string
	h, err := NewKinesis(func(_ context.Context, r KinesisRecord[[]byte]) error {
		got = append(got, fmt.Sprintf("%s|%s|%d|%s|%q", r.SequenceNumber(), r.PartitionKey(), r.SubSequenceNumber(), r.ExplicitHashKey(), r.Value))
		return nil
	}, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	const seq = "49581544954143914480256700934210366840104395343224897586"
	want := []string{
		seq + `|fc03dd88-3e79-448a-b01a-7cf1bd47b784|0|38486495867508399078159723846051807020|"RECORD 22 peeobhczbzdmskboupgyq\n"`,
		seq + `|cae41b1c-ea61-43f2-90be-b8755ebf88e2|1|193787600037681706952143357071916352604|"RECORD 23 uswkxftxroeusscxsjhno\n"`,
		seq + `|d490690c-e74d-4db2-a3c8-d8f2f184fd23|2|266880436964932424265466916734068684439|"RECORD 24 casehdgivfaxeustlyszy\n"`,
		seq + `|c924bc09-b85e-47f1-b32e-336522ee53c8|3|339606600942967391854603552402021847292|"RECORD 25 nvffvpmuogdopjhamevrk\n"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKinesisKPLNotAggregates: data with a wrong checksum, or without the
// magic, is an ordinary record, as the KCL treats it; an aggregate whose
// checksum matches but whose protobuf is malformed fails as one record,
// named by its sequence number, with the reason.
func TestKinesisKPLNotAggregates(t *testing.T) {
	good := kpl.Encode([]kpl.Record{orderRec("a", "o-1", "ok")})
	badSum := bytes.Clone(good)
	badSum[len(badSum)-1] ^= 0xff
	noMagic := good[1:]
	withSum := func(msg []byte) []byte {
		sum := md5.Sum(msg)
		return append(append([]byte(kpl.Magic), msg...), sum[:]...)
	}
	// A record field claiming 9 bytes of the 2 left.
	malformed := withSum([]byte{0x0a, 0x01, 'k', 0x1a, 0x09, 0x08, 0x00})
	// A user record naming partition key 5 of a table of 1.
	badIndex := withSum([]byte{0x0a, 0x01, 'k', 0x1a, 0x04, 0x08, 0x05, 0x1a, 0x00})
	for _, tc := range []struct {
		name   string
		data   []byte
		failed string // in the decode error, "" for a record that reaches the function
	}{
		{"md5 mismatch", badSum, ""},
		{"no magic", noMagic, ""},
		{"malformed aggregate", malformed, "KPL aggregated record (its MD5 matches) that cannot be read: malformed KPL aggregated record: field 3 at byte 5 claims 9 bytes, 2 are left"},
		{"user record outside the key table", badIndex, "KPL aggregated record whose user record 0 cannot be read: malformed KPL aggregated record: user record 0: partition_key_index 5 is outside the table of 1 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &sevents.KinesisBuilder{}
			b.Add("x", []byte(`{"orderId":"p-0","action":"ok"}`))
			b.Add("k", tc.data)
			ev := b.Event()
			var got [][]byte
			var rep BatchReport
			h, err := NewKinesis(func(_ context.Context, r KinesisRecord[[]byte]) error {
				if r.Aggregated() || r.SubSequenceNumber() != 0 {
					t.Errorf("record %s: aggregated %v sub %d", r.SequenceNumber(), r.Aggregated(), r.SubSequenceNumber())
				}
				got = append(got, r.Value)
				return nil
			}, opts(WithOnBatch(func(_ context.Context, r BatchReport) { rep = r }))...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), marshalEvent(t, ev.Records...))
			if err != nil {
				t.Fatal(err)
			}
			if tc.failed == "" {
				if len(failures(t, out)) != 0 || len(got) != 2 || !bytes.Equal(got[1], tc.data) {
					t.Fatalf("%s: function got %q", out, got)
				}
				return
			}
			var de *batch.DecodeError
			if f := failures(t, out); len(f) != 1 || f[0] != ev.Records[1].Kinesis.SequenceNumber || len(rep.Records) != 2 ||
				!errors.As(rep.Records[1].Err, &de) || !strings.Contains(de.Error(), tc.failed) {
				t.Fatalf("%s, records %+v", out, rep.Records)
			}
		})
	}
}

// TestKinesisKPLFailureReportsParent: user record 1 of 3 fails: the
// aggregate's sequence number is reported, nothing after runs, and
// Lambda's retry (from that sequence number) runs user record 0 again when
// there is no idempotency.
func TestKinesisKPLFailureReportsParent(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	b.Add("p", []byte(`{"orderId":"p-1","action":"ok"}`))
	b.AddAggregated(orderRec("a", "o-1", "ok"), orderRec("b", "o-2", "fail"), orderRec("c", "o-3", "ok"))
	b.Add("p", []byte(`{"orderId":"p-2","action":"ok"}`))
	ev := b.Event()
	var l seenLog
	h, err := NewKinesis(orderFn(&l), quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), marshalEvent(t, ev.Records...))
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(t, out); len(f) != 1 || f[0] != ev.Records[1].Kinesis.SequenceNumber {
		t.Fatalf("reported %v, want the aggregate %s", f, ev.Records[1].Kinesis.SequenceNumber)
	}
	if got := l.ids(); got != "[p-1 o-1@0 o-2@1]" {
		t.Fatalf("ran %s", got)
	}
	// Lambda's retry starts at the reported record: o-1 runs again. When
	// o-2 fails again, the answer names the batch's first record (no
	// progress, which Lambda counts as a retry, as a function error).
	l.reset()
	out, err = h.Invoke(context.Background(), marshalEvent(t, ev.Records[1:]...))
	if f := failures(t, out); err != nil || len(f) != 1 || f[0] != ev.Records[1].Kinesis.SequenceNumber {
		t.Fatalf("the retry answered %s %v", out, err)
	}
	if got := l.ids(); got != "[o-1@0 o-2@1]" {
		t.Fatalf("the retry ran %s", got)
	}
}

// TestKinesisKPLIdempotencySkipsSiblings: with idempotency, the retry of an
// aggregate whose user record 1 failed skips user record 0 as a duplicate:
// the default key holds the sub-sequence number.
func TestKinesisKPLIdempotencySkipsSiblings(t *testing.T) {
	for _, perRecord := range []bool{false, true} {
		t.Run(fmt.Sprint("perRecord=", perRecord), func(t *testing.T) {
			b := &sevents.KinesisBuilder{}
			b.AddAggregated(orderRec("a", "o-1", "ok"), orderRec("b", "o-2", "flaky"), orderRec("c", "o-3", "ok"))
			b.Add("p", []byte(`{"orderId":"p-1","action":"ok"}`))
			ev := b.Event()
			raw := marshalEvent(t, ev.Records...)
			store := idempotency.NewMemoryStore()
			var l seenLog
			failedOnce := false
			var rep BatchReport
			var mode []Option
			if perRecord {
				mode = append(mode, WithIdempotencyPerRecord())
			}
			h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[order]) error {
				l.add(r)
				if r.Value.Action == "flaky" && !failedOnce {
					failedOnce = true
					return errors.New("o-2 fails once")
				}
				return nil
			}, idemOpts(store, &rep, mode...)...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if err != nil || fmt.Sprint(failures(t, out)) != "["+ev.Records[0].Kinesis.SequenceNumber+"]" {
				t.Fatalf("%s %v", out, err)
			}
			l.reset()
			out, err = h.Invoke(context.Background(), raw) // Lambda's retry from the aggregate
			if err != nil || len(failures(t, out)) != 0 {
				t.Fatalf("%s %v", out, err)
			}
			if got := l.ids(); got != "[o-2@1 o-3@2 p-1]" {
				t.Fatalf("the retry ran %s, want o-1 skipped", got)
			}
			if rep.Duplicates != 1 || !rep.Records[0].Duplicate {
				t.Fatalf("report: %d duplicates, %+v", rep.Duplicates, rep.Records)
			}
			id := ev.Records[0].EventID
			if !perRecord {
				// The factor is not declared: the checkpoint of the plain
				// record's shard and partition key covers it.
				shard, _, _ := strings.Cut(id, ":")
				if !laneCovers(t, store, "orders-fn#lane#kinesis#"+ev.Records[1].EventSourceArn+"#"+shard+"#p", ev.Records[1].Kinesis.SequenceNumber) {
					t.Fatal("the checkpoint of the shard and key p does not cover the plain record")
				}
				return
			}
			for k := range 3 {
				if key := "orders-fn#" + id + ":" + fmt.Sprint(k); !completed(t, store, key) {
					t.Fatalf("no completed record under %s", key)
				}
			}
			if !completed(t, store, "orders-fn#"+ev.Records[1].EventID) {
				t.Fatal("the plain record's key is its event id")
			}
		})
	}
}

// TestKinesisKPLKeyConcurrency: with WithKeyConcurrency, user records run
// in order per their own partition keys, and the report is the lowest
// failed Kinesis record.
func TestKinesisKPLKeyConcurrency(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	for p := range 20 {
		var users []kpl.Record
		for k := range 6 {
			id := fmt.Sprintf("o-%02d-%d", p, k)
			users = append(users, orderRec(fmt.Sprintf("cust-%d", (p+k)%4), id, "ok"))
		}
		b.AddAggregated(users...)
	}
	ev := b.Event()
	var mu sync.Mutex
	last := map[string]string{} // per partition key: the last (sequence, sub) it ran
	h, err := NewKinesis(func(_ context.Context, r KinesisRecord[order]) error {
		mu.Lock()
		defer mu.Unlock()
		pos := fmt.Sprintf("%s:%03d", r.SequenceNumber(), r.SubSequenceNumber())
		if p, ok := last[r.PartitionKey()]; ok && p >= pos {
			return fmt.Errorf("key %s out of order: %s after %s", r.PartitionKey(), pos, p)
		}
		last[r.PartitionKey()] = pos
		if r.Value.OrderID == "o-12-3" || r.Value.OrderID == "o-07-5" {
			return errors.New("fails")
		}
		return nil
	}, opts(WithKeyConcurrency(4))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), marshalEvent(t, ev.Records...))
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(t, out); len(f) != 1 || f[0] != ev.Records[7].Kinesis.SequenceNumber {
		t.Fatalf("reported %v, want the lowest failed aggregate %s", f, ev.Records[7].Kinesis.SequenceNumber)
	}
}

// TestKinesisKPLQuarantine: a user record that fails permanently is
// quarantined with the whole Kinesis record and its sub-sequence number;
// the event sluice redrive rebuilds from its envelope delivers that user
// record alone, with its own sub-sequence number (and so its idempotency
// key), and from two envelopes of one aggregate, each of them.
func TestKinesisKPLQuarantine(t *testing.T) {
	b := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", ShardID: "shardId-000000000007"}
	b.AddAggregated(orderRec("a", "o-1", "ok"), orderRec("b", "o-2", "permanent"), orderRec("c", "o-3", "ok"), orderRec("d", "o-4", "permanent"))
	ev := b.Event()
	raw := marshalEvent(t, ev.Records...)
	want := recordsOf(t, ev.Records)[0]
	var l seenLog
	var rep BatchReport
	dest := &sink{}
	h, err := NewKinesis(orderFn(&l), dlOpts(&rep, dest, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(lambdaCtx(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	if got := l.ids(); got != "[o-1@0 o-2@1 o-3@2 o-4@3]" {
		t.Fatalf("ran %s", got)
	}
	if len(dest.got) != 2 {
		t.Fatalf("%d envelopes", len(dest.got))
	}
	r := ev.Records[0]
	for k, sub := range []int64{1, 3} {
		e := dest.got[k]
		if string(e.Record) != want || e.RecordID != r.Kinesis.SequenceNumber || e.SequenceNumber != r.Kinesis.SequenceNumber ||
			e.SubSequenceNumber == nil || *e.SubSequenceNumber != sub || e.EventID != fmt.Sprintf("%s:%d", r.EventID, sub) ||
			e.PartitionKey != []string{"b", "d"}[k] || e.Shard != "shardId-000000000007" || e.Reason != dlq.ReasonPermanent ||
			e.RecordKey() != fmt.Sprintf("%s:%d", r.Kinesis.SequenceNumber, sub) {
			t.Errorf("envelope %d: %+v", k, e)
		}
	}
	// The redrive of one envelope: the whole record, marked; only o-2 runs.
	for _, tc := range []struct {
		envs []*dlq.Envelope
		ran  string
	}{
		{dest.got[:1], "[o-2@1]"},
		{dest.got, "[o-2@1 o-4@3]"},
	} {
		payload, err := redrive.Event(tc.envs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(payload, []byte(`{"sluiceSubSequenceNumber":1,`+want[1:])) {
			t.Fatalf("rebuilt event %s does not hold the record, marked", payload)
		}
		// The fixed code: o-2 and o-4 no longer fail.
		var l2 seenLog
		h2, err := NewKinesis(func(_ context.Context, r KinesisRecord[order]) error { l2.add(r); return nil }, quiet()...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h2.Invoke(context.Background(), payload)
		if err != nil {
			t.Fatal(err)
		}
		if got := l2.ids(); got != tc.ran {
			t.Fatalf("redrive of %d envelopes ran %s, want %s (%s)", len(tc.envs), got, tc.ran, out)
		}
	}
}

// TestKinesisKPLMarkerErrors: a redrive marker on a record that holds no
// such user record fails that record, saying why.
func TestKinesisKPLMarkerErrors(t *testing.T) {
	b := &sevents.KinesisBuilder{}
	b.Add("p", []byte(`{"orderId":"p-1","action":"ok"}`))
	b.AddAggregated(orderRec("a", "o-1", "ok"))
	recs := recordsOf(t, b.Event().Records)
	for _, tc := range []struct{ name, rec, msg string }{
		{"ordinary record", `{"sluiceSubSequenceNumber":0,` + recs[0][1:], "its data is not an aggregate"},
		{"past the aggregate", `{"sluiceSubSequenceNumber":1,` + recs[1][1:], "the aggregate holds 1"},
		{"negative", `{"sluiceSubSequenceNumber":-1,` + recs[1][1:], "is not the index of a user record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rep BatchReport
			h, err := NewKinesis(func(context.Context, KinesisRecord[order]) error { return nil },
				opts(WithOnBatch(func(_ context.Context, r BatchReport) { rep = r }), WithPartialResponseWhenNoneSucceed())...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), []byte(`{"Records":[`+tc.rec+`]}`))
			if err != nil || len(failures(t, out)) != 1 || len(rep.Records) != 1 || rep.Records[0].Err == nil || !strings.Contains(rep.Records[0].Err.Error(), tc.msg) {
				t.Fatalf("%s %v %+v", out, err, rep.Records)
			}
		})
	}
}

// TestKinesisKPLEmptyAggregate: an aggregate of no user records holds
// nothing to run; the batch succeeds.
func TestKinesisKPLEmptyAggregate(t *testing.T) {
	msg := []byte{0x0a, 0x01, 'k'} // a partition key table, no records
	sum := md5.Sum(msg)
	data := append(append([]byte(kpl.Magic), msg...), sum[:]...)
	b := &sevents.KinesisBuilder{}
	b.Add("k", data)
	b.Add("p", []byte(`{"orderId":"p-1","action":"ok"}`))
	var l seenLog
	h, err := NewKinesis(orderFn(&l), quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), marshalEvent(t, b.Event().Records...))
	if err != nil || len(failures(t, out)) != 0 || l.ids() != "[p-1]" {
		t.Fatalf("%s %v ran %s", out, err, l.ids())
	}
}

// FuzzKinesisKPL: whatever protobuf bytes an aggregate with a matching
// checksum carries, the handler answers (a response naming a record of the
// event, or a function error), never panics, and gives the function only
// data from within the aggregate.
func FuzzKinesisKPL(f *testing.F) {
	f.Add(kpl.Encode([]kpl.Record{orderRec("a", "o-1", "ok"), orderRec("b", "o-2", "fail")})[4:])
	f.Add([]byte{0x0a, 0x01, 'k', 0x1a, 0x04, 0x08, 0x05, 0x1a, 0x00})
	f.Add([]byte{0x0a, 0x01, 'k', 0x1a, 0x09, 0x08, 0x00})
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) > 16 {
			msg = msg[:len(msg)-16] // the seeds hold their checksum
		}
		sum := md5.Sum(msg)
		data := append(append([]byte(kpl.Magic), msg...), sum[:]...)
		b := &sevents.KinesisBuilder{}
		b.Add("p", []byte("first"))
		b.Add("k", data)
		b.Add("p", []byte("last"))
		ev := b.Event()
		h, err := NewKinesis(func(_ context.Context, r KinesisRecord[[]byte]) error {
			if r.Aggregated() && !bytes.Contains(data, r.Value) {
				t.Fatalf("user record %d data %q is not in the aggregate", r.SubSequenceNumber(), r.Value)
			}
			return nil
		}, quiet()...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(context.Background(), marshalEvent(t, ev.Records...))
		if err != nil {
			return
		}
		for _, id := range failures(t, out) {
			if id != ev.Records[1].Kinesis.SequenceNumber {
				t.Fatalf("reported %s, not the aggregate", id)
			}
		}
	})
}
