package localtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/localtest"
)

// effectLog is the effects a function made, in order, as Options.Effects
// reads them.
type effectLog struct {
	mu  sync.Mutex
	all []localtest.Effect
}

func (l *effectLog) add(e localtest.Effect) {
	l.mu.Lock()
	l.all = append(l.all, e)
	l.mu.Unlock()
}

func (l *effectLog) read() ([]localtest.Effect, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all), nil
}

// command is a test record's payload.
type command struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

func quietOpts(extra ...handlers.Option) []handlers.Option {
	return append([]handlers.Option{handlers.WithLogger(slog.New(slog.DiscardHandler)), handlers.WithoutRetry()}, extra...)
}

// kplRecords is a records file: line 1 an aggregate of three orders (keys
// a, b, a), line 2 a plain record.
const kplRecords = `{"aggregate":[{"partitionKey":"a","data":{"id":"o1","action":"ok"}},{"partitionKey":"b","data":{"id":"o2","action":"ok"}},{"partitionKey":"a","data":{"id":"o3","action":"ok"}}]}
{"partitionKey":"p","data":{"id":"p1","action":"ok"}}
`

func readRecords(t *testing.T, s string) []localtest.InputRecord {
	t.Helper()
	recs, err := localtest.ReadRecords(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func kinesisMapping() *localtest.Mapping {
	size := 10
	return &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: &size,
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
}

func statuses(rep *localtest.Report) map[string]string {
	out := map[string]string{}
	for _, inv := range rep.Invariants {
		out[inv.Name] = inv.Status
	}
	return out
}

func invariant(rep *localtest.Report, name string) localtest.InvariantResult {
	for _, inv := range rep.Invariants {
		if inv.Name == name {
			return inv
		}
	}
	return localtest.InvariantResult{}
}

// TestKPLUserRecordsAreRecords: a user record of a KPL aggregate is a
// record of the run. Before, the runner counted the aggregate as one
// record named by its sequence number: a function that did the work of
// its first user record only, naming its effect by that number, passed
// (the false green), and a correct one whose effects named its
// user records passed only by accident or not at all.
func TestKPLUserRecordsAreRecords(t *testing.T) {
	for _, tt := range []struct {
		name string
		// drop: the function acknowledges user records after the first
		// without doing their work; bySeq: it names effects by the
		// aggregate's sequence number rather than RecordID.
		drop, bySeq bool
		held        bool
		loss        string
		mention     []string
	}{
		{name: "correct", held: true, loss: localtest.StatusHeld},
		{name: "drops user records", drop: true, loss: localtest.StatusViolated, mention: []string{"line 1:1 (id o2)", "line 1:2 (id o3)"}},
		{name: "drops user records, names the aggregate", drop: true, bySeq: true, loss: localtest.StatusNotEvaluated,
			mention: []string{"a KPL aggregate: name each of its 3 user records"}},
		{name: "names the aggregate", bySeq: true, loss: localtest.StatusNotEvaluated, mention: []string{"a KPL aggregate"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var effects effectLog
			h := must(t)(handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
				if tt.drop && r.SubSequenceNumber() > 0 {
					return nil // acknowledged, its work never done
				}
				id := r.RecordID()
				if tt.bySeq {
					id = r.SequenceNumber()
				}
				effects.add(localtest.Effect{Record: id, ID: r.Value.ID})
				return nil
			}, quietOpts()...))
			rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: readRecords(t, kplRecords),
				Invoker: localtest.InProcess(h), Effects: effects.read, ExactlyOnce: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Held() != tt.held || statuses(rep)[localtest.InvariantNoLoss] != tt.loss {
				t.Fatalf("held %v, invariants %+v", rep.Held(), rep.Invariants)
			}
			loss := fmt.Sprint(invariant(rep, localtest.InvariantNoLoss))
			for _, m := range tt.mention {
				if !strings.Contains(loss, m) {
					t.Errorf("no-record-lost does not say %q: %s", m, loss)
				}
			}
			if rep.Totals.Records != 4 || rep.Totals.UserRecords != 3 || rep.Totals.Aggregates != 1 || len(rep.Fates) != 4 {
				t.Fatalf("totals %+v, fates %v", rep.Totals, rep.Fates)
			}
			seq := ""
			for id := range rep.Fates {
				if s, ok := strings.CutSuffix(id, ":2"); ok {
					seq = s
				}
			}
			for _, id := range []string{seq + ":0", seq + ":1", seq + ":2"} {
				if rep.Fates[id] != localtest.FateProcessed {
					t.Fatalf("fates %v: no user record %s", rep.Fates, id)
				}
			}
		})
	}
}

