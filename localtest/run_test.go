package localtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// fn adapts a function to BytesHandler.
type fn func(ctx context.Context, payload []byte) ([]byte, error)

func (f fn) Invoke(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }

func ptr[T any](v T) *T { return &v }

// kinesisIDs returns the sequence numbers and payload ids of a Kinesis event.
func kinesisIDs(t *testing.T, payload []byte) (seqs, pids []string) {
	t.Helper()
	var ev events.KinesisEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatalf("event: %v", err)
	}
	for _, r := range ev.Records {
		seqs = append(seqs, r.Kinesis.SequenceNumber)
		pids = append(pids, payloadID(r.Kinesis.Data))
	}
	return seqs, pids
}

func failuresJSON(ids ...string) []byte {
	resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
	for _, id := range ids {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: id})
	}
	b, _ := json.Marshal(resp)
	return b
}

func kinesisRecords(n int, key func(i int) string) []InputRecord {
	out := make([]InputRecord, n)
	for i := range out {
		out[i] = InputRecord{PartitionKey: key(i), Data: json.RawMessage(fmt.Sprintf(`{"id":"%d","action":"ok"}`, i+1))}
	}
	return out
}

func oneKey(int) string { return "k" }

func kinesisMapping(batch int, extra func(m *Mapping)) *Mapping {
	m := &Mapping{EventSource: sevents.SourceKinesis, BatchSize: ptr(batch), StartingPosition: "TRIM_HORIZON",
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	if extra != nil {
		extra(m)
	}
	return m
}

type traced struct{ entries []TraceEntry }

func (tr *traced) add(e TraceEntry) { tr.entries = append(tr.entries, e) }

// heldWithoutEffects reports whether a run given no effects (so
// order-per-key is not evaluated, and Held is false) tested the function,
// ran to its end and held every other check. It is the most such a run can
// show.
func heldWithoutEffects(rep *Report) bool {
	if rep.Failure != nil || rep.Stopped != "" {
		return false
	}
	order := false
	for _, inv := range rep.Invariants {
		switch {
		case inv.Name == InvariantOrder && inv.Status == StatusNotEvaluated:
			order = true
		case inv.Status != StatusHeld:
			return false
		}
	}
	return order || rep.Mapping.EventSource == sevents.SourceSQS
}

// pids of a trace entry: the record ids are sequence numbers; map them back.
func run(t *testing.T, opts Options) (*Report, *traced) {
	t.Helper()
	tr := &traced{}
	opts.Trace = tr.add
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep, tr
}

func TestEdge01_ReportBatchItemFailuresOffIgnoresFailures(t *testing.T) {
	var effects []Effect
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		seqs, pids := kinesisIDs(t, p)
		for i, pid := range pids {
			if pid == "2" {
				return failuresJSON(seqs[i]), nil
			}
			effects = append(effects, Effect{Record: seqs[i], Key: "k"})
		}
		return failuresJSON(), nil
	})
	m := kinesisMapping(10, func(m *Mapping) { m.FunctionResponseTypes = nil })
	rep, tr := run(t, Options{Mapping: m, Records: kinesisRecords(3, oneKey), Invoker: InProcess(h),
		Effects: func() ([]Effect, error) { return effects, nil }})
	if len(tr.entries) != 1 || !tr.entries[0].Ignored || tr.entries[0].Result != ResultSuccess {
		t.Fatalf("trace %+v", tr.entries)
	}
	if rep.Totals.Processed != 3 {
		t.Fatalf("Lambda counts all 3 as processed: %+v", rep.Totals)
	}
	// The record whose failure was ignored is lost, and the check says so.
	if rep.Held() || !strings.Contains(strings.Join(rep.Invariants[0].Violations, " "), "effect never happened") {
		t.Fatalf("no-loss must fail: %+v", rep.Invariants)
	}
}

func TestEdge02_ResponseWithErrorIsFunctionError(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls == 1 {
			return failuresJSON(), errors.New("boom")
		}
		return failuresJSON(), nil
	})
	_, tr := run(t, Options{Mapping: kinesisMapping(10, nil), Records: kinesisRecords(2, oneKey), Invoker: InProcess(h)})
	if len(tr.entries) != 2 || tr.entries[0].Result != ResultFunctionError || tr.entries[1].Retry != 1 {
		t.Fatalf("trace %+v", tr.entries)
	}
}

func TestEdge03_StreamRestartsAtLowestReported(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		seqs, _ := kinesisIDs(t, p)
		if calls == 1 {
			return failuresJSON(seqs[4], seqs[2]), nil // records 5 and 3 of 1-10
		}
		return failuresJSON(), nil
	})
	rep, tr := run(t, Options{Mapping: kinesisMapping(10, nil), Records: kinesisRecords(10, oneKey), Invoker: InProcess(h)})
	if len(tr.entries) != 2 {
		t.Fatalf("trace %+v", tr.entries)
	}
	first, second := tr.entries[0], tr.entries[1]
	if first.Result != ResultPartial || !slices.Equal(second.IDs, first.IDs[2:]) {
		t.Fatalf("second invocation must redeliver records 3-10: %v then %v", first.IDs, second.IDs)
	}
	// The checkpoint moved (records 1-2 succeeded): a fresh count, no retry.
	if second.Retry != 0 || rep.Totals.Retries != 0 || rep.Totals.Processed != 10 {
		t.Fatalf("retry %d totals %+v", second.Retry, rep.Totals)
	}
}

