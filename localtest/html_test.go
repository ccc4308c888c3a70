package localtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/internal/testsupport/browser"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/invoke"
)

// The HTML report (Options.HTML) is checked in a real headless Chromium:
// the page loads without a script error, a console error or a request,
// and what it shows, read from its DOM, is what the report says.

var screenshot = flag.String("html.screenshot", "", "write a PNG of TestHTMLReportKinesis's page to this path (docs/images/run-report.png)")

// tracedRun runs opts with an HTML report and returns the report, the
// trace and the page's path.
func tracedRun(t *testing.T, opts localtest.Options) (*localtest.Report, []localtest.TraceEntry, string) {
	t.Helper()
	var trace []localtest.TraceEntry
	opts.Trace = func(e localtest.TraceEntry) { trace = append(trace, e) }
	opts.HTML = filepath.Join(t.TempDir(), "run.html")
	rep, err := localtest.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep, trace, opts.HTML
}

// entryLanes are the lanes a trace entry names.
func entryLanes(e localtest.TraceEntry) []string {
	switch {
	case e.Shard != "":
		return []string{e.Shard}
	case e.Partition != "":
		return strings.Split(e.Partition, ",")
	case len(e.Groups) > 0:
		return e.Groups
	}
	return []string{"queue"}
}

// pageCounts reads the counts the page computed from its data.
func pageCounts(t *testing.T, p *browser.Page) map[string]int {
	t.Helper()
	raw := browser.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll('td[data-count], span[data-count]')]
		.map(e => [e.dataset.count, e.textContent]))`)
	out := map[string]int{}
	for k, v := range raw {
		n, err := strconv.Atoi(strings.ReplaceAll(v, ",", ""))
		if err != nil {
			t.Fatalf("count %s is %q", k, v)
		}
		out[k] = n
	}
	return out
}

// checkPage holds what the page shows against the run's report and trace.
func checkPage(t *testing.T, p *browser.Page, rep *localtest.Report, trace []localtest.TraceEntry) map[string]int {
	t.Helper()
	if pr := p.Problems(); len(pr) > 0 {
		t.Errorf("the page had problems: %q", pr)
	}
	if rq := p.Requests(); len(rq) > 0 {
		t.Errorf("the page asked for %q: it must fetch nothing", rq)
	}
	tot := rep.Totals
	c := pageCounts(t, p)
	want := map[string]int{
		"invocations": tot.Invocations, "records": tot.Records,
		"result:" + localtest.ResultSuccess: tot.Successes, "result:" + localtest.ResultPartial: tot.PartialFailures,
		"result:" + localtest.ResultFunctionError: tot.FunctionErrors, "result:" + localtest.ResultTimeout: tot.Timeouts,
		"crash": tot.Crashes, "duplicate": tot.Duplicates, "kills": len(rep.Kills), "onfailure-records": len(rep.OnFailureRecords),
		"unexpected": len(rep.Unexpected),
	}
	sqs := rep.Mapping.EventSource == events.SourceSQS || rep.Mapping.EventSource == events.SourceSQSFIFO
	if !sqs {
		want["bisection"], want["retry"] = tot.Bisections, tot.Retries
	}
	for _, f := range localtest.Fates() {
		n := 0
		for _, got := range rep.Fates {
			if got == f {
				n++
			}
		}
		want["fate:"+f] = n
	}
	for k, w := range want {
		if got, ok := c[k]; !ok || got != w {
			t.Errorf("the page shows %s = %d (shown: %v), the report %d", k, got, ok, w)
		}
	}
	// The fates as the totals count them, too.
	for f, n := range map[string]int{localtest.FateProcessed: tot.Processed, localtest.FateQuarantined: tot.Quarantined,
		localtest.FateOnFailure: tot.OnFailure, localtest.FateDeadLettered: tot.DeadLettered, localtest.FateLeft: tot.Left,
		localtest.FateFiltered: tot.Filtered} {
		if c["fate:"+f] != n {
			t.Errorf("the page shows %d %s records, the report's totals %d", c["fate:"+f], f, n)
		}
	}

	// The timeline: with every lane on one page and room for each bar,
	// one bar per invocation and lane it delivered records of.
	if g := browser.Eval[string](t, p, `document.getElementById('timeline').dataset.grouped`); g == "" {
		bars := 0
		for _, e := range trace {
			bars += len(entryLanes(e))
		}
		if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .bar.inv').length`); got != bars {
			t.Errorf("the timeline draws %d bars, the trace has %d invocations of a lane", got, bars)
		}
		if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .bar[data-result=crash]').length`); got != tot.Crashes {
			t.Errorf("the timeline draws %d crashes, the report counts %d", got, tot.Crashes)
		}
		if !sqs {
			if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .tl .mk-split').length`); got != tot.Bisections {
				t.Errorf("the timeline marks %d splits, the report counts %d bisections", got, tot.Bisections)
			}
		}
		if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .tl .mk-of').length`); got != len(rep.OnFailureRecords) {
			t.Errorf("the timeline marks %d on-failure records, the report has %d", got, len(rep.OnFailureRecords))
		}
		settled := 0 // records whose fate other than processed was settled in an invocation
		for _, f := range rep.Fates {
			if f != localtest.FateProcessed && f != localtest.FateFiltered && f != localtest.FateLeft && f != localtest.FateOnFailure {
				settled++
			}
		}
		if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .tl .mk-fate').length`); got != settled {
			t.Errorf("the timeline marks %d records quarantined, dead-lettered or skipped, the report has %d", got, settled)
		}
		// Each checkpoint's last move is to the report's checkpoint.
		last := browser.Eval[map[string]string](t, p, `Object.fromEntries([...document.querySelectorAll('#timeline .lane')]
			.map(l => [l.dataset.lane, [...l.querySelectorAll('.cp')].map(c => c.title).pop() || '']))`)
		for lane, cp := range rep.Checkpoints {
			if cp == "" {
				continue
			}
			if rep.Mapping.EventSource == events.SourceKafka {
				cp = lane + "@" + cp
			}
			if !strings.Contains(last[lane], "("+cp+")") {
				t.Errorf("lane %s: the last checkpoint mark says %q, the report's checkpoint is %s", lane, last[lane], cp)
			}
		}
	}
	return c
}

