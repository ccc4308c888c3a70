package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
)

func TestBatchReport(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "permanent", "ok")
	var rep BatchReport
	onBatch := WithOnBatch(func(ctx context.Context, r BatchReport) { rep = r })
	fn := func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) }

	h, _ := NewKinesis(fn, opts(onBatch)...)
	if _, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		outcome  batch.Outcome
		attempts int
		reported bool
		err      error
	}{{batch.Succeeded, 1, false, nil}, {batch.Failed, 1, true, nil}, {batch.NotAttempted, 0, false, batch.ErrStopped}}
	if rep.Source != "kinesis" || rep.Err != nil || len(rep.Records) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for i, w := range want {
		r := rep.Records[i]
		if r.ID != seqs[i] || r.Key == "" || r.Outcome != w.outcome || r.Attempts != w.attempts || r.Reported != w.reported {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
		if w.err != nil && !errors.Is(r.Err, w.err) || w.outcome == batch.Succeeded && r.Err != nil {
			t.Errorf("record %d: error %v", i, r.Err)
		}
	}
	if batch.Classify(rep.Records[1].Err) != batch.ClassPermanent {
		t.Errorf("record 1: error %v should be permanent", rep.Records[1].Err)
	}

	// A function error is in the report, and then nothing is reported.
	raw, _ = kinesisTestEvent("fail", "ok")
	if _, err := h.Invoke(context.Background(), raw); err == nil || !errors.Is(rep.Err, batch.ErrNoProgress) || rep.Records[0].Reported {
		t.Fatalf("no progress: err %v, report %+v", err, rep)
	}
	// So is whole-batch mode's.
	h, _ = NewKinesis(fn, opts(onBatch, WithWholeBatchFailures())...)
	raw, _ = kinesisTestEvent("ok", "fail")
	if _, err := h.Invoke(context.Background(), raw); err == nil || rep.Err != err || rep.Records[1].Reported {
		t.Fatalf("whole batch: err %v, report %+v", err, rep)
	}
}

// The deadline guard and record ages read the handler's clock: with a fake
// one, a slow batch is simulated without sleeping.
func TestClockDrivesDeadlineGuard(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "ok", "ok", "ok")
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	dl, _ := ctx.Deadline()
	var mu sync.Mutex
	clock := dl.Add(-350 * time.Millisecond)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	var buf bytes.Buffer
	ran := 0
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		ran++
		mu.Lock()
		clock = clock.Add(100 * time.Millisecond) // each record takes 100 ms
		mu.Unlock()
		return nil
	}, withClock(now), withLookupEnv(noEnv), WithDeadlineMargin(100*time.Millisecond),
		WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(ctx, raw)
	if err != nil || ran != 3 || !slices.Equal(failures(t, out), []string{seqs[3]}) {
		t.Fatalf("ran %d, answered %s %v; want 3 records run and the 4th reported", ran, out, err)
	}
	var sum map[string]any
	json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &sum)
	if sum["not_attempted"] != 1.0 || sum["duration"] != float64(300*time.Millisecond) {
		t.Fatalf("summary %v: want 1 not attempted and a duration of 300ms by the handler's clock", sum)
	}
}