func TestEdge04_StreamResponseShapes(t *testing.T) {
	tests := []struct {
		body  string
		whole bool
	}{
		{`null`, false}, {`{}`, false}, {`{"batchItemFailures":null}`, false}, {`{"batchItemFailures":[]}`, false}, {``, false},
		{`[]`, false}, // recorded against AWS for Kinesis and DynamoDB Streams
		{`{"batchItemFailures":[{"itemIdentifier":""}]}`, true},
		{`{"batchItemFailures":[{"itemIdentifier":null}]}`, true},
		{`{"batchItemFailures":[{"identifier":"x"}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			calls := 0
			h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
				calls++
				if calls == 1 {
					return []byte(tt.body), nil
				}
				return nil, nil
			})
			rep, tr := run(t, Options{Mapping: kinesisMapping(10, nil), Records: kinesisRecords(3, oneKey), Invoker: InProcess(h)})
			if tt.whole {
				if len(tr.entries) != 2 || tr.entries[0].Result != ResultFunctionError || rep.Totals.Retries != 1 {
					t.Fatalf("want a whole failure and a retry: %+v %+v", tr.entries, rep.Totals)
				}
			} else if len(tr.entries) != 1 || tr.entries[0].Result != ResultSuccess {
				t.Fatalf("want success: %+v", tr.entries)
			}
			if !tt.whole {
				return
			}
			// Given up on, the batch's on-failure record carries
			// functionError null: it failed through its response.
			m := kinesisMapping(10, func(m *Mapping) { m.MaximumRetryAttempts = ptr(0) })
			rep, _ = run(t, Options{Mapping: m, Records: kinesisRecords(3, oneKey),
				Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return []byte(tt.body), nil }))})
			if len(rep.OnFailureRecords) != 1 {
				t.Fatalf("want one on-failure record: %+v", rep.OnFailureRecords)
			}
			b, _ := json.Marshal(rep.OnFailureRecords[0])
			if !strings.Contains(string(b), `"functionError":null`) {
				t.Fatalf("on-failure record %s: want functionError null", b)
			}
		})
	}
}

func sqsRecords(n int, group func(i int) string) []InputRecord {
	out := make([]InputRecord, n)
	for i := range out {
		out[i] = InputRecord{Body: json.RawMessage(fmt.Sprintf(`{"id":"%d","action":"ok"}`, i+1))}
		if group != nil {
			out[i].MessageGroupID = group(i)
		}
	}
	return out
}

func sqsIDs(t *testing.T, p []byte) (ids, pids []string, counts []string) {
	var ev events.SQSEvent
	if err := json.Unmarshal(p, &ev); err != nil {
		t.Fatal(err)
	}
	for _, m := range ev.Records {
		ids = append(ids, m.MessageId)
		pids = append(pids, payloadID([]byte(m.Body)))
		counts = append(counts, m.Attributes["ApproximateReceiveCount"])
	}
	return
}

func TestEdge05_SQSResponses(t *testing.T) {
	tests := []struct {
		name string
		resp func(ids []string) string
		// deleted after the first invocation
		deleted int
	}{
		{"unknown messageId fails the whole batch", func([]string) string { return `{"batchItemFailures":[{"itemIdentifier":"nope"}]}` }, 0},
		{"invalid JSON fails the whole batch", func([]string) string { return `{"batchItemFailures":[` }, 0},
		{"partial deletes only unlisted", func(ids []string) string { return string(failuresJSON(ids[1])) }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
				calls++
				ids, _, _ := sqsIDs(t, p)
				if calls == 1 {
					return []byte(tt.resp(ids)), nil
				}
				return nil, nil
			})
			m := &Mapping{EventSource: sevents.SourceSQS, FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
			_, tr := run(t, Options{Mapping: m, Records: sqsRecords(3, nil), Invoker: InProcess(h)})
			if got := len(tr.entries[1].IDs); got != 3-tt.deleted {
				t.Fatalf("second batch has %d messages, want %d: %+v", got, 3-tt.deleted, tr.entries)
			}
		})
	}
}

func TestEdge06_SQSReceiveCountAndRedrive(t *testing.T) {
	var counts []string
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		_, _, c := sqsIDs(t, p)
		counts = append(counts, c...)
		return nil, errors.New("always fails")
	})
	m := &Mapping{EventSource: sevents.SourceSQS, RedrivePolicy: &RedrivePolicy{MaxReceiveCount: 3}, VisibilityTimeout: ptr(60)}
	recs := sqsRecords(1, nil)
	recs[0].Expect = FateDeadLettered
	rep, tr := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(h)})
	if !slices.Equal(counts, []string{"1", "2", "3"}) || len(tr.entries) != 3 {
		t.Fatalf("receive counts %v", counts)
	}
	if rep.DeadLettered != 1 || rep.QueueLeft != 0 || rep.Totals.DeadLettered != 1 || !rep.Held() {
		t.Fatalf("report %+v", rep)
	}
	// The same run, where the message was meant to be processed, fails:
	// dead-lettered is not lost, but it is not processed either.
	counts = nil
	rep, _ = run(t, Options{Mapping: m, Records: sqsRecords(1, nil), Invoker: InProcess(h)})
	if rep.Held() || len(rep.Unexpected) != 1 || rep.Unexpected[0].Fate != FateDeadLettered || rep.Invariants[0].Status != StatusHeld {
		t.Fatalf("a message dead-lettered unexpectedly: invariants %+v, unexpected %+v", rep.Invariants, rep.Unexpected)
	}
}

func TestEdge07_FIFO(t *testing.T) {
	if err := (&Mapping{EventSource: sevents.SourceSQSFIFO, BatchSize: ptr(11)}).Validate(); err == nil {
		t.Fatal("FIFO BatchSize 11 must be rejected")
	}
	if err := (&Mapping{EventSource: sevents.SourceSQSFIFO, MaximumBatchingWindowInSeconds: ptr(1)}).Validate(); err == nil {
		t.Fatal("a FIFO batching window must be rejected")
	}
	// Recorded against AWS: an explicit 0 is accepted, from JSON too.
	m0, err := ParseMapping([]byte(`{"EventSource":"sqs-fifo","MaximumBatchingWindowInSeconds":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := m0.Validate(); err != nil {
		t.Fatalf("FIFO with an explicit MaximumBatchingWindowInSeconds 0 must be accepted: %v", err)
	}
	// Group a's second message fails twice; no later message of group a is
	// delivered until it succeeds, while group b goes on.
	failures := 0
	var order []string
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		ids, pids, _ := sqsIDs(t, p)
		var failed []string
		groupFailed := map[string]bool{}
		for i, pid := range pids {
			g := map[bool]string{true: "a", false: "b"}[pid == "1" || pid == "3" || pid == "5"]
			if groupFailed[g] {
				failed = append(failed, ids[i])
				continue
			}
			if pid == "3" && failures < 2 {
				failures++
				groupFailed[g] = true
				failed = append(failed, ids[i])
				continue
			}
			order = append(order, pid)
		}
		return failuresJSON(failed...), nil
	})
	m := &Mapping{EventSource: sevents.SourceSQSFIFO, BatchSize: ptr(10), FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	groups := []string{"a", "b", "a", "b", "a"}
	rep, _ := run(t, Options{Mapping: m, Records: sqsRecords(5, func(i int) string { return groups[i] }), Invoker: InProcess(h)})
	if i3, i5 := slices.Index(order, "3"), slices.Index(order, "5"); i3 < 0 || i5 < i3 {
		t.Fatalf("group a out of order: %v", order)
	}
	if rep.Totals.Processed != 5 {
		t.Fatalf("%+v", rep.Totals)
	}
}

func TestEdge08_RecordAgeValidation(t *testing.T) {
	for _, age := range []int{1, 59} {
		if err := kinesisMapping(10, func(m *Mapping) { m.MaximumRecordAgeInSeconds = ptr(age) }).Validate(); err == nil {
			t.Fatalf("MaximumRecordAgeInSeconds %d must be rejected", age)
		}
	}
	for _, age := range []int{-1, 60, 604800} {
		if err := kinesisMapping(10, func(m *Mapping) { m.MaximumRecordAgeInSeconds = ptr(age) }).Validate(); err != nil {
			t.Fatalf("MaximumRecordAgeInSeconds %d: %v", age, err)
		}
	}
}

// poisonAt fails every batch holding the record with payload id bad.
func poisonAt(t *testing.T, bad string) BytesHandler {
	return fn(func(ctx context.Context, p []byte) ([]byte, error) {
		_, pids := kinesisIDs(t, p)
		if slices.Contains(pids, bad) {
			return nil, errors.New("poison")
		}
		return nil, nil
	})
}

func TestEdge09_BisectIsolatesPoisonWithoutRetries(t *testing.T) {
	m := kinesisMapping(8, func(m *Mapping) { m.BisectBatchOnFunctionError = ptr(true); m.MaximumRetryAttempts = ptr(0) })
	recs := kinesisRecords(8, oneKey)
	recs[5].Expect = FateOnFailure
	rep, tr := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(poisonAt(t, "6"))})
	var sizes []int
	for _, e := range tr.entries {
		sizes = append(sizes, len(e.IDs))
	}
	// [1-8] fails, [1-4] ok, [5-8] fails, [5-6] fails, [5] ok, [6] fails: given up, [7-8] ok.
	if !slices.Equal(sizes, []int{8, 4, 4, 2, 1, 1, 2}) {
		t.Fatalf("batch sizes %v", sizes)
	}
	if rep.Totals.Bisections != 3 || rep.Totals.Retries != 0 || len(rep.OnFailureRecords) != 1 || rep.OnFailureRecords[0].KinesisBatchInfo.BatchSize != 1 {
		t.Fatalf("totals %+v on-failure %+v", rep.Totals, rep.OnFailureRecords)
	}
	if rep.Totals.Processed != 7 || rep.Totals.OnFailure != 1 || !heldWithoutEffects(rep) {
		t.Fatalf("%+v %+v", rep.Totals, rep.Invariants)
	}
	for _, e := range tr.entries[1:] {
		if !e.Bisect {
			t.Fatalf("halves must be flagged: %+v", e)
		}
	}
}

func TestEdge10_BisectWithPartialResponse(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		seqs, _ := kinesisIDs(t, p)
		if calls == 1 {
			return failuresJSON(seqs[5]), nil
		}
		return nil, nil
	})
	m := kinesisMapping(8, func(m *Mapping) { m.BisectBatchOnFunctionError = ptr(true) })
	_, tr := run(t, Options{Mapping: m, Records: kinesisRecords(8, oneKey), Invoker: InProcess(h)})
	if len(tr.entries) != 2 || !slices.Equal(tr.entries[1].IDs, tr.entries[0].IDs[5:]) {
		t.Fatalf("only records >= 6 are retried: %+v", tr.entries)
	}
}

