package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/windowstate"
	"github.com/sluicehq/sluice/localtest"
)

type winOrder struct {
	ID       int    `json:"id"`
	Customer string `json:"customer"`
	Amount   int64  `json:"amount"`
}

// winAgg is a count and sum per customer.
type winAgg struct {
	Count map[string]int   `json:"n"`
	Sum   map[string]int64 `json:"s"`
}

func (a winAgg) add(o winOrder) winAgg {
	if a.Count == nil {
		a.Count, a.Sum = map[string]int{}, map[string]int64{}
	}
	a.Count[o.Customer]++
	a.Sum[o.Customer] += o.Amount
	return a
}

func winOrders(n int) ([]localtest.InputRecord, winAgg) {
	recs := make([]localtest.InputRecord, n)
	var want winAgg
	for i := range recs {
		o := winOrder{ID: i + 1, Customer: fmt.Sprintf("c%d", i%5), Amount: int64(i%7 + 1)}
		data, _ := json.Marshal(o)
		recs[i] = localtest.InputRecord{PartitionKey: "orders", Data: data}
		want = want.add(o)
	}
	return recs, want
}

// windowFinals collects what the final function wrote, per window.
type windowFinals struct {
	mu     sync.Mutex
	writes map[time.Time]int
	total  winAgg
	wins   []Window
}

func (f *windowFinals) final(_ context.Context, w Window, s winAgg) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writes == nil {
		f.writes = map[time.Time]int{}
	}
	f.writes[w.Start]++
	f.wins = append(f.wins, w)
	for c, n := range s.Count {
		for range n {
			f.total = f.total.add(winOrder{Customer: c})
		}
		f.total.Sum[c] += s.Sum[c]
	}
	return nil
}

func winMapping(batchSize, window int, extra func(m *localtest.Mapping)) *localtest.Mapping {
	m := &localtest.Mapping{EventSource: sevents.SourceKinesis, BatchSize: &batchSize, StartingPosition: "TRIM_HORIZON",
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}, TumblingWindowInSeconds: &window}
	if extra != nil {
		extra(m)
	}
	return m
}

func runWindow(t *testing.T, m *localtest.Mapping, recs []localtest.InputRecord, h localtest.BytesHandler) (*localtest.Report, []localtest.TraceEntry) {
	t.Helper()
	var trace []localtest.TraceEntry
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h),
		Trace: func(e localtest.TraceEntry) { trace = append(trace, e) }, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return rep, trace
}

func foldOrder(_ context.Context, s winAgg, r KinesisRecord[winOrder]) (winAgg, error) {
	return s.add(r.Value), nil
}