// openRecord follows the page's link to a record and checks its path:
// every invocation it was in, its fate.
func openRecord(t *testing.T, p *browser.Page, selector, id string, rep *localtest.Report, trace []localtest.TraceEntry) {
	t.Helper()
	p.Click(t, selector)
	p.Wait(t, `!document.getElementById('panel').hidden && document.getElementById('panel').dataset.kind === 'record'`)
	if got := browser.Eval[string](t, p, `document.getElementById('panel').dataset.record`); got != id {
		t.Fatalf("the link opened %q, want the record %s", got, id)
	}
	var want []string
	for _, e := range trace {
		if slices.Contains(e.IDs, id) {
			want = append(want, strconv.Itoa(e.N))
		}
	}
	got := browser.Eval[[]string](t, p, `[...document.querySelectorAll('#path tr[data-n]')].map(r => r.dataset.n)`)
	if !slices.Equal(got, want) {
		t.Errorf("record %s: its path lists invocations %v, the trace %v", id, got, want)
	}
	text := browser.Eval[string](t, p, `document.getElementById('panel').textContent`)
	if fate := rep.Fates[id]; !strings.Contains(text, fate) {
		t.Errorf("record %s: the panel does not say its fate %s: %s", id, fate, text)
	}
}

// TestHTMLReportKinesis runs Kinesis records through the compiled
// conformance function while the runner crashes, times out and
// duplicates invocations: a record that kills the process is bisected out
// and given up on (nothing expected it: fate-as-expected is violated),
// records that fail permanently are quarantined by the function, and
// records the filter rejects are filtered. The page shows the same counts
// as the report, marks every split, kill, on-failure record, quarantine
// and checkpoint, and its violation links to the record it names.
func TestHTMLReportKinesis(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	dir := t.TempDir()
	dlqFile, effects := filepath.Join(dir, "dlq.jsonl"), filepath.Join(dir, "effects.jsonl")
	q, err := localtest.QuarantineFile(dlqFile)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := invoke.RuntimeAPI(bin, []string{"PATH=/usr/bin:/bin", "SLUICE_SOURCE=kinesis", "SLUICE_EFFECTS_FILE=" + effects,
		"SLUICE_DLQ_FILE=" + dlqFile, "SLUICE_RETRY_BACKOFF=1ms", "SLUICE_REPORT_BATCH_ITEM_FAILURES=true"})
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	const poison = 20
	var recs []localtest.InputRecord
	for i := range 48 {
		kind, action, expect := "order", "ok", ""
		switch {
		case i == poison:
			action = "exit" // kills the process: only bisection finds it
		case i%9 == 4:
			action, expect = "permanent", localtest.FateQuarantined
		case i%11 == 7:
			kind, expect = "noise", localtest.FateFiltered
		}
		recs = append(recs, localtest.InputRecord{Line: i + 1, PartitionKey: []string{"alice", "bob", "carol"}[i%3],
			Data: json.RawMessage(fmt.Sprintf(`{"id":"o%d","kind":%q,"action":%q}`, i, kind, action)), Expect: expect})
	}
	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(8), Shards: ptr(2),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(2), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		FilterCriteria: &localtest.FilterCriteria{Filters: []localtest.Filter{{Pattern: `{"data":{"kind":["order"]}}`}}}}
	rep, trace, page := tracedRun(t, localtest.Options{Mapping: m, Records: recs, Invoker: inv, Quarantine: q, Seed: 8,
		FunctionTimeout: time.Second, Faults: localtest.Faults{CrashRate: 0.08, TimeoutRate: 0.04, DuplicateRate: 0.1},
		Effects: func() ([]localtest.Effect, error) { return localtest.ReadEffects(effects, "") }})
	tot := rep.Totals
	t.Logf("totals %+v", tot)
	if tot.Bisections == 0 || tot.Retries == 0 || tot.Crashes == 0 || tot.Timeouts == 0 || tot.Quarantined == 0 || tot.Filtered == 0 ||
		tot.Duplicates == 0 || tot.OnFailure == 0 || len(rep.Unexpected) == 0 {
		t.Fatalf("the run lacks what the page must show (bisection, retry, crash, timeout, quarantine, filter, duplicate, on-failure, "+
			"an unexpected fate): %+v; choose another seed", tot)
	}

	p := browser.Open(t, page, 1280, 900)
	c := checkPage(t, p, rep, trace)
	if c["checkpoint"] == 0 {
		t.Error("no checkpoint advance is marked")
	}
	if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .tl .mk-kill').length`); got != len(rep.Kills) {
		t.Errorf("the timeline marks %d kills, the report lists %d", got, len(rep.Kills))
	}
	filtered := browser.Eval[[]string](t, p, `[...document.querySelectorAll('#timeline .tl .mk-filt')].map(e => e.title)`)
	n := 0
	for _, title := range filtered {
		k, _ := strconv.Atoi(strings.Fields(title)[0])
		n += k
	}
	if n != tot.Filtered {
		t.Errorf("the timeline marks %d filtered records (%q), the report counts %d", n, filtered, tot.Filtered)
	}

	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, p.Screenshot(t), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The violated check is at the top, and its violation opens the
	// record it names.
	if got := browser.Eval[string](t, p, `document.querySelector('[data-invariant="fate-as-expected"]').dataset.status`); got != localtest.StatusViolated {
		t.Fatalf("fate-as-expected shows %q", got)
	}
	var poisonID string
	for _, u := range rep.Unexpected {
		if u.Line == poison+1 {
			poisonID = u.ID
		}
	}
	if poisonID == "" {
		t.Fatalf("the poison record is not among the unexpected: %+v", rep.Unexpected)
	}
	openRecord(t, p, `[data-invariant="fate-as-expected"] li.violation a`, poisonID, rep, trace)
	why := browser.Eval[string](t, p, `document.querySelector('#panel .why').textContent`)
	if !strings.Contains(why, "gave up on it") || !strings.Contains(why, "RetryAttemptsExhausted") || !strings.Contains(why, "expected to end processed") {
		t.Errorf("the record's why: %s", why)
	}

	// The panel closes, and the address forgets the record.
	p.Click(t, "#panel .close")
	p.Wait(t, `document.getElementById('panel').hidden && location.hash === ''`)

	// A split invocation opens with its records.
	var split localtest.TraceEntry
	for i, e := range trace {
		if e.Result == localtest.ResultFunctionError && len(e.IDs) > 1 && i+1 < len(trace) && trace[i+1].Bisect {
			split = e
			break
		}
	}
	p.Click(t, fmt.Sprintf(`#timeline .bar[data-n="%d"]`, split.N))
	p.Wait(t, fmt.Sprintf(`document.getElementById('panel').dataset.kind === 'invocation' && document.getElementById('panel').dataset.n === '%d'`, split.N))
	if got := browser.Eval[int](t, p, `document.querySelectorAll('#panel tr[data-record]').length`); got != len(split.IDs) {
		t.Errorf("invocation #%d shows %d records, the trace %d", split.N, got, len(split.IDs))
	}
	if text := browser.Eval[string](t, p, `document.getElementById('panel').textContent`); !strings.Contains(text, "bisected") {
		t.Errorf("invocation #%d is not shown as split: %s", split.N, text)
	}

	// Bars laid end to end by duration, over the whole run: a bar each.
	p.Click(t, "#tl-all")
	browser.Eval[bool](t, p, `(() => { const s = document.querySelector('#timeline select'); s.value = 'time';
		s.dispatchEvent(new Event('change')); return true })()`)
	if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .bar.inv').length`); got != tot.Invocations {
		t.Errorf("by duration, the timeline draws %d bars for %d invocations", got, tot.Invocations)
	}

	// A record's row opens its path too.
	p.Click(t, fmt.Sprintf(`#records tr[data-record=%q] td:last-child`, poisonID))
	p.Wait(t, fmt.Sprintf(`document.getElementById('panel').dataset.record === %q`, poisonID))

	// The records table filters by fate.
	browser.Eval[bool](t, p, `(() => { const s = document.getElementById('rec-fate');
		s.value = String([...s.options].findIndex(o => o.textContent.startsWith('quarantined ')) - 1);
		s.dispatchEvent(new Event('change')); return true })()`)
	if got := pageCounts(t, p)["table-matches"]; got != tot.Quarantined {
		t.Errorf("the table lists %d quarantined records, the report counts %d", got, tot.Quarantined)
	}
	if pr := p.Problems(); len(pr) > 0 {
		t.Errorf("the page had problems: %q", pr)
	}
}