func TestEdge11_RetriesExhaustedSendsOnFailureAndMovesOn(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "onfailure.jsonl")
	m := kinesisMapping(10, func(m *Mapping) {
		m.MaximumRetryAttempts = ptr(2)
		m.DestinationConfig = &DestinationConfig{OnFailure: &OnFailure{Destination: "file://" + dest}}
	})
	recs := append(kinesisRecords(3, oneKey), InputRecord{PartitionKey: "k", Data: json.RawMessage(`{"id":"after"}`)})
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls <= 3 {
			return nil, errors.New("always")
		}
		return nil, nil
	})
	rep, tr := run(t, Options{Mapping: m, Records: recs[:3], Invoker: InProcess(h)})
	if len(tr.entries) != 3 || len(rep.OnFailureRecords) != 1 {
		t.Fatalf("want 3 invocations then the on-failure record: %d, %+v", len(tr.entries), rep.OnFailureRecords)
	}
	of := rep.OnFailureRecords[0]
	if of.RequestContext.Condition != sevents.ConditionRetryAttemptsExhausted || of.RequestContext.ApproximateInvokeCount != 3 ||
		of.KinesisBatchInfo.BatchSize != 3 || of.ResponseContext == nil || of.ResponseContext.FunctionError == nil ||
		*of.ResponseContext.FunctionError != "Unhandled" || !strings.HasPrefix(of.KinesisBatchInfo.StreamARN, "arn:aws:kinesis:") {
		t.Fatalf("on-failure record %+v", of)
	}
	if !isUUID(of.RequestContext.RequestID) || of.RequestContext.RequestID != tr.entries[2].RequestID {
		t.Fatalf("requestId %q: want the last invocation's, a UUID (%q)", of.RequestContext.RequestID, tr.entries[2].RequestID)
	}
	if of.RequestContext.FunctionARN != "arn:aws:lambda:us-east-1:123456789012:function:function" {
		t.Fatalf("functionArn %q", of.RequestContext.FunctionARN)
	}
	// Kinesis keeps milliseconds in the arrival times.
	if a := of.KinesisBatchInfo.ApproximateArrivalOfFirstRecord; len(a) != len("2024-05-01T10:00:00.000Z") || !strings.HasSuffix(a, "Z") {
		t.Fatalf("approximateArrivalOfFirstRecord %q: want milliseconds", a)
	}
	raw, err := os.ReadFile(dest)
	if err != nil || strings.Count(string(raw), "\n") != 1 || !strings.Contains(string(raw), `"KinesisBatchInfo"`) {
		t.Fatalf("destination file: %v %s", err, raw)
	}
	if cp := rep.Checkpoints["shardId-000000000000"]; cp != tr.entries[0].IDs[2] {
		t.Fatalf("checkpoint %q, want past the batch", cp)
	}
	if rep.Totals.Retries != 2 || rep.Totals.OnFailure != 3 {
		t.Fatalf("%+v", rep.Totals)
	}
}