func TestWindowStateFlowsFromInvokeToInvoke(t *testing.T) {
	recs, want := winOrders(2500) // 1 ms apart: three or four 1 s windows
	var f windowFinals
	h, err := NewKinesisWindow(foldOrder, f.final, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	rep, trace := runWindow(t, winMapping(50, 1, nil), recs, h)
	if rep.Totals.Processed != 2500 || rep.Failure != nil {
		t.Fatalf("totals %+v failure %+v", rep.Totals, rep.Failure)
	}
	if !maps.Equal(f.total.Count, want.Count) || !maps.Equal(f.total.Sum, want.Sum) {
		t.Fatalf("the finals add up to %+v, want %+v: state was lost between invokes", f.total, want)
	}
	finals := 0
	for _, e := range trace {
		if e.Final {
			finals++
		}
	}
	if len(f.wins) < 3 || finals != len(f.wins) || len(trace) < 50+len(f.wins) {
		t.Fatalf("%d windows written, %d final invokes, %d invokes: want 3 or more windows of many invokes each", len(f.wins), finals, len(trace))
	}
	for i, w := range f.wins {
		if w.End.Sub(w.Start) != time.Second || w.ShardID != "shardId-000000000000" || !strings.HasPrefix(w.EventSourceARN, "arn:aws:kinesis:") ||
			w.TerminatedEarly || i > 0 && !w.Start.After(f.wins[i-1].Start) {
			t.Fatalf("window %d: %+v", i, w)
		}
	}
}

func TestWindowPartialFailuresFoldEachRecordOnce(t *testing.T) {
	// Some records fail once, after the fold has already changed the
	// aggregate (a half-done fold): plain errors go back to Lambda as a
	// partial response, transient ones are retried in process. Either way
	// every record must count exactly once in the window's total.
	recs, want := winOrders(600)
	var mu sync.Mutex
	failed := map[int]bool{}
	fold := func(_ context.Context, s winAgg, r KinesisRecord[winOrder]) (winAgg, error) {
		s = s.add(r.Value) // mutates the maps before it fails
		mu.Lock()
		defer mu.Unlock()
		id := r.Value.ID
		if !failed[id] && id%37 == 5 {
			failed[id] = true
			if id%2 == 0 {
				return s, batch.Transient(fmt.Errorf("order %d: flaky", id))
			}
			return s, fmt.Errorf("order %d: failed once", id)
		}
		if !failed[id] && id == 301 {
			failed[id] = true
			panic("order 301 panics once")
		}
		return s, nil
	}
	var f windowFinals
	h, err := NewKinesisWindow(fold, f.final, opts(WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(time.Microsecond)}))...)
	if err != nil {
		t.Fatal(err)
	}
	rep, trace := runWindow(t, winMapping(40, 900, nil), recs, h)
	if rep.Totals.Processed != 600 || rep.Totals.OnFailure != 0 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	partial := 0
	for _, e := range trace {
		if e.Result == localtest.ResultPartial {
			partial++
		}
	}
	if partial == 0 {
		t.Fatal("no partial response: the test did not exercise partial failures")
	}
	if !maps.Equal(f.total.Count, want.Count) || !maps.Equal(f.total.Sum, want.Sum) {
		t.Fatalf("the window's total is %+v, want %+v: a record was folded twice or lost", f.total, want)
	}
}

// loseFinalAnswer makes the first answer of each window's final invoke
// fail after the function ran, as if the invocation had timed out: Lambda
// retries the final invoke.
type loseFinalAnswer struct {
	h    localtest.BytesHandler
	mu   sync.Mutex
	lost map[string]bool
}

func (l *loseFinalAnswer) Invoke(ctx context.Context, p []byte) ([]byte, error) {
	out, err := l.h.Invoke(ctx, p)
	var ev events.KinesisTimeWindowEvent
	if json.Unmarshal(p, &ev) == nil && ev.IsFinalInvokeForWindow {
		l.mu.Lock()
		defer l.mu.Unlock()
		if k := ev.Window.Start.String(); !l.lost[k] {
			l.lost[k] = true
			return nil, errors.New("the answer of the final invoke was lost")
		}
	}
	return out, err
}

func TestWindowFinalWritesOnceWhenRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   []Option
		writes int
	}{
		{"WithWindowIdempotency", []Option{WithWindowIdempotency(idempotency.NewMemoryStore())}, 1},
		{"without", nil, 2}, // the same run shows the retry would write again
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, want := winOrders(2100)
			var f windowFinals
			h, err := NewKinesisWindow(foldOrder, f.final, opts(tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			rep, trace := runWindow(t, winMapping(100, 1, nil), recs, &loseFinalAnswer{h: h, lost: map[string]bool{}})
			finals, failedFinals := 0, 0
			for _, e := range trace {
				if e.Final {
					finals++
					if e.Result != localtest.ResultSuccess {
						failedFinals++
					}
				}
			}
			if rep.Totals.Processed != 2100 || failedFinals == 0 || finals != 2*failedFinals {
				t.Fatalf("totals %+v; %d final invokes, %d failed: want each window's final retried once", rep.Totals, finals, failedFinals)
			}
			for start, n := range f.writes {
				if n != tc.writes {
					t.Fatalf("window %v written %d times, want %d", start, n, tc.writes)
				}
			}
			if tc.writes == 1 && (!maps.Equal(f.total.Count, want.Count) || !maps.Equal(f.total.Sum, want.Sum)) {
				t.Fatalf("total %+v, want %+v", f.total, want)
			}
		})
	}
}

