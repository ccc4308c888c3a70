package localtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/browser"
	"github.com/sluicehq/sluice/localtest"
)

// BenchmarkHTMLReport100k loads, in headless Chromium, the page of a run
// of 100,000 Kinesis records in batches of 10 over 4 shards, one record
// in 1,000 poison (split out, retried, given up on): about 11,000
// invocations. Each iteration opens the page in a fresh browser; it
// reports the page's size and the time from the start of the navigation
// until the page had drawn itself (its body's data-render-ms).
func BenchmarkHTMLReport100k(b *testing.B) {
	h := handlers.MustKinesis(func(_ context.Context, r handlers.KinesisRecord[order]) error {
		if r.Value.Poison {
			return errors.New("poison")
		}
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithRetry(batch.RetryPolicy{}))
	recs := make([]localtest.InputRecord, 100_000)
	for i := range recs {
		poison := i%1000 == 999
		recs[i] = localtest.InputRecord{PartitionKey: fmt.Sprintf("key-%d", i%64), Data: json.RawMessage(fmt.Sprintf(`{"id":"o%d","poison":%v}`, i, poison))}
		if poison {
			recs[i].Expect = localtest.FateOnFailure
		}
	}
	page := filepath.Join(b.TempDir(), "run.html")
	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(10), Shards: ptr(4),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(2), FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h), HTML: page})
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(page)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var ms float64
	for b.Loop() {
		p := browser.Open(b, page, 1280, 900)
		if pr := p.Problems(); len(pr) > 0 {
			b.Fatalf("the page had problems: %q", pr)
		}
		ms, err = strconv.ParseFloat(browser.Eval[string](b, p, `document.body.dataset.renderMs`), 64)
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB")
	b.ReportMetric(ms, "render-ms")
	b.ReportMetric(float64(rep.Totals.Invocations), "invocations")
	b.ReportMetric(float64(rep.Totals.Records), "records")
}