type order struct {
	ID     string `json:"id"`
	Poison bool   `json:"poison"`
}

// TestHTMLReportSQSFIFO: message groups are the lanes; a poison message
// is redelivered until the queue's redrive policy moves it to its
// dead-letter queue, as expected; two batches run at once.
func TestHTMLReportSQSFIFO(t *testing.T) {
	h := handlers.MustSQSFIFO(func(_ context.Context, r handlers.SQSRecord[order]) error {
		if r.Value.Poison {
			return errors.New("poison")
		}
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithRetry(batch.RetryPolicy{}))
	var recs []localtest.InputRecord
	for i := range 40 {
		poison := i == 9 || i == 26
		r := localtest.InputRecord{MessageGroupID: fmt.Sprintf("g%d", i%4), Body: json.RawMessage(fmt.Sprintf(`{"id":"m%d","poison":%v}`, i, poison))}
		if poison {
			r.Expect = localtest.FateDeadLettered
		}
		recs = append(recs, r)
	}
	m := &localtest.Mapping{EventSource: events.SourceSQSFIFO, BatchSize: ptr(5), FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		RedrivePolicy: &localtest.RedrivePolicy{MaxReceiveCount: 3}, ScalingConfig: &localtest.ScalingConfig{MaximumConcurrency: ptr(2)}}
	rep, trace, page := tracedRun(t, localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h), Seed: 3,
		Faults: localtest.Faults{DuplicateRate: 0.1, ErrorRate: 0.05}})
	if rep.Totals.DeadLettered != 2 || rep.Totals.Redeliveries == 0 || rep.Totals.PartialFailures == 0 {
		t.Fatalf("the run lacks what the page must show: %+v", rep.Totals)
	}
	p := browser.Open(t, page, 1280, 900)
	c := checkPage(t, p, rep, trace)
	lanes := browser.Eval[[]string](t, p, `[...document.querySelectorAll('#timeline .lane')].map(l => l.dataset.lane)`)
	if !slices.Equal(lanes, []string{"g0", "g1", "g2", "g3"}) {
		t.Errorf("lanes %v, want the four message groups", lanes)
	}
	redelivered := 0
	for _, e := range trace {
		if e.Retry > 0 && !e.Duplicate {
			redelivered++
		}
	}
	if c["redelivered"] != redelivered {
		t.Errorf("the page counts %d batches delivered again, the trace %d", c["redelivered"], redelivered)
	}
	var dl string
	for id, f := range rep.Fates {
		if f == localtest.FateDeadLettered {
			dl = id
		}
	}
	p.Click(t, fmt.Sprintf(`#records tr[data-record=%q] a`, dl))
	p.Wait(t, `document.getElementById('panel').dataset.kind === 'record'`)
	if got := browser.Eval[string](t, p, `document.getElementById('panel').dataset.record`); got != dl {
		t.Fatalf("the table's link opened %q, want %s", got, dl)
	}
	if why := browser.Eval[string](t, p, `document.querySelector('#panel .why').textContent`); !strings.Contains(why, "redrive policy") {
		t.Errorf("the dead-lettered record's why: %s", why)
	}
}