// stateSizes records the size of the state of every answer.
type stateSizes struct {
	h    localtest.BytesHandler
	max  int
	errs []string
}

func (s *stateSizes) Invoke(ctx context.Context, p []byte) ([]byte, error) {
	out, err := s.h.Invoke(ctx, p)
	if err != nil {
		s.errs = append(s.errs, err.Error())
		return out, err
	}
	var resp struct {
		State json.RawMessage `json:"state"`
	}
	json.Unmarshal(out, &resp)
	s.max = max(s.max, len(resp.State))
	return out, err
}

func TestWindowStateSizeGuard(t *testing.T) {
	// Each record adds 64 hex digits to the aggregate: the state passes the
	// 4 KB limit after about a hundred records.
	type digests struct {
		Seen []string `json:"seen"`
	}
	fold := func(_ context.Context, s digests, r KinesisRecord[winOrder]) (digests, error) {
		sum := sha256.Sum256([]byte(fmt.Sprint(r.Value.ID)))
		s.Seen = append(s.Seen, hex.EncodeToString(sum[:]))
		return s, nil
	}
	var finalSeen []int
	final := func(_ context.Context, _ Window, s digests) error {
		finalSeen = append(finalSeen, len(s.Seen))
		return nil
	}
	const limit = 4096
	h, err := NewKinesisWindow(fold, final, opts(WithWindowStateLimit(limit))...)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := winOrders(300)
	sizes := &stateSizes{h: h}
	rep, trace := runWindow(t, winMapping(40, 900, func(m *localtest.Mapping) { m.MaximumRetryAttempts = ptrInt(1) }), recs, sizes)
	if sizes.max == 0 || sizes.max > limit {
		t.Fatalf("largest state returned: %d bytes, limit %d", sizes.max, limit)
	}
	var partialAt string
	for _, e := range trace {
		if e.Result == localtest.ResultPartial {
			partialAt = e.Reported[0]
			break
		}
	}
	if partialAt == "" || len(sizes.errs) == 0 || !strings.Contains(sizes.errs[0], "window state of shard shardId-000000000000") ||
		!strings.Contains(sizes.errs[0], "over the limit of 4096") || !strings.Contains(sizes.errs[0], partialAt) {
		t.Fatalf("want a partial response at the record that overflows, then a *WindowStateError naming it; got partial at %q, errors %q", partialAt, sizes.errs)
	}
	if rep.Totals.OnFailure == 0 || len(finalSeen) != 1 || finalSeen[0] != rep.Totals.Processed {
		t.Fatalf("totals %+v, final saw %v: the window must close with exactly the records processed", rep.Totals, finalSeen)
	}
}

func ptrInt(n int) *int { return &n }

type winDDBOrder struct {
	ID       int    `dynamodbav:"id"`
	Customer string `dynamodbav:"customer"`
	Amount   int64  `dynamodbav:"amount"`
}