func TestEdge12_TumblingWindows(t *testing.T) {
	// The function counts records in its window state; each window ends with
	// a final invoke without records whose state holds the window's count.
	var finals []int
	var lastState int
	missingOnce := true
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		var ev events.KinesisTimeWindowEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		if ev.Window.End.Sub(ev.Window.Start.Time) != 2*time.Second || ev.ShardID == "" || !strings.HasPrefix(ev.EventSourceARN, "arn:aws:kinesis") {
			return nil, fmt.Errorf("window fields: %+v", ev.TimeWindowProperties)
		}
		n, _ := strconv.Atoi(ev.State["count"])
		if ev.IsFinalInvokeForWindow {
			if len(ev.Records) != 0 {
				return nil, errors.New("a final invoke carries no records")
			}
			finals = append(finals, n)
			return json.Marshal(events.KinesisTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{State: map[string]string{}}})
		}
		if missingOnce {
			missingOnce = false
			return []byte(`{"batchItemFailures":[]}`), nil // no state: Lambda counts the invocation as failed
		}
		lastState = n + len(ev.Records)
		return json.Marshal(events.KinesisTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
			State: map[string]string{"count": strconv.Itoa(lastState)}}})
	})
	recs := kinesisRecords(5000, oneKey) // 1 ms apart: spans at least three 2 s windows
	m := kinesisMapping(700, func(m *Mapping) { m.TumblingWindowInSeconds = ptr(2) })
	rep, tr := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(h)})
	sum := 0
	for _, n := range finals {
		sum += n
	}
	if sum != 5000 || len(finals) < 3 || rep.Totals.Processed != 5000 {
		t.Fatalf("finals %v (sum %d), totals %+v", finals, sum, rep.Totals)
	}
	if tr.entries[0].Result != ResultFunctionError || !strings.Contains(tr.entries[0].Error, "state") || tr.entries[1].Retry != 1 {
		t.Fatalf("a response without state must fail the invocation: %+v", tr.entries[:2])
	}
	nFinal := 0
	for _, e := range tr.entries {
		if e.Final {
			nFinal++
		}
	}
	if nFinal != len(finals) {
		t.Fatalf("%d final entries in the trace for %d finals", nFinal, len(finals))
	}
}

