package windowrun

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
	"github.com/sluicehq/sluice/internal/eventscan"
	"github.com/sluicehq/sluice/internal/windowstate"
)

// seqEvent is a window event whose records are their sequence numbers.
func seqEvent(seqs ...string) []byte {
	recs := make([]map[string]string, len(seqs))
	for i, s := range seqs {
		recs[i] = map[string]string{"seq": s}
	}
	b, _ := json.Marshal(map[string]any{"window": map[string]string{"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:01:00Z"},
		"state": map[string]string{}, "shardId": "s-1", "Records": recs})
	return b
}

func seqsOf(payload []byte, n int) ([]string, error) {
	var ev struct{ Records []struct{ Seq string } }
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	if n > len(ev.Records) {
		return nil, errors.New("too few records")
	}
	out := make([]string, n)
	for i := range out {
		out[i] = ev.Records[i].Seq
	}
	return out, nil
}

// listHandler keeps the sequence numbers folded, in order; its inner
// handler folds every record, in order, and reports none.
func listHandler(t *testing.T, limit int) *Handler[string, []string] {
	h, err := New(sevents.SourceKinesis, func(_ context.Context, s []string, r string) ([]string, error) { return append(s, r), nil },
		func(context.Context, *eventscan.WindowEvent, []string) error { return nil }, func(r string) string { return r })
	if err != nil {
		t.Fatal(err)
	}
	h.Set(func(ctx context.Context, payload []byte) ([]byte, error) {
		var ev struct{ Records []json.RawMessage }
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, err
		}
		all, err := seqsOf(payload, len(ev.Records))
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			if err := h.Step(ctx, r); err != nil {
				return nil, err
			}
		}
		return batchresponse.AppendStringFailures(nil, nil, nil), nil
	}, seqsOf, Config{Limit: limit, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TooLarge: func(o Overflow) error { return errors.New("too large at " + o.Record) }})
	return h
}

// TestOverflowReportsTheFirstRecordThatDoesNotFit: the state returned is
// the fold of the records before it; a KPL record's siblings (records of
// one sequence number) are reported with it, and a first record that
// does not fit fails the invocation.
func TestOverflowReportsTheFirstRecordThatDoesNotFit(t *testing.T) {
	three, _ := windowstate.Encode([]string{"1", "2", "3"})
	one, _ := windowstate.Encode([]string{"1"})
	for _, c := range []struct {
		name   string
		limit  int
		seqs   []string
		report string // "" for a function error
		state  []string
	}{
		{"fits", len(three), []string{"1", "2", "3"}, "none", []string{"1", "2", "3"}},
		{"the fourth does not fit", len(three), []string{"1", "2", "3", "4", "5"}, "4", []string{"1", "2", "3"}},
		{"siblings go with it", len(three), []string{"1", "3", "3", "3"}, "3", []string{"1"}},
		{"the first does not fit", len(one) - 1, []string{"1", "2"}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := listHandler(t, c.limit).Invoke(context.Background(), seqEvent(c.seqs...))
			if c.report == "" {
				if err == nil || !strings.Contains(err.Error(), "too large at 1") {
					t.Fatalf("want the TooLarge error of record 1, got %s, %v", out, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reported, err := batchresponse.FirstReported(out)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimPrefix(c.report, "none"); reported != want {
				t.Fatalf("reported %q, want %q: %s", reported, want, out)
			}
			var resp struct{ State map[string]string }
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatal(err)
			}
			s, err := windowstate.Decode[[]string](resp.State)
			if err != nil || strings.Join(s, ",") != strings.Join(c.state, ",") {
				t.Fatalf("state %q (%v), want %q", s, err, c.state)
			}
		})
	}
}
