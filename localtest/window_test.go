package localtest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// windowFunc is a tumbling window function whose aggregation invocations
// succeed (counting records in the state) and whose final invocations
// fail until failFinals of them have failed (-1: always).
type windowFunc struct {
	failFinals int

	mu             sync.Mutex
	finals, failed int
	records        int
}

func (f *windowFunc) Invoke(_ context.Context, p []byte) ([]byte, error) {
	var ev struct {
		Records                []json.RawMessage `json:"Records"`
		IsFinalInvokeForWindow bool              `json:"isFinalInvokeForWindow"`
	}
	if err := json.Unmarshal(p, &ev); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.IsFinalInvokeForWindow {
		f.finals++
		if f.failFinals < 0 || f.failed < f.failFinals {
			f.failed++
			return nil, errors.New("the window's result could not be written")
		}
	}
	f.records += len(ev.Records)
	return json.Marshal(events.KinesisTimeWindowEventResponse{TimeWindowEventResponseProperties: events.TimeWindowEventResponseProperties{
		State: map[string]string{"seen": "yes"}}})
}

// TestWindowFinalObeysMaximumRetryAttempts: a failing window-closing
// invocation is retried as MaximumRetryAttempts allows, then the window's
// records go to the on-failure destination ("Tumbling windows fully
// support the existing retry policies maxRetryAttempts and maxRecordAge",
// services-kinesis-windows, services-ddb-windows). Before, it was retried
// without limit until the run's cap.
func TestWindowFinalObeysMaximumRetryAttempts(t *testing.T) {
	for _, source := range []sevents.Source{sevents.SourceKinesis, sevents.SourceDynamoDB} {
		t.Run(string(source), func(t *testing.T) {
			m := kinesisMapping(10, func(m *Mapping) { m.TumblingWindowInSeconds = ptr(900); m.MaximumRetryAttempts = ptr(2) })
			recs := kinesisRecords(5, oneKey)
			info := func(of sevents.OnFailureRecord) *sevents.StreamBatchInfo { return of.KinesisBatchInfo }
			if source == sevents.SourceDynamoDB {
				m.EventSource = sevents.SourceDynamoDB
				recs = []InputRecord{{Keys: json.RawMessage(`{"pk":"a"}`)}, {Keys: json.RawMessage(`{"pk":"a"}`)}, {Keys: json.RawMessage(`{"pk":"a"}`)}}
				info = func(of sevents.OnFailureRecord) *sevents.StreamBatchInfo { return of.DDBStreamInfo }
			}
			f := &windowFunc{failFinals: -1}
			rep, tr := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(f), MaxInvocations: 50})
			if rep.Stopped != "" || f.finals != 3 || f.records != len(recs) {
				t.Fatalf("stopped %q after %d final invocations (want 3: one and MaximumRetryAttempts 2), %d records aggregated", rep.Stopped, f.finals, f.records)
			}
			var retries []int
			for _, e := range tr.entries {
				if e.Final {
					retries = append(retries, e.Retry)
				}
			}
			if len(retries) != 3 || retries[0] != 0 || retries[2] != 2 {
				t.Fatalf("final invocations' retries %v, want [0 1 2]", retries)
			}
			if len(rep.OnFailureRecords) != 1 {
				t.Fatalf("on-failure records %+v, want one for the window", rep.OnFailureRecords)
			}
			of := rep.OnFailureRecords[0]
			bi := info(of)
			if of.RequestContext.Condition != sevents.ConditionRetryAttemptsExhausted || of.RequestContext.ApproximateInvokeCount != 3 ||
				of.ResponseContext == nil || of.ResponseContext.FunctionError == nil || bi == nil || bi.BatchSize != len(recs) {
				t.Fatalf("on-failure record %+v (batch info %+v): want RetryAttemptsExhausted after 3 invocations, naming the window's %d records", of, bi, len(recs))
			}
			if rep.Totals.OnFailure != len(recs) || rep.Totals.Processed != 0 || rep.Totals.Retries != 2 {
				t.Fatalf("totals %+v: the window's records end on-failure (their result never landed)", rep.Totals)
			}
		})
	}
}

// TestWindowFinalUntilSuccess: Options.WindowFinalUntilSuccess reads
// "If invocation is unsuccessful, your Lambda function suspends further
// processing until a successful invocation" literally: the final
// invocation is retried past MaximumRetryAttempts until it succeeds.
func TestWindowFinalUntilSuccess(t *testing.T) {
	m := kinesisMapping(10, func(m *Mapping) { m.TumblingWindowInSeconds = ptr(900); m.MaximumRetryAttempts = ptr(2) })
	f := &windowFunc{failFinals: 5}
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(5, oneKey), Invoker: InProcess(f), WindowFinalUntilSuccess: true, MaxInvocations: 50})
	if f.finals != 6 || len(rep.OnFailureRecords) != 0 || rep.Totals.Processed != 5 || rep.Stopped != "" {
		t.Fatalf("%d finals (want 6), on-failure %+v, totals %+v, stopped %q", f.finals, rep.OnFailureRecords, rep.Totals, rep.Stopped)
	}
}

// TestWindowFinalObeysMaximumRecordAge: with unlimited retries, a failing
// final invocation is given up once even the window's newest record is
// older than MaximumRecordAgeInSeconds: RecordAgeExceeded, as AWS writes it
// (no responseContext, approximateInvokeCount 1).
func TestWindowFinalObeysMaximumRecordAge(t *testing.T) {
	m := kinesisMapping(10, func(m *Mapping) { m.TumblingWindowInSeconds = ptr(900); m.MaximumRecordAgeInSeconds = ptr(60) })
	f := &windowFunc{failFinals: -1}
	rep, _ := run(t, Options{Mapping: m, Records: kinesisRecords(5, oneKey), Invoker: InProcess(f), RetryDelay: 10 * time.Second, MaxInvocations: 50})
	if rep.Stopped != "" || f.finals < 6 || f.finals > 8 {
		t.Fatalf("stopped %q after %d finals (want about 7: 60 s of retries 10 s apart)", rep.Stopped, f.finals)
	}
	if len(rep.OnFailureRecords) != 1 || rep.OnFailureRecords[0].RequestContext.Condition != sevents.ConditionRecordAgeExceeded ||
		rep.OnFailureRecords[0].ResponseContext != nil || rep.OnFailureRecords[0].KinesisBatchInfo.BatchSize != 5 || rep.Totals.OnFailure != 5 {
		t.Fatalf("on-failure %+v, totals %+v", rep.OnFailureRecords, rep.Totals)
	}
}