func TestTumblingWindowStateOver1MBClosesEarly(t *testing.T) {
	big := strings.Repeat("x", maxWindowState+1)
	var early, final, calls int
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		var ev events.KinesisTimeWindowEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		calls++
		state := map[string]string{}
		if ev.IsFinalInvokeForWindow {
			final++
			if ev.IsWindowTerminatedEarly {
				early++
			}
		} else if calls == 1 {
			state["blob"] = big
		} else if ev.State["blob"] != "" {
			return nil, errors.New("the window must go on with a fresh state")
		}
		return json.Marshal(events.KinesisTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{State: state}})
	})
	m := kinesisMapping(2, func(m *Mapping) { m.TumblingWindowInSeconds = ptr(900) })
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(4, oneKey), Invoker: InProcess(h)})
	if early != 1 || final < 2 || rep.Totals.Processed != 4 {
		t.Fatalf("early %d final %d totals %+v", early, final, rep.Totals)
	}
}

func TestEdge13_ParallelizationFactorKeepsKeyOrder(t *testing.T) {
	keys := func(i int) string { return fmt.Sprintf("key-%d", i%7) }
	var mu sync.Mutex // the lanes' batches run at once
	var effects []Effect
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		var ev events.KinesisEvent
		json.Unmarshal(p, &ev)
		mu.Lock()
		defer mu.Unlock()
		for _, r := range ev.Records {
			effects = append(effects, Effect{Record: r.Kinesis.SequenceNumber, Key: r.Kinesis.PartitionKey})
		}
		return nil, nil
	})
	m := kinesisMapping(5, func(m *Mapping) { m.ParallelizationFactor = ptr(4); m.Shards = ptr(2) })
	rep, tr := run(t, Options{Mapping: m, Records: kinesisRecords(200, keys), Invoker: InProcess(h),
		Effects: func() ([]Effect, error) { return effects, nil }})
	if !rep.Held() || rep.Totals.Processed != 200 {
		t.Fatalf("%+v %+v", rep.Invariants, rep.Totals)
	}
	// Each batch holds keys of one sub-lane only.
	for _, e := range tr.entries {
		if len(e.IDs) > 5 {
			t.Fatalf("batch of %d", len(e.IDs))
		}
	}
	if len(rep.Checkpoints) != 2 {
		t.Fatalf("checkpoints %v", rep.Checkpoints)
	}
}

func kafkaRecords(n, partitions int) []InputRecord {
	out := make([]InputRecord, n)
	for i := range out {
		p := i % partitions
		out[i] = InputRecord{Partition: &p, Value: json.RawMessage(fmt.Sprintf(`{"id":"%d","action":"ok"}`, i+1)),
			Headers: map[string]string{"bin": "\xff\x80a"}}
	}
	return out
}