func TestDynamoDBWindow(t *testing.T) {
	n := 1500
	recs := make([]localtest.InputRecord, n)
	var want winAgg
	for i := range recs {
		o := winOrder{ID: i + 1, Customer: fmt.Sprintf("c%d", i%3), Amount: int64(i%5 + 1)}
		recs[i] = localtest.InputRecord{Keys: json.RawMessage(fmt.Sprintf(`{"id":%d}`, o.ID)),
			NewImage:  json.RawMessage(fmt.Sprintf(`{"id":%d,"customer":%q,"amount":%d}`, o.ID, o.Customer, o.Amount)),
			EventName: "INSERT"}
		want = want.add(o)
	}
	var f windowFinals
	fold := func(_ context.Context, s winAgg, r DynamoDBRecord[winDDBOrder]) (winAgg, error) {
		return s.add(winOrder{Customer: r.New.Customer, Amount: r.New.Amount}), nil
	}
	h, err := NewDynamoDBWindow(fold, f.final, quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	m := winMapping(100, 1, func(m *localtest.Mapping) { m.EventSource = sevents.SourceDynamoDB })
	rep, _ := runWindow(t, m, recs, h)
	if rep.Totals.Processed != n || len(f.wins) < 2 || !maps.Equal(f.total.Count, want.Count) || !maps.Equal(f.total.Sum, want.Sum) {
		t.Fatalf("totals %+v, %d windows, total %+v, want %+v", rep.Totals, len(f.wins), f.total, want)
	}
}

func TestWindowHandlerRefusals(t *testing.T) {
	final := func(context.Context, Window, winAgg) error { return nil }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"per-record idempotency", second(NewKinesisWindow(foldOrder, final, opts(WithIdempotency(idempotency.NewMemoryStore()))...)), "WithWindowIdempotency"},
		{"key concurrency", second(NewKinesisWindow(foldOrder, final, opts(WithKeyConcurrency(4))...)), "sequence order"},
		{"window option on a plain handler", second(NewKinesis(func(context.Context, KinesisRecord[winOrder]) error { return nil },
			opts(WithWindowStateLimit(1000))...)), "window handlers only"},
		{"nil final", second(NewKinesisWindow[winOrder, winAgg](foldOrder, nil, quiet()...)), "final function is nil"},
		{"tiny limit", second(NewKinesisWindow(foldOrder, final, opts(WithWindowStateLimit(10))...)), "at least 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", tc.err, tc.want)
			}
		})
	}
	h := MustKinesisWindow(foldOrder, final, quiet()...)
	ev, _ := kinesisTestEvent("ok")
	if _, err := h.Invoke(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "TumblingWindowInSeconds") {
		t.Fatalf("an event without a window: %v", err)
	}
}

