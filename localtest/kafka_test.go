package localtest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/batchresponse"
)

// kafkaMapping is a provisioned Kafka mapping reading partial responses.
func kafkaMapping(batch, partitions int, extra func(m *Mapping)) *Mapping {
	m := &Mapping{EventSource: sevents.SourceKafka, Mode: KafkaProvisioned, StartingPosition: "TRIM_HORIZON", BatchSize: ptr(batch), Partitions: ptr(partitions),
		FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	if extra != nil {
		extra(m)
	}
	return m
}

// kafkaEventIDs lists the "<topic>-<n>@<offset>" ids of a Kafka event,
// partition by partition in the event's key order.
func kafkaEventIDs(t *testing.T, payload []byte) (keys, ids []string) {
	t.Helper()
	var ev events.KafkaEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatalf("not a Kafka event: %v: %s", err, payload)
	}
	var order struct {
		Records json.RawMessage `json:"records"`
	}
	json.Unmarshal(payload, &order)
	dec := json.NewDecoder(strings.NewReader(string(order.Records)))
	dec.Token() // {
	for dec.More() {
		tok, _ := dec.Token()
		key := tok.(string)
		keys = append(keys, key)
		var skip json.RawMessage
		dec.Decode(&skip)
		for _, rec := range ev.Records[key] {
			ids = append(ids, kafkaID(key, rec.Offset))
		}
	}
	return keys, ids
}

func TestKafkaEventHoldsSeveralPartitions(t *testing.T) {
	var events [][]string
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		keys, _ := kafkaEventIDs(t, p)
		events = append(events, keys)
		return nil, nil
	})
	rep, tr := run(t, Options{Mapping: kafkaMapping(10, 2, nil), Records: kafkaRecords(6, 2), Invoker: InProcess(h)})
	if len(tr.entries) != 1 || !slices.Equal(events[0], []string{"topic-0", "topic-1"}) {
		t.Fatalf("one invocation carries both partitions: events %v, trace %+v", events, tr.entries)
	}
	e := tr.entries[0]
	if e.Partition != "topic-0,topic-1" || !slices.Equal(e.IDs, []string{"topic-0@0", "topic-0@1", "topic-0@2", "topic-1@0", "topic-1@1", "topic-1@2"}) {
		t.Fatalf("trace entry %+v", e)
	}
	if rep.Totals.Invocations != 1 || rep.Totals.Successes != 1 || rep.Totals.Processed != 6 ||
		rep.Checkpoints["topic-0"] != "2" || rep.Checkpoints["topic-1"] != "2" || !heldWithoutEffects(rep) {
		t.Fatalf("totals %+v checkpoints %v invariants %+v", rep.Totals, rep.Checkpoints, rep.Invariants)
	}

	// BatchSize counts across partitions: 4 of 6 records, then the rest.
	_, tr = run(t, Options{Mapping: kafkaMapping(4, 2, nil), Records: kafkaRecords(6, 2), Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil }))})
	var got [][]string
	for _, e := range tr.entries {
		got = append(got, e.IDs)
	}
	want := [][]string{{"topic-0@0", "topic-0@1", "topic-0@2", "topic-1@0"}, {"topic-1@1", "topic-1@2"}}
	if !slices.EqualFunc(got, want, slices.Equal) || tr.entries[1].Partition != "topic-1" {
		t.Fatalf("batches %v, want %v", got, want)
	}

	// The old behaviour on request: one partition per invocation.
	_, tr = run(t, Options{Mapping: kafkaMapping(10, 2, nil), Records: kafkaRecords(6, 2), Invoker: InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil })),
		KafkaOnePartitionPerBatch: true})
	if len(tr.entries) != 2 || tr.entries[0].Partition != "topic-0" || tr.entries[1].Partition != "topic-1" {
		t.Fatalf("one partition per batch: %+v", tr.entries)
	}
}