func TestEdge14_KafkaUnknownOffsetFailsTheBatch(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls == 1 {
			return []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"topic-0","offset":999}}]}`), nil
		}
		return nil, nil
	})
	m := &Mapping{EventSource: sevents.SourceKafka, Mode: KafkaProvisioned, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(10),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	rep, tr := run(t, Options{Mapping: m, Records: kafkaRecords(3, 1), Invoker: InProcess(h)})
	if len(tr.entries) != 2 || tr.entries[0].Result != ResultFunctionError || !slices.Equal(tr.entries[0].IDs, tr.entries[1].IDs) {
		t.Fatalf("the whole batch is retried: %+v", tr.entries)
	}
	if rep.Checkpoints["topic-0"] != "2" {
		t.Fatalf("checkpoint %v", rep.Checkpoints)
	}
}

func TestEdge15_KafkaHeadersAreSignedBytes(t *testing.T) {
	var raw []byte
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) { raw = p; return nil, nil })
	m := &Mapping{EventSource: sevents.SourceKafka, StartingPosition: "LATEST"}
	run(t, Options{Mapping: m, Records: kafkaRecords(1, 1), Invoker: InProcess(h)})
	if !strings.Contains(string(raw), `"bin":[-1,-128,97]`) {
		t.Fatalf("headers must be signed bytes: %s", raw)
	}
	var ev events.KafkaEvent
	if err := json.Unmarshal(raw, &ev); err != nil || ev.EventSource != "aws:kafka" || len(ev.Records["topic-0"]) != 1 {
		t.Fatalf("%v %+v", err, ev)
	}
}

func TestEdge16_DuplicateDelivery(t *testing.T) {
	seen := map[string]int{}
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		_, pids := kinesisIDs(t, p)
		for _, pid := range pids {
			seen[pid]++
		}
		return nil, nil
	})
	rep, tr := run(t, Options{Mapping: kinesisMapping(2, nil), Records: kinesisRecords(6, oneKey), Invoker: InProcess(h),
		Faults: Faults{DuplicateRate: 1}})
	if rep.Totals.Duplicates != 3 || len(tr.entries) != 6 || seen["1"] != 2 {
		t.Fatalf("every successful batch delivered twice: %+v %v", rep.Totals, seen)
	}
}

func TestKafkaOnDemandRetriesUntilSuccess(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls <= 4 {
			return nil, errors.New("down")
		}
		return []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"topic-0","offset":0}}]}`), nil
	})
	m := &Mapping{EventSource: sevents.SourceKafka, StartingPosition: "TRIM_HORIZON"}
	rep, tr := run(t, Options{Mapping: m, Records: kafkaRecords(2, 1), Invoker: InProcess(h)})
	// On-demand: no retry limit, and a partial response is not read.
	if len(tr.entries) != 5 || rep.Totals.Processed != 2 || !tr.entries[4].Ignored {
		t.Fatalf("%+v %+v", tr.entries, rep.Totals)
	}
}

func TestEdge17_PartialResponseThatMovesTheCheckpointStartsAFreshCount(t *testing.T) {
	// Recorded against AWS: BatchSize 3, MaximumRetryAttempts 3, record 6
	// of 1-6 always reported. [1-3] succeeds; [4-6] reports 6, which moves
	// the checkpoint: a fresh count, so [6] alone is a first attempt; each
	// [6] that reports 6 again makes no progress and consumes a retry. 6 is
	// delivered 5 times; the on-failure record says approximateInvokeCount 4.
	deliveries := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		seqs, pids := kinesisIDs(t, p)
		for i, pid := range pids {
			if pid == "6" {
				deliveries++
				return failuresJSON(seqs[i]), nil
			}
		}
		return failuresJSON(), nil
	})
	m := kinesisMapping(3, func(m *Mapping) { m.MaximumRetryAttempts = ptr(3) })
	rep, tr := run(t, Options{Mapping: m, Records: kinesisRecords(6, oneKey), Invoker: InProcess(h)})
	var sizes, retries []int
	for _, e := range tr.entries {
		sizes, retries = append(sizes, len(e.IDs)), append(retries, e.Retry)
	}
	if deliveries != 5 || !slices.Equal(sizes, []int{3, 3, 1, 1, 1, 1}) || !slices.Equal(retries, []int{0, 0, 0, 1, 2, 3}) {
		t.Fatalf("record 6 delivered %d times (want 5); batch sizes %v, retries %v", deliveries, sizes, retries)
	}
	if len(rep.OnFailureRecords) != 1 {
		t.Fatalf("on-failure records %+v", rep.OnFailureRecords)
	}
	of := rep.OnFailureRecords[0]
	if of.RequestContext.ApproximateInvokeCount != 4 || of.KinesisBatchInfo.BatchSize != 1 ||
		of.ResponseContext == nil || of.ResponseContext.FunctionError != nil {
		t.Fatalf("on-failure record %+v (want approximateInvokeCount 4, one record, functionError null)", of)
	}
	if rep.Totals.Retries != 3 || rep.Totals.Processed != 5 || rep.Totals.OnFailure != 1 {
		t.Fatalf("totals %+v", rep.Totals)
	}
}