// TestHTMLReportKafka: topic-partitions are the lanes; an event holds
// several partitions, so its bar is drawn in each; checkpoints are
// offsets.
func TestHTMLReportKafka(t *testing.T) {
	h := handlers.MustKafka(func(_ context.Context, r handlers.KafkaRecord[order]) error {
		if r.Value.Poison {
			return errors.New("poison")
		}
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithRetry(batch.RetryPolicy{}))
	var recs []localtest.InputRecord
	for i := range 30 {
		r := localtest.InputRecord{Partition: ptr(i % 3), Value: json.RawMessage(fmt.Sprintf(`{"id":"k%d","poison":%v}`, i, i == 13))}
		if i == 13 {
			r.Expect = localtest.FateOnFailure
		}
		recs = append(recs, r)
	}
	m := &localtest.Mapping{EventSource: events.SourceKafka, Topic: "orders", Partitions: ptr(3), BatchSize: ptr(12), Mode: localtest.KafkaProvisioned,
		StartingPosition: "TRIM_HORIZON", BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(1),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, trace, page := tracedRun(t, localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h)})
	multi := false
	for _, e := range trace {
		multi = multi || strings.Contains(e.Partition, ",")
	}
	if !multi || rep.Totals.OnFailure == 0 || rep.Totals.Retries == 0 {
		t.Fatalf("the run lacks an event of several partitions or a given-up record: %+v", rep.Totals)
	}
	p := browser.Open(t, page, 1280, 900)
	checkPage(t, p, rep, trace)
}

