package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

type poolBody struct {
	N    int      `json:"n"`
	Tags []string `json:"tags"`
}

// poolBodies are the bodies of records from to from+n-1.
func poolBodies(from, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf(`{"n":%d,"tags":["t%d","u%d"]}`, from+i, from+i, from+i))
	}
	return out
}

// checkKeptRecords runs batches of 3, 5, 2 and 5 records (numbered from 1,
// 100, 200 and 100) through a handler whose function keeps every record,
// with one payload buffer as the Lambda runtime does, and checks that the
// first batch's records come through unchanged: their raw part equal to
// what the decoder gave for it on its own, and their values. event makes
// the batch and that decoder result; newHandler the handler, its function
// calling keep; parts splits a record into raw part and value.
func checkKeptRecords[R, E any](t *testing.T, event func(from, n int) ([]byte, []E),
	newHandler func(keep func(R)) (interface {
		Invoke(context.Context, []byte) ([]byte, error)
	}, error), parts func(R) (E, poolBody)) {
	t.Helper()
	var kept []R
	h, err := newHandler(func(r R) { kept = append(kept, r) })
	if err != nil {
		t.Fatal(err)
	}
	first, want := event(1, 3)
	later := [][]byte{first}
	for _, b := range [][2]int{{100, 5}, {200, 2}, {100, 5}} {
		ev, _ := event(b[0], b[1])
		later = append(later, ev)
	}
	buf := make([]byte, 0, 1<<16)
	for _, ev := range later {
		buf = append(buf[:0], ev...)
		out, err := h.Invoke(context.Background(), buf)
		if err != nil || string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("Invoke: %s %v", out, err)
		}
		clear(buf[:cap(buf)])
	}
	if len(kept) != 3+5+2+5 {
		t.Fatalf("%d records kept", len(kept))
	}
	for i, w := range want {
		raw, v := parts(kept[i])
		if !reflect.DeepEqual(raw, w) {
			t.Fatalf("kept record %d changed:\n got %+v\nwant %+v", i, raw, w)
		}
		if w := (poolBody{N: 1 + i, Tags: []string{fmt.Sprint("t", 1+i), fmt.Sprint("u", 1+i)}}); !reflect.DeepEqual(v, w) {
			t.Fatalf("kept value %d is %+v, want %+v", i, v, w)
		}
	}
}

// The decoded records and items are reused from one invocation to the next,
// and Lambda reuses the payload: records a function keeps from one batch
// must come through the next batches unchanged.
func TestKeptRecordsSurviveLaterInvocations(t *testing.T) {
	t.Run("sqs", func(t *testing.T) {
		checkKeptRecords(t, func(from, n int) ([]byte, []events.SQSMessage) {
			b := &sevents.SQSBuilder{SenderID: fmt.Sprint("sender-", from)}
			for _, body := range poolBodies(from, n) {
				b.AddRedelivered(body, from)
			}
			raw, err := sevents.MarshalEvent(b.Event())
			if err != nil {
				t.Fatal(err)
			}
			// The decoder's own result, from a copy: a slice never put back.
			recs, _, _, err := decodeSQSEvent(append([]byte(nil), raw...))
			if err != nil || len(recs) != n {
				t.Fatalf("decode: %d records, %v", len(recs), err)
			}
			return raw, recs
		}, func(keep func(SQSRecord[poolBody])) (interface {
			Invoke(context.Context, []byte) ([]byte, error)
		}, error) {
			return NewSQS(func(_ context.Context, r SQSRecord[poolBody]) error { keep(r); return nil },
				WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithConcurrency(1))
		}, func(r SQSRecord[poolBody]) (events.SQSMessage, poolBody) { return r.Raw, r.Value })
	})
	t.Run("kinesis", func(t *testing.T) {
		checkKeptRecords(t, func(from, n int) ([]byte, []events.KinesisEventRecord) {
			b := &sevents.KinesisBuilder{FirstSequence: uint64(from)}
			for i, body := range poolBodies(from, n) {
				b.Add(fmt.Sprint("pk-", from+i), []byte(body))
			}
			raw, err := sevents.MarshalEvent(b.Event())
			if err != nil {
				t.Fatal(err)
			}
			ev, err := decodeKinesisEvent(append([]byte(nil), raw...))
			if err != nil || len(ev.records) != n {
				t.Fatalf("decode: %d records, %v", len(ev.records), err)
			}
			return raw, ev.records
		}, func(keep func(KinesisRecord[poolBody])) (interface {
			Invoke(context.Context, []byte) ([]byte, error)
		}, error) {
			return NewKinesis(func(_ context.Context, r KinesisRecord[poolBody]) error { keep(r); return nil },
				WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
		}, func(r KinesisRecord[poolBody]) (events.KinesisEventRecord, poolBody) { return r.Raw, r.Value })
	})
}

// bodySpy records the bytes each decoding hands its UnmarshalJSON, and
// changes them, as a careless one may.
type bodySpy struct{}

var bodySpySeen []string

func (*bodySpy) UnmarshalJSON(b []byte) error {
	bodySpySeen = append(bodySpySeen, string(b))
	b[1] = 'X'
	return nil
}

// An SQS body is decoded from bytes the decoder kept for it, without a
// copy, the first time; a second decoding of the same message (here the
// idempotency keys read ahead, then the record itself) gets a copy, so an
// UnmarshalJSON (or a []byte value) that changes its bytes changes no
// other decoding's, and no message's Body.
func TestSQSBodyBytesAreEachDecodingsOwn(t *testing.T) {
	var rep BatchReport
	var bodies []string
	h, err := NewSQS(func(_ context.Context, r SQSRecord[bodySpy]) error {
		bodies = append(bodies, r.Body())
		return nil
	}, idemOpts(idempotency.NewMemoryStore(), &rep, WithConcurrency(1),
		WithIdempotencyKey(func(r SQSRecord[bodySpy]) string { return r.MessageID() }))...)
	if err != nil {
		t.Fatal(err)
	}
	bodySpySeen = nil
	in := []string{`{"a":"\u00e9"}`, `["plain"]`, `{"b":"\"q\""}`}
	out, err := h.Invoke(context.Background(), sqsBodies(t, in...))
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s %v", out, err)
	}
	if !reflect.DeepEqual(bodies, in) {
		t.Fatalf("the function saw bodies %q, want %q", bodies, in)
	}
	if len(bodySpySeen) != 2*len(in) {
		t.Fatalf("%d decodings (%q), want two per message (the keys read ahead, then the record)", len(bodySpySeen), bodySpySeen)
	}
	for i, s := range bodySpySeen {
		if s != in[i%len(in)] {
			t.Fatalf("decoding %d got %q, want %q", i, s, in[i%len(in)])
		}
	}
}