func TestEdge18_RecordAgeExceededHasNoResponseContext(t *testing.T) {
	// Records arrive as the run starts; a batch that always fails is
	// retried (10 s apart, on the virtual clock) until its records are
	// older than MaximumRecordAge (60 s), then given up on before the next
	// invocation. Recorded against AWS: the on-failure record has no
	// responseContext, approximateInvokeCount 1 and a UUID requestId.
	m := kinesisMapping(10, func(m *Mapping) { m.MaximumRecordAgeInSeconds = ptr(60) })
	// (One record: records 1 ms apart may age out in two steps.)
	rep, tr := run(t, Options{Mapping: m, Records: kinesisRecords(1, oneKey), RetryDelay: 10 * time.Second,
		Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("always") }))})
	if n := len(tr.entries); n < 6 || n > 8 || len(rep.OnFailureRecords) != 1 || rep.OnFailureRecords[0].RequestContext.Condition != sevents.ConditionRecordAgeExceeded {
		t.Fatalf("%d invocations (want about 7: 60 s of retries 10 s apart), on-failure %+v", n, rep.OnFailureRecords)
	}
	of := rep.OnFailureRecords[0]
	if of.ResponseContext != nil || of.RequestContext.ApproximateInvokeCount != 1 || !isUUID(of.RequestContext.RequestID) {
		t.Fatalf("on-failure record %+v", of)
	}
	b, _ := json.Marshal(of)
	if strings.Contains(string(b), "responseContext") {
		t.Fatalf("on-failure record %s: want no responseContext", b)
	}
	if rep.Totals.OnFailure != 1 || rep.Checkpoints["shardId-000000000000"] == "" {
		t.Fatalf("totals %+v checkpoints %v", rep.Totals, rep.Checkpoints)
	}
}

// isUUID reports whether s is a UUID in its canonical text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
	}
	return true
}

func TestOrderInvariantCatchesReordering(t *testing.T) {
	// A function that applies each batch in reverse breaks per-key order.
	var effects []Effect
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		seqs, _ := kinesisIDs(t, p)
		for i := len(seqs) - 1; i >= 0; i-- {
			effects = append(effects, Effect{Record: seqs[i], Key: "k"})
		}
		return nil, nil
	})
	rep, _ := run(t, Options{Mapping: kinesisMapping(5, nil), Records: kinesisRecords(5, oneKey), Invoker: InProcess(h),
		Effects: func() ([]Effect, error) { return effects, nil }})
	if rep.Held() || rep.Invariants[1].Name != InvariantOrder || rep.Invariants[1].Status != StatusViolated {
		t.Fatalf("order invariant must fail: %+v", rep.Invariants)
	}
}

func TestValidationReasons(t *testing.T) {
	tests := []struct {
		m    Mapping
		want string
	}{
		{Mapping{EventSource: "firehose"}, "EventSource"},
		{Mapping{EventSource: sevents.SourceKinesis}, "StartingPosition: is required"},
		{Mapping{EventSource: sevents.SourceDynamoDB, StartingPosition: "AT_TIMESTAMP"}, "StartingPosition"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", BatchSize: ptr(10001)}, "BatchSize"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", ParallelizationFactor: ptr(11)}, "ParallelizationFactor"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", MaximumRetryAttempts: ptr(-2)}, "MaximumRetryAttempts"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", TumblingWindowInSeconds: ptr(901)}, "TumblingWindowInSeconds"},
		// AWS's own wording where it is known, so a user can search for it.
		{Mapping{EventSource: sevents.SourceSQS, BatchSize: ptr(11)}, "Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10"},
		{Mapping{EventSource: sevents.SourceSQS, BatchSize: ptr(11), MaximumBatchingWindowInSeconds: ptr(0)}, "Maximum batch window in seconds must be greater than 0"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", MaximumRecordAgeInSeconds: ptr(59)},
			"MaximumRecordAgeInSeconds must be either -1 (forever) or between 60 and 604800 (inclusive)"},
		{Mapping{EventSource: sevents.SourceSQSFIFO, MaximumBatchingWindowInSeconds: ptr(5)}, "Batching window is not supported for FIFO queues"},
		{Mapping{EventSource: sevents.SourceSQS, BisectBatchOnFunctionError: ptr(true)}, "BisectBatchOnFunctionError"},
		{Mapping{EventSource: sevents.SourceSQS, DestinationConfig: &DestinationConfig{}}, "RedrivePolicy"},
		{Mapping{EventSource: sevents.SourceKafka, StartingPosition: "LATEST", MaximumRetryAttempts: ptr(3)}, "provisioned mode only"},
		{Mapping{EventSource: sevents.SourceKafka, StartingPosition: "LATEST", Mode: "burst"}, "Mode"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", FunctionResponseTypes: []string{"Partial"}}, "ReportBatchItemFailures"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", MaximumBatchingWindowInSeconds: ptr(301)}, "MaximumBatchingWindowInSeconds"},
		{Mapping{EventSource: sevents.SourceKinesis, StartingPosition: "LATEST", StartingPositionTimestamp: ptr(1.7e9)},
			"StartingPositionTimestamp: goes with StartingPosition AT_TIMESTAMP only"},
		{Mapping{EventSource: sevents.SourceKafka, StartingPosition: "AT_SEQUENCE_NUMBER"}, "use TRIM_HORIZON, LATEST or AT_TIMESTAMP"},
	}
	// Lambda starts Kinesis, MSK and self-managed Kafka mappings at a time.
	for _, src := range []sevents.Source{sevents.SourceKinesis, sevents.SourceKafka} {
		m := Mapping{EventSource: src, StartingPosition: "AT_TIMESTAMP", StartingPositionTimestamp: ptr(1.7e9)}
		if err := m.Validate(); err != nil {
			t.Errorf("%s at a timestamp: %v", src, err)
		}
	}
	for _, tt := range tests {
		err := tt.m.Validate()
		var ve *ValidationError
		if err == nil || !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: want an error mentioning %q, got %v", tt.m, tt.want, err)
		}
	}
	if _, err := ParseMapping([]byte(`{"EventSource":"sqs","BatchSzie":5}`)); err == nil {
		t.Error("a misspelt field must be an error")
	}
}