func TestKafkaPartialResponseRestartsOnlyItsPartition(t *testing.T) {
	delivered := map[string]int{}
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		_, ids := kafkaEventIDs(t, p)
		for _, id := range ids {
			delivered[id]++
		}
		if calls == 1 {
			return []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"topic-1","offset":1}}]}`), nil
		}
		return nil, nil
	})
	rep, tr := run(t, Options{Mapping: kafkaMapping(10, 2, nil), Records: kafkaRecords(6, 2), Invoker: InProcess(h)})
	if len(tr.entries) != 2 || tr.entries[0].Result != ResultPartial || !slices.Equal(tr.entries[0].Reported, []string{"topic-1@1"}) {
		t.Fatalf("trace %+v", tr.entries)
	}
	if !slices.Equal(tr.entries[1].IDs, []string{"topic-1@1", "topic-1@2"}) || tr.entries[1].Partition != "topic-1" {
		t.Fatalf("partition 1 restarts at offset 1, partition 0 is done: %+v", tr.entries[1])
	}
	for _, id := range []string{"topic-0@0", "topic-0@1", "topic-0@2", "topic-1@0"} {
		if delivered[id] != 1 {
			t.Fatalf("%s delivered %d times: %v", id, delivered[id], delivered)
		}
	}
	// The partial response moved partition 1's checkpoint: a fresh count,
	// no retry used.
	if rep.Totals.Retries != 0 || rep.Totals.PartialFailures != 1 || rep.Totals.Successes != 1 || rep.Totals.Processed != 6 || !heldWithoutEffects(rep) {
		t.Fatalf("totals %+v invariants %+v", rep.Totals, rep.Invariants)
	}
}

func TestKafkaFunctionErrorRetriesEveryPartition(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("down")
		}
		return nil, nil
	})
	rep, tr := run(t, Options{Mapping: kafkaMapping(10, 2, nil), Records: kafkaRecords(4, 2), Invoker: InProcess(h)})
	if len(tr.entries) != 2 || tr.entries[0].Result != ResultFunctionError || !slices.Equal(tr.entries[0].IDs, tr.entries[1].IDs) ||
		len(tr.entries[1].IDs) != 4 || tr.entries[1].Retry != 1 {
		t.Fatalf("both partitions are retried together: %+v", tr.entries)
	}
	// Each lane counts its own retry.
	if rep.Totals.Retries != 2 || rep.Totals.FunctionErrors != 1 || rep.Totals.Successes != 1 || rep.Totals.Processed != 4 {
		t.Fatalf("totals %+v", rep.Totals)
	}

	// Always failing, MaximumRetryAttempts 1: two invocations, then one
	// on-failure record per partition, each with its own KafkaBatchInfo.
	always := fn(func(context.Context, []byte) ([]byte, error) { return nil, errors.New("down") })
	rep, tr = run(t, Options{Mapping: kafkaMapping(10, 2, func(m *Mapping) { m.MaximumRetryAttempts = ptr(1) }), Records: kafkaRecords(4, 2), Invoker: InProcess(always)})
	if len(tr.entries) != 2 || len(rep.OnFailureRecords) != 2 || rep.Totals.OnFailure != 4 {
		t.Fatalf("trace %+v on-failure %+v totals %+v", tr.entries, rep.OnFailureRecords, rep.Totals)
	}
	for i, of := range rep.OnFailureRecords {
		part := []string{"topic-0", "topic-1"}[i]
		info := of.KafkaBatchInfo
		if info == nil || info.BatchSize != 2 || len(info.RecordsInfo) != 1 || info.RecordsInfo[part].LastRecordOffset != "1" ||
			of.RequestContext.ApproximateInvokeCount != 2 || of.RequestContext.Condition != sevents.ConditionRetryAttemptsExhausted ||
			of.ResponseContext == nil || of.ResponseContext.FunctionError == nil {
			t.Fatalf("on-failure record %d: %+v %+v", i, of, info)
		}
	}
}

func TestKafkaIdentifierOfAPartitionNotInTheEventFailsTheBatch(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls == 1 {
			// topic-2 exists, but its records are not in this event.
			return []byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"topic-2","offset":0}}]}`), nil
		}
		return nil, nil
	})
	rep, tr := run(t, Options{Mapping: kafkaMapping(4, 3, nil), Records: kafkaRecords(6, 3), Invoker: InProcess(h)})
	// BatchSize 4 leaves topic-2 for the next invocation; the failed
	// batch is retried whole in the round after.
	first := []string{"topic-0@0", "topic-0@1", "topic-1@0", "topic-1@1"}
	if len(tr.entries) != 3 || !slices.Equal(tr.entries[0].IDs, first) || tr.entries[0].Result != ResultFunctionError ||
		!strings.Contains(tr.entries[0].Error, "topic-2@0 is not in the batch") || tr.entries[1].Partition != "topic-2" ||
		!slices.Equal(tr.entries[2].IDs, first) || tr.entries[2].Retry != 1 {
		t.Fatalf("the whole batch is retried: %+v", tr.entries)
	}
	if rep.Totals.Processed != 6 || rep.Totals.Retries != 2 || !heldWithoutEffects(rep) {
		t.Fatalf("totals %+v invariants %+v", rep.Totals, rep.Invariants)
	}
}

func TestKafkaBisectionSplitsEachPartition(t *testing.T) {
	calls := 0
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		calls++
		if calls == 1 {
			return nil, errors.New("down")
		}
		return nil, nil
	})
	m := kafkaMapping(10, 2, func(m *Mapping) { m.BisectBatchOnFunctionError = ptr(true) })
	rep, tr := run(t, Options{Mapping: m, Records: kafkaRecords(8, 2), Invoker: InProcess(h)})
	var got [][]string
	for _, e := range tr.entries {
		got = append(got, e.IDs)
	}
	want := [][]string{
		{"topic-0@0", "topic-0@1", "topic-0@2", "topic-0@3", "topic-1@0", "topic-1@1", "topic-1@2", "topic-1@3"},
		{"topic-0@0", "topic-0@1", "topic-1@0", "topic-1@1"},
		{"topic-0@2", "topic-0@3", "topic-1@2", "topic-1@3"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) || !tr.entries[1].Bisect || rep.Totals.Bisections != 2 || rep.Totals.Retries != 0 {
		t.Fatalf("batches %v (want %v), totals %+v", got, want, rep.Totals)
	}
}

func TestPartVerdict(t *testing.T) {
	partial := batchresponse.Reading{Kind: batchresponse.Partial, Reported: []int{1, 4, 5}}
	whole := batchresponse.Reading{Kind: batchresponse.Whole, Reason: "x"}
	tests := []struct {
		name     string
		v        batchresponse.Reading
		from, to int
		kind     string
		reported []int
	}{
		{"first part", partial, 0, 3, batchresponse.Partial, []int{1}},
		{"second part renumbered", partial, 3, 6, batchresponse.Partial, []int{1, 2}},
		{"part with none reported", batchresponse.Reading{Kind: batchresponse.Partial, Reported: []int{4}}, 0, 3, batchresponse.Success, nil},
		{"whole holds for every part", whole, 3, 6, batchresponse.Whole, nil},
		{"success", batchresponse.Reading{Kind: batchresponse.Success}, 0, 3, batchresponse.Success, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := partReading(tt.v, tt.from, tt.to)
			if v.Kind != tt.kind || !slices.Equal(v.Reported, tt.reported) {
				t.Fatalf("got %+v, want %s %v", v, tt.kind, tt.reported)
			}
		})
	}
}