func must(t *testing.T) func(*handlers.KinesisHandler[command], error) *handlers.KinesisHandler[command] {
	return func(h *handlers.KinesisHandler[command], err error) *handlers.KinesisHandler[command] {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// TestKPLEffectsKey: --effects-key matches each user record by its own
// data's field. Before, the aggregate's data (the KPL's bytes) had no
// field: "processed records have no top-level payload field".
func TestKPLEffectsKey(t *testing.T) {
	for _, drop := range []bool{false, true} {
		var effects effectLog
		h := must(t)(handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
			if !drop || r.Value.ID != "o2" {
				effects.add(localtest.Effect{ID: r.Value.ID})
			}
			return nil
		}, quietOpts()...))
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: readRecords(t, kplRecords),
			Invoker: localtest.InProcess(h), Effects: effects.read, EffectsKey: "id", ExactlyOnce: true})
		if err != nil {
			t.Fatal(err)
		}
		want := localtest.StatusHeld
		if drop {
			want = localtest.StatusViolated
		}
		if got := statuses(rep); got[localtest.InvariantNoLoss] != want || got[localtest.InvariantOnce] != localtest.StatusHeld ||
			got[localtest.InvariantOrder] != localtest.StatusHeld {
			t.Fatalf("drop %v: %+v", drop, rep.Invariants)
		}
		if drop && !strings.Contains(fmt.Sprint(invariant(rep, localtest.InvariantNoLoss)), "line 1:1 (id o2)") {
			t.Fatalf("the lost user record is not named: %+v", rep.Invariants)
		}
	}
}

// TestKPLExactlyOnceWithIdempotency: a function idempotent per user record
// (the handlers' default key, with its sub-sequence number) passes
// effect-once under duplicate deliveries. Before, its three user
// records' effects "took effect 3 times" as one record.
func TestKPLExactlyOnceWithIdempotency(t *testing.T) {
	var effects effectLog
	store := idempotency.NewMemoryStore()
	h := must(t)(handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
		effects.add(localtest.Effect{Record: r.RecordID(), ID: r.Value.ID})
		return nil
	}, quietOpts(handlers.WithIdempotency(store))...))
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf(`{"aggregate":[{"partitionKey":"k%d","data":{"id":"a%d"}},{"partitionKey":"k%d","data":{"id":"b%d"}}]}`, i%3, i, (i+1)%3, i))
	}
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: readRecords(t, strings.Join(lines, "\n")),
		Invoker: localtest.InProcess(h), Effects: effects.read, ExactlyOnce: true, Faults: localtest.Faults{DuplicateRate: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Held() || rep.Totals.Duplicates == 0 || rep.Totals.Records != 40 || rep.Totals.Processed != 40 {
		t.Fatalf("held %v, totals %+v, %+v", rep.Held(), rep.Totals, rep.Invariants)
	}
}

// TestKPLQuarantineOneUserRecord: a user record the function parks in its
// dead letters (an envelope with its sub-sequence number) is quarantined
// alone; its siblings are processed. Before, the envelope's record id
// (the aggregate's sequence number) made the whole aggregate quarantined.
// Its expectation is written on the user record.
func TestKPLQuarantineOneUserRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dlq.jsonl")
	q, err := localtest.QuarantineFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dest, err := dlq.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var effects effectLog
	h := must(t)(handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
		if r.Value.Action == "permanent" {
			return batch.Permanent(errors.New("asked to fail"))
		}
		effects.add(localtest.Effect{Record: r.RecordID(), ID: r.Value.ID})
		return nil
	}, quietOpts(handlers.WithDeadLetters(dest))...))
	recs := readRecords(t, `{"aggregate":[{"partitionKey":"a","data":{"id":"o1"}},{"partitionKey":"b","data":{"id":"o2","action":"permanent"},"expect":"quarantined"},{"partitionKey":"a","data":{"id":"o3"}}]}
{"partitionKey":"p","data":{"id":"p1"}}
`)
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: recs, Invoker: localtest.InProcess(h),
		Effects: effects.read, Quarantine: q})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Held() || rep.Totals.Quarantined != 1 || rep.Totals.Processed != 3 {
		t.Fatalf("held %v, totals %+v, %+v, unexpected %+v", rep.Held(), rep.Totals, rep.Invariants, rep.Unexpected)
	}
	if len(rep.Unprocessed) != 1 || rep.Unprocessed[0].Name() != "line 1:1 (id o2)" || rep.Unprocessed[0].Fate != localtest.FateQuarantined {
		t.Fatalf("unprocessed %+v", rep.Unprocessed)
	}
	// Expected on the line (every user record), the siblings are unexpected.
	recs[0].Expect, recs[0].Aggregate[1].Expect = localtest.FateQuarantined, ""
	q, _ = localtest.QuarantineFile(path)
	rep, err = localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: recs, Invoker: localtest.InProcess(h),
		Effects: effects.read, Quarantine: q})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range rep.Unexpected {
		names = append(names, u.Name())
	}
	if rep.Held() || !slices.Equal(names, []string{"line 1:0 (id o1)", "line 1:2 (id o3)"}) {
		t.Fatalf("unexpected %v, %+v", names, rep.Invariants)
	}
}