// TestSkewedParallelizationFactorReadsEverything: with half a shard's
// records on one hot key (one sub-lane) and reads of 1,000 records landing
// unevenly across sub-lanes, every record is still processed.
func TestSkewedParallelizationFactorReadsEverything(t *testing.T) {
	key := func(i int) string {
		if i < 1500 {
			return "hot"
		}
		return fmt.Sprint("cold-", i)
	}
	m := kinesisMapping(100, func(m *Mapping) { m.ParallelizationFactor = ptr(4) })
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(3000, key), Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil }))})
	if rep.Totals.Processed != 3000 || rep.Totals.Left != 0 {
		t.Fatalf("%+v", rep.Totals)
	}
}

func TestOnFailureArrivalTimes(t *testing.T) {
	// Recorded against AWS: DynamoDB Streams on-failure records write
	// approximateArrivalOf* in whole seconds; Kinesis keeps milliseconds
	// (TestEdge11).
	m := &Mapping{EventSource: sevents.SourceDynamoDB, StartingPosition: "TRIM_HORIZON", MaximumRetryAttempts: ptr(0)}
	recs := []InputRecord{{Keys: json.RawMessage(`{"pk":{"S":"a"}}`)}, {Keys: json.RawMessage(`{"pk":{"S":"b"}}`)}}
	rep, _ := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) {
		return nil, errors.New("always")
	}))})
	if len(rep.OnFailureRecords) != 1 || rep.OnFailureRecords[0].DDBStreamInfo == nil {
		t.Fatalf("on-failure records %+v", rep.OnFailureRecords)
	}
	info := rep.OnFailureRecords[0].DDBStreamInfo
	for _, a := range []string{info.ApproximateArrivalOfFirstRecord, info.ApproximateArrivalOfLastRecord} {
		// (time.Parse would accept a fraction the layout lacks: check the text.)
		if _, err := time.Parse(time.RFC3339, a); err != nil || len(a) != len("2024-05-01T10:00:00Z") || strings.Contains(a, ".") {
			t.Fatalf("arrival %q: want whole seconds like 2024-05-01T10:00:00Z (%v)", a, err)
		}
	}
}

func TestFunctionARNFor(t *testing.T) {
	const told = "arn:aws:lambda:eu-west-1:123456789012:function:orders"
	tests := []struct {
		name, mapping, told, region string
		want, err                   string
	}{
		{"nothing named", "", "", "", "arn:aws:lambda:us-east-1:123456789012:function:function", ""},
		{"mapping's name, in the mapping's region", "orders", "", "eu-west-1", told, ""},
		{"mapping's ARN as given", "arn:aws:lambda:us-west-2:111122223333:function:orders:live", "", "", "arn:aws:lambda:us-west-2:111122223333:function:orders:live", ""},
		{"the invoker's name", "", told, "", told, ""},
		{"agreeing names: what the function is told", "orders", told, "", told, ""},
		{"agreeing ARN and name: the mapping's ARN", "arn:aws:lambda:us-west-2:111122223333:function:orders", told, "", "arn:aws:lambda:us-west-2:111122223333:function:orders", ""},
		{"different functions", "billing", told, "", "", "differ"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := functionARNFor(tt.mapping, tt.told, tt.region)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "billing") {
					t.Fatalf("got %q, %v; want an error naming both", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestOnFailureNamesTheMappingsFunction(t *testing.T) {
	m := kinesisMapping(10, func(m *Mapping) { m.MaximumRetryAttempts = ptr(0); m.FunctionName = "orders"; m.Region = "eu-west-1" })
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(2, oneKey), Invoker: InProcess(poisonAt(t, "1"))})
	if len(rep.OnFailureRecords) != 1 || rep.OnFailureRecords[0].RequestContext.FunctionARN != "arn:aws:lambda:eu-west-1:123456789012:function:orders" {
		t.Fatalf("on-failure records %+v", rep.OnFailureRecords)
	}
}
