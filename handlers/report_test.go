package handlers

import (
	"context"
	"errors"
	"testing"

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
