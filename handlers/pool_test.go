package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/engine"
)

func TestSlicePoolGivesZeroElements(t *testing.T) {
	var p slicePool[engine.Item]
	if s := p.make(3); len(s) != 3 || s[0] != (engine.Item{}) {
		t.Fatalf("empty pool: %v", s)
	}
	s := p.make(4)
	for i := range s {
		s[i] = engine.Item{ID: fmt.Sprint(i), Key: "k"}
	}
	s = append(s[:2], engine.Item{ID: "past the length"})[:1] // dirty past the length too
	p.put(s)
	got := p.get()
	if len(got) != 0 {
		t.Fatalf("len %d after get, want 0", len(got))
	}
	for i, it := range got[:cap(got)] {
		if it != (engine.Item{}) {
			t.Fatalf("element %d of a reused slice is %+v, want zero", i, it)
		}
	}
}

type poolBody struct {
	N    int      `json:"n"`
	Tags []string `json:"tags"`
}

// The decoded records and items are reused from one invocation to the next,
// and Lambda reuses the payload: records a function keeps from one batch
// must come through the next batches unchanged.
func TestKeptRecordsSurviveLaterInvocations(t *testing.T) {
	bodies := func(from, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(`{"n":%d,"tags":["t%d","u%d"]}`, from+i, from+i, from+i))
		}
		return out
	}
	want := func(t *testing.T, from int, got poolBody) {
		t.Helper()
		if w := (poolBody{N: from, Tags: []string{fmt.Sprint("t", from), fmt.Sprint("u", from)}}); !reflect.DeepEqual(got, w) {
			t.Fatalf("kept value %+v, want %+v", got, w)
		}
	}
	// invoke runs the events through h with one payload buffer, as the
	// Lambda runtime does.
	invoke := func(t *testing.T, h interface {
		Invoke(context.Context, []byte) ([]byte, error)
	}, evs ...[]byte) {
		t.Helper()
		buf := make([]byte, 0, 1<<16)
		for _, ev := range evs {
			buf = append(buf[:0], ev...)
			out, err := h.Invoke(context.Background(), buf)
			if err != nil || string(out) != `{"batchItemFailures":[]}` {
				t.Fatalf("Invoke: %s %v", out, err)
			}
			clear(buf[:cap(buf)])
		}
	}

	t.Run("sqs", func(t *testing.T) {
		event := func(from, n int) ([]byte, []events.SQSMessage) {
			b := &sevents.SQSBuilder{SenderID: fmt.Sprint("sender-", from)}
			for _, body := range bodies(from, n) {
				b.AddRedelivered(body, from)
			}
			raw, err := sevents.MarshalEvent(b.Event())
			if err != nil {
				t.Fatal(err)
			}
			// The decoder's own result, from a copy: a slice never put back.
			recs, _, err := decodeSQSEvent(append([]byte(nil), raw...))
			if err != nil || len(recs) != n {
				t.Fatalf("decode: %d records, %v", len(recs), err)
			}
			return raw, recs
		}
		var kept []SQSRecord[poolBody]
		h, err := NewSQS(func(_ context.Context, r SQSRecord[poolBody]) error {
			kept = append(kept, r)
			return nil
		}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv), WithConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		a, wantA := event(1, 3)
		b, _ := event(100, 5)
		c, _ := event(200, 2)
		invoke(t, h, a, b, c, b)
		if len(kept) != 3+5+2+5 {
			t.Fatalf("%d records kept", len(kept))
		}
		for i, w := range wantA {
			if got := kept[i].Raw; !reflect.DeepEqual(got, w) {
				t.Fatalf("kept message %d changed:\n got %+v\nwant %+v", i, got, w)
			}
			want(t, 1+i, kept[i].Value)
		}
	})

	t.Run("kinesis", func(t *testing.T) {
		event := func(from, n int) ([]byte, []events.KinesisEventRecord) {
			b := &sevents.KinesisBuilder{FirstSequence: uint64(from)}
			for i, body := range bodies(from, n) {
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
		}
		var kept []KinesisRecord[poolBody]
		h, err := NewKinesis(func(_ context.Context, r KinesisRecord[poolBody]) error {
			kept = append(kept, r)
			return nil
		}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(noEnv))
		if err != nil {
			t.Fatal(err)
		}
		a, wantA := event(1, 3)
		b, _ := event(100, 5)
		c, _ := event(200, 2)
		invoke(t, h, a, b, c, b)
		if len(kept) != 3+5+2+5 {
			t.Fatalf("%d records kept", len(kept))
		}
		for i, w := range wantA {
			got := kept[i].Raw
			if !reflect.DeepEqual(got, w) {
				t.Fatalf("kept record %d changed:\n got %+v\nwant %+v", i, got, w)
			}
			want(t, 1+i, kept[i].Value)
		}
	})
}