// TestHTMLReportKPL: a Kinesis record the KPL aggregated is its user
// records; the trace, the checkpoints and on-failure records name the
// Kinesis record, the page shows each user record with its path.
func TestHTMLReportKPL(t *testing.T) {
	h := handlers.MustKinesis(func(_ context.Context, r handlers.KinesisRecord[order]) error {
		if r.Value.Poison {
			return errors.New("poison")
		}
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithRetry(batch.RetryPolicy{}))
	var recs []localtest.InputRecord
	for i := range 12 {
		if i%4 == 1 {
			var users []localtest.UserRecord
			for j := range 3 {
				users = append(users, localtest.UserRecord{PartitionKey: fmt.Sprintf("u%d", j),
					Data: json.RawMessage(fmt.Sprintf(`{"id":"a%d.%d","poison":%v}`, i, j, i == 5 && j == 1))})
			}
			recs = append(recs, localtest.InputRecord{Line: i + 1, Aggregate: users})
			continue
		}
		recs = append(recs, localtest.InputRecord{Line: i + 1, PartitionKey: "k", Data: json.RawMessage(fmt.Sprintf(`{"id":"p%d"}`, i))})
	}
	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(4),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(1), FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, trace, page := tracedRun(t, localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h),
		Allow: []string{localtest.FateOnFailure}})
	if rep.Totals.Aggregates != 3 || rep.Totals.Records != 9+9 || rep.Totals.OnFailure == 0 {
		t.Fatalf("the run lacks aggregates or a given-up record: %+v", rep.Totals)
	}
	p := browser.Open(t, page, 1280, 900)
	checkPage(t, p, rep, trace)
	// A user record's path: the invocations that delivered its Kinesis record.
	var user, of string
	for id, f := range rep.Fates {
		if f == localtest.FateOnFailure && strings.HasSuffix(id, ":1") {
			user, of = id, strings.TrimSuffix(id, ":1")
		}
	}
	p.Click(t, fmt.Sprintf(`#records tr[data-record=%q] a`, user))
	p.Wait(t, fmt.Sprintf(`document.getElementById('panel').dataset.record === %q`, user))
	var want []string
	for _, e := range trace {
		if slices.Contains(e.IDs, of) {
			want = append(want, strconv.Itoa(e.N))
		}
	}
	if got := browser.Eval[[]string](t, p, `[...document.querySelectorAll('#path tr[data-n]')].map(r => r.dataset.n)`); !slices.Equal(got, want) {
		t.Errorf("user record %s: its path lists %v, the trace delivers its Kinesis record in %v", user, got, want)
	}
	if text := browser.Eval[string](t, p, `document.getElementById('panel').textContent`); !strings.Contains(text, "line 6:1 (id a5.1)") ||
		!strings.Contains(text, "KPL user record of"+of) {
		t.Errorf("the panel does not name the user record by its line and sub-sequence number: %s", text)
	}
}