// TestKPLOrderPerUserKey: order-per-key checks each user record's own
// partition key, not the aggregate's.
func TestKPLOrderPerUserKey(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		var effects effectLog
		// A function that runs an aggregate's user records in reverse:
		// key a's second record takes effect before its first.
		h := must(t)(handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
			effects.add(localtest.Effect{Record: r.RecordID()})
			return nil
		}, quietOpts()...))
		inv := localtest.InProcess(fnHandler(func(ctx context.Context, p []byte) ([]byte, error) {
			out, err := h.Invoke(ctx, p)
			if reverse {
				effects.mu.Lock()
				slices.Reverse(effects.all)
				effects.mu.Unlock()
			}
			return out, err
		}))
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: kinesisMapping(), Records: readRecords(t, kplRecords),
			Invoker: inv, Effects: effects.read})
		if err != nil {
			t.Fatal(err)
		}
		order := invariant(rep, localtest.InvariantOrder)
		if reverse != (order.Status == localtest.StatusViolated) {
			t.Fatalf("reverse %v: %+v", reverse, order)
		}
		if reverse && (len(order.Violations) != 1 || !strings.Contains(order.Violations[0], "key a in shardId-000000000000: record line 1:0 (id o1)")) {
			t.Fatalf("want key a only: %+v", order)
		}
	}
}

type fnHandler func(ctx context.Context, payload []byte) ([]byte, error)

func (f fnHandler) Invoke(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }

// TestKPLAggregateFates: what Lambda does to a Kinesis record (on-failure
// after its retries, filtered by the mapping) it does to every user record
// of it; expected on the line, the expectation holds for each.
func TestKPLAggregateFates(t *testing.T) {
	var effects effectLog
	h := must(t)(handlers.NewKinesis(func(_ context.Context, r handlers.KinesisRecord[command]) error {
		if r.Value.Action == "fail" {
			return errors.New("asked to fail")
		}
		effects.add(localtest.Effect{Record: r.RecordID()})
		return nil
	}, quietOpts()...))
	m := kinesisMapping()
	retries, one := 0, 1
	m.MaximumRetryAttempts, m.BatchSize = &retries, &one // the plain record rides in a batch of its own
	m.FilterCriteria = &localtest.FilterCriteria{Filters: []localtest.Filter{{Pattern: `{"partitionKey":[{"anything-but":"drop"}]}`}}}
	recs := readRecords(t, `{"aggregate":[{"partitionKey":"a","data":{"id":"o1"}},{"partitionKey":"b","data":{"id":"o2","action":"fail"}}],"expect":"on-failure"}
{"partitionKey":"drop","aggregate":[{"partitionKey":"c","data":{"id":"o3"}},{"partitionKey":"d","data":{"id":"o4"}}]}
{"partitionKey":"p","data":{"id":"p1"}}
`)
	rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: recs, Invoker: localtest.InProcess(h), Effects: effects.read})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Held() || rep.Totals.OnFailure != 2 || rep.Totals.Filtered != 2 || rep.Totals.Processed != 1 || rep.Totals.Records != 5 {
		t.Fatalf("held %v, totals %+v, %+v", rep.Held(), rep.Totals, rep.Invariants)
	}
	var names []string
	for _, u := range rep.Unprocessed {
		names = append(names, u.Name()+" "+u.Fate)
	}
	if !slices.Equal(names, []string{"line 1:0 (id o1) on-failure", "line 1:1 (id o2) on-failure"}) {
		t.Fatalf("unprocessed %v", names)
	}
}