// A DynamoDB Streams window batch whose record has a malformed attribute
// value ("S" holding an object) fails as any failing record of a window
// does: the records before it are folded, it is reported by its
// SequenceNumber, and the state returned is the fold of the records before
// it. The event is that of
// https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html
// (events/testdata/dynamodb.json) with the tumbling window fields of
// https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-windows.html.
func TestDynamoDBWindowMalformedAttributeValue(t *testing.T) {
	ev := golden(t, "dynamodb.json")
	window := `{"window":{"start":"2020-07-30T17:00:00Z","end":"2020-07-30T17:05:00Z"},"state":{},"shardId":"shard123456789",` +
		`"eventSourceARN":"arn:aws:dynamodb:us-west-2:123456789012:table/ExampleTableWithStream/stream/2015-06-27T00:48:05.899",` +
		`"isFinalInvokeForWindow":false,"isWindowTerminatedEarly":false,`
	ev = append([]byte(window), bytes.TrimPrefix(bytes.TrimSpace(ev), []byte("{"))...)
	for _, c := range []struct {
		poison string // the value replaced
		want   string // the record reported
		folded []string
	}{
		{`"S": "This item has changed"`, "222", []string{"111"}}, // record 2's NewImage
		{`"S": "New item!"`, "111", nil},                         // record 1's, the batch's first
	} {
		bad := bytes.Replace(ev, []byte(c.poison), []byte(`"S": {"poison": "pill"}`), 1)
		if bytes.Equal(bad, ev) {
			t.Fatal("the golden event changed: nothing replaced")
		}
		var folded []string
		var errs []error
		fold := func(_ context.Context, s winAgg, r DynamoDBRecord[ddbMessage]) (winAgg, error) {
			folded = append(folded, r.SequenceNumber())
			return s.add(winOrder{Customer: r.New.Message, Amount: int64(r.New.ID)}), nil
		}
		h := must(NewDynamoDBWindow(fold, func(context.Context, Window, winAgg) error { return nil },
			opts(WithPartialResponseWhenNoneSucceed(), WithOnBatch(func(_ context.Context, r BatchReport) {
				for _, rec := range r.Records {
					if rec.Err != nil {
						errs = append(errs, rec.Err)
					}
				}
			}))...))
		out, err := h.Invoke(context.Background(), bad)
		if err != nil {
			t.Fatalf("poisoned %s: function error %v: want the record reported alone", c.want, err)
		}
		var resp struct {
			State             map[string]string `json:"state"`
			BatchItemFailures []struct {
				ItemIdentifier string `json:"itemIdentifier"`
			} `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.State == nil {
			t.Fatalf("response %s: %v (a window answer must carry the state)", out, err)
		}
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != c.want || !slicesEqual(folded, c.folded) {
			t.Fatalf("poisoned %s: response %s, folded %v; want %s reported and %v folded", c.want, out, folded, c.want, c.folded)
		}
		if len(errs) == 0 || !strings.Contains(errs[0].Error(), "malformed dynamodb record") {
			t.Fatalf("poisoned %s: errors %v", c.want, errs)
		}
		s, err := windowstate.Decode[winAgg](resp.State)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(c.folded); s.Count["New item!"] != want || s.Sum["New item!"] != int64(101*want) {
			t.Fatalf("poisoned %s: state %+v, want the fold of %v", c.want, s, c.folded)
		}
	}
}

func slicesEqual(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || strings.Join(a, "\x00") == strings.Join(b, "\x00"))
}

// A refold decodes the batch again; a malformed record after the one that
// failed must not fail the invocation then either. Here the fold of 222
// fails, so the state returned is refolded from the batch's first record,
// and the batch's third record (a copy of the first as DynamoDB Streams
// writes it, SequenceNumber after the images, https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html)
// is malformed before its SequenceNumber.
func TestDynamoDBWindowRefoldPastMalformedRecord(t *testing.T) {
	var golden0 struct{ Records []json.RawMessage }
	if err := json.Unmarshal(golden(t, "dynamodb.json"), &golden0); err != nil {
		t.Fatal(err)
	}
	third := bytes.Replace(golden0.Records[0], []byte(`"111"`), []byte(`"444"`), 1)
	third = bytes.Replace(third, []byte(`"S": "New item!"`), []byte(`"S": {"poison": "pill"}`), 1)
	if bytes.Equal(third, golden0.Records[0]) || bytes.Index(third, []byte(`"poison"`)) > bytes.Index(third, []byte(`"444"`)) {
		t.Fatal("the golden event changed")
	}
	ev := `{"window":{"start":"2020-07-30T17:00:00Z","end":"2020-07-30T17:05:00Z"},"state":{},"shardId":"shard123456789",` +
		`"eventSourceARN":"arn:aws:dynamodb:us-west-2:123456789012:table/ExampleTableWithStream/stream/2015-06-27T00:48:05.899",` +
		`"isFinalInvokeForWindow":false,"isWindowTerminatedEarly":false,"Records":[` +
		string(golden0.Records[0]) + "," + string(golden0.Records[1]) + "," + string(third) + "]}"
	var folded []string
	fold := func(_ context.Context, s winAgg, r DynamoDBRecord[ddbMessage]) (winAgg, error) {
		folded = append(folded, r.SequenceNumber())
		if r.SequenceNumber() == "222" {
			s.Count["half-way"]++ // changed, then failed: the state must be refolded
			return s, errors.New("no")
		}
		return s.add(winOrder{Customer: r.New.Message, Amount: int64(r.New.ID)}), nil
	}
	h := must(NewDynamoDBWindow(fold, func(context.Context, Window, winAgg) error { return nil }, quiet()...))
	out, err := h.Invoke(context.Background(), []byte(ev))
	if err != nil {
		t.Fatalf("function error %v: want 222 reported", err)
	}
	var resp struct {
		State             map[string]string `json:"state"`
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "222" {
		t.Fatalf("response %s (%v): want 222 reported", out, err)
	}
	s, err := windowstate.Decode[winAgg](resp.State)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Count) != 1 || s.Count["New item!"] != 1 || !slicesEqual(folded[:2], []string{"111", "222"}) {
		t.Fatalf("state %+v after folds %v: want the fold of 111 alone", s, folded)
	}
}