// TestHTMLReportLarge: a run too long for a bar per invocation is drawn
// in groups whose counts add up to every invocation; a group opens into
// its invocations; the records table pages and finds a record.
func TestHTMLReportLarge(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	h := handlers.MustKinesis(func(_ context.Context, r handlers.KinesisRecord[order]) error {
		if r.Value.Poison {
			return errors.New("poison")
		}
		mu.Lock()
		seen++
		mu.Unlock()
		return nil
	}, handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithRetry(batch.RetryPolicy{}))
	n := 6000
	var recs []localtest.InputRecord
	for i := range n {
		poison := i%997 == 500
		r := localtest.InputRecord{PartitionKey: fmt.Sprintf("key-%d", i%16), Data: json.RawMessage(fmt.Sprintf(`{"id":"r%d","poison":%v}`, i, poison))}
		if poison {
			r.Expect = localtest.FateOnFailure
		}
		recs = append(recs, r)
	}
	m := &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(4), Shards: ptr(3),
		BisectBatchOnFunctionError: ptr(true), MaximumRetryAttempts: ptr(1), FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, trace, page := tracedRun(t, localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h), Seed: 5,
		Faults: localtest.Faults{ErrorRate: 0.01}})
	p := browser.Open(t, page, 1280, 900)
	checkPage(t, p, rep, trace)
	group := browser.Eval[string](t, p, `document.getElementById('timeline').dataset.grouped`)
	if group == "" {
		t.Fatalf("%d invocations are drawn one bar each", len(trace))
	}
	if got := browser.Eval[int](t, p, `[...document.querySelectorAll('#timeline .bucket')].reduce((s, b) => s + +b.dataset.count, 0)`); got != rep.Totals.Invocations {
		t.Errorf("the groups count %d invocations, the report %d", got, rep.Totals.Invocations)
	}
	// Zoom into the 10th group of the first lane: its invocations, each a bar.
	want := browser.Eval[int](t, p, `+document.querySelectorAll('#timeline .lane')[0].querySelectorAll('.bucket')[9].dataset.count`)
	from := browser.Eval[string](t, p, `document.querySelectorAll('#timeline .lane')[0].querySelectorAll('.bucket')[9].dataset.from`)
	p.Click(t, fmt.Sprintf(`#timeline .lane:first-child .bucket[data-from="%s"]`, from))
	if g := browser.Eval[string](t, p, `document.getElementById('timeline').dataset.grouped`); g != "" {
		t.Fatalf("a group opened into groups of %s", g)
	}
	if got := browser.Eval[int](t, p, `document.querySelectorAll('#timeline .lane')[0].querySelectorAll('.bar.inv').length`); got != want {
		t.Errorf("the group held %d invocations, opened it shows %d", want, got)
	}
	// The table pages; a search finds one record by its payload id.
	if got := pageCounts(t, p)["table-matches"]; got != n {
		t.Errorf("the table matches %d records, want %d", got, n)
	}
	if rows := browser.Eval[int](t, p, `document.querySelectorAll('#record-table tr[data-record]').length`); rows != 100 {
		t.Errorf("the table's page holds %d rows, want 100", rows)
	}
	browser.Eval[bool](t, p, `(() => { const q = document.getElementById('rec-search'); q.value = 'r4321';
		q.dispatchEvent(new Event('input')); return true })()`)
	if got := pageCounts(t, p)["table-matches"]; got != 1 {
		t.Errorf("searching r4321 matches %d records", got)
	}
	if pr := p.Problems(); len(pr) > 0 {
		t.Errorf("the page had problems: %q", pr)
	}
}
