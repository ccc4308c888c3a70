package localtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
	"github.com/sluicehq/sluice/localtest"
)

// s3TestEvent is the message S3 sends when notifications are set up.
const s3TestEvent = `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2014-10-13T15:57:02.089Z","Bucket":"bucket","RequestId":"5582815E1AEA5ADF","HostId":"8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE"}`

func s3Notification(keys ...string) string {
	var recs []string
	for i, k := range keys {
		recs = append(recs, fmt.Sprintf(`{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2024-01-01T00:00:00.000Z",`+
			`"eventName":"ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"bucket","arn":"arn:aws:s3:::bucket"},`+
			`"object":{"key":%q,"size":1,"sequencer":"%02d"}}}`, k, i))
	}
	return `{"Records":[` + strings.Join(recs, ",") + `]}`
}

// sqsLines is a records file of SQS messages with these bodies.
func sqsLines(bodies ...string) []localtest.InputRecord {
	out := make([]localtest.InputRecord, len(bodies))
	for i, b := range bodies {
		out[i] = localtest.InputRecord{Body: json.RawMessage(b)}
	}
	return out
}

func sqsMapping() *localtest.Mapping {
	return &localtest.Mapping{EventSource: events.SourceSQS, FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
}

// skipsFile gives the handlers built after it a skips file, as sluice run
// does, and returns the run's Options.Skips.
func skipsFile(t *testing.T) func() ([]localtest.Skip, error) {
	path := filepath.Join(t.TempDir(), "skips.jsonl")
	t.Setenv(localtest.EnvSkipsFile, path)
	return func() ([]localtest.Skip, error) { return localtest.ReadSkips(path) }
}

// TestS3TestEventAndItems: the s3:TestEvent message, which the handler
// acknowledges without running the function, is skipped, not lost; and a
// message of two S3 records whose function makes one effect per object,
// each named by its item (handlers.SQSRecord.ItemID), took effect once
// per item. Before, the test event read as "no-record-lost: VIOLATED",
// and the two effects of one message as "took effect 2 times".
func TestS3TestEventAndItems(t *testing.T) {
	for _, tt := range []struct {
		name       string
		skips      bool // the run reads the handlers' skips
		dropItem   bool // the function skips the second object
		loss, once string
		mention    string
	}{
		{name: "correct", skips: true, loss: localtest.StatusHeld, once: localtest.StatusHeld},
		{name: "an item dropped", skips: true, dropItem: true, loss: localtest.StatusViolated, once: localtest.StatusHeld,
			mention: "but not item 1"},
		{name: "skips not read", loss: localtest.StatusViolated, once: localtest.StatusHeld, mention: "record 1 was acknowledged"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := localtest.Options{Mapping: sqsMapping(), Records: sqsLines(s3TestEvent, s3Notification("a", "b"),
				awsevents.SNSNotification("n1", s3TestEvent)), ExactlyOnce: true}
			var effects effectLog
			if tt.skips {
				opts.Skips = skipsFile(t)
			}
			// One function for both shapes: the plain notifications and the
			// one S3 published through SNS.
			plain, err := handlers.NewSQS(func(_ context.Context, r handlers.SQSRecord[handlers.S3Notification]) error {
				for i := range r.Value.Records {
					if !tt.dropItem || i == 0 {
						effects.add(localtest.Effect{Record: r.ItemID(i)})
					}
				}
				return nil
			}, quietOpts()...)
			if err != nil {
				t.Fatal(err)
			}
			sns, err := handlers.NewSQS(func(_ context.Context, r handlers.SQSRecord[handlers.SNSMessage[handlers.S3Notification]]) error {
				return nil
			}, quietOpts()...)
			if err != nil {
				t.Fatal(err)
			}
			opts.Invoker = localtest.InProcess(fnHandler(func(ctx context.Context, p []byte) ([]byte, error) {
				if strings.Contains(string(p), `\"Type\" : \"Notification\"`) {
					return sns.Invoke(ctx, p)
				}
				return plain.Invoke(ctx, p)
			}))
			size := 1
			opts.Mapping.BatchSize = &size
			opts.Effects = effects.read
			rep, err := localtest.Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			got := statuses(rep)
			if got[localtest.InvariantNoLoss] != tt.loss || got[localtest.InvariantOnce] != tt.once {
				t.Fatalf("%+v", rep.Invariants)
			}
			if tt.mention != "" && !strings.Contains(fmt.Sprint(invariant(rep, localtest.InvariantNoLoss)), tt.mention) {
				t.Fatalf("no-record-lost does not say %q: %+v", tt.mention, rep.Invariants)
			}
			if !tt.skips {
				return
			}
			if rep.Totals.Skipped != 2 || rep.Totals.Processed != 1 || len(rep.Skipped) != 2 ||
				rep.Skipped[0].Reason != localtest.SkipS3TestEvent || !strings.Contains(rep.Skipped[0].Checked, "s3:TestEvent") ||
				rep.Skipped[1].Name() != "record 3" {
				t.Fatalf("totals %+v, skipped %+v", rep.Totals, rep.Skipped)
			}
			if got[localtest.InvariantFates] != localtest.StatusHeld {
				t.Fatalf("a checked skip is expected by default: %+v", rep.Invariants)
			}
		})
	}
}

// recordingStore is an idempotency store that keeps the keys it
// completed, as the runner's Options.Idempotency reads them.
type recordingStore struct {
	*idempotency.MemoryStore
	mu   sync.Mutex
	done map[string]bool
}

func newRecordingStore() *recordingStore {
	return &recordingStore{MemoryStore: idempotency.NewMemoryStore(), done: map[string]bool{}}
}

func (s *recordingStore) Complete(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	err := s.MemoryStore.Complete(ctx, key, owner, result, expires)
	if err == nil {
		s.mu.Lock()
		s.done[key] = true
		s.mu.Unlock()
	}
	return err
}

func (s *recordingStore) CompleteAll(ctx context.Context, cs []idempotency.Completion) error {
	err := s.MemoryStore.CompleteAll(ctx, cs)
	if err == nil {
		s.mu.Lock()
		for _, c := range cs {
			s.done[c.Key] = true
		}
		s.mu.Unlock()
	}
	return err
}

func (s *recordingStore) CompletedKeys(context.Context) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.done))
	for k := range s.done {
		out[k] = true
	}
	return out, nil
}

// TestSkippedDuplicates: records the idempotency layer answers as
// duplicates are skipped, and their claims checked: by the business key's
// effect in this run (--effects-key), or by the store holding the key
// completed before the run. A claim the runner cannot check leaves
// no-record-lost not evaluated, never held.
func TestSkippedDuplicates(t *testing.T) {
	// Messages 1 and 3 are a producer's duplicate: one payment.
	bodies := []string{`{"id":"pay-1"}`, `{"id":"pay-2"}`, `{"id":"pay-1"}`}
	type payment struct {
		ID string `json:"id"`
	}
	build := func(t *testing.T, store idempotency.Store, effects *effectLog) localtest.BytesHandler {
		h, err := handlers.NewSQS(func(_ context.Context, r handlers.SQSRecord[payment]) error {
			effects.add(localtest.Effect{Record: r.RecordID(), ID: r.Value.ID})
			return nil
		}, quietOpts(handlers.WithConcurrency(1), handlers.WithIdempotency(store),
			handlers.WithIdempotencyKey(func(r handlers.SQSRecord[payment]) string { return r.Value.ID }))...)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	size := 1
	m := sqsMapping()
	m.BatchSize = &size
	t.Run("took effect in this run", func(t *testing.T) {
		var effects effectLog
		skips := skipsFile(t)
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: sqsLines(bodies...),
			Invoker: localtest.InProcess(build(t, idempotency.NewMemoryStore(), &effects)), Effects: effects.read, EffectsKey: "id",
			ExactlyOnce: true, Skips: skips})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Held() || rep.Totals.Skipped != 1 || len(rep.Skipped) != 1 || rep.Skipped[0].IdempotencyKey != "pay-1" ||
			!strings.Contains(rep.Skipped[0].Checked, `id "pay-1" took effect in this run`) {
			t.Fatalf("held %v %+v, skipped %+v", rep.Held(), rep.Invariants, rep.Skipped)
		}
	})
	t.Run("cannot be checked by record id", func(t *testing.T) {
		var effects effectLog
		skips := skipsFile(t)
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: sqsLines(bodies...),
			Invoker: localtest.InProcess(build(t, idempotency.NewMemoryStore(), &effects)), Effects: effects.read, Skips: skips})
		if err != nil {
			t.Fatal(err)
		}
		loss := invariant(rep, localtest.InvariantNoLoss)
		if rep.Held() || loss.Status != localtest.StatusNotEvaluated || !strings.Contains(loss.Reason, "idempotency store") {
			t.Fatalf("%+v", loss)
		}
		// Given the store, the key completed during the run, by a record
		// the runner cannot tie it to: still not held, and it says how.
		var again effectLog
		store := newRecordingStore()
		rep, err = localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: sqsLines(bodies...),
			Invoker: localtest.InProcess(build(t, store, &again)), Effects: again.read, Skips: skips, Idempotency: store})
		if err != nil {
			t.Fatal(err)
		}
		loss = invariant(rep, localtest.InvariantNoLoss)
		if rep.Held() || loss.Status != localtest.StatusNotEvaluated || !strings.Contains(loss.Reason, "--effects-key") {
			t.Fatalf("%+v", loss)
		}
	})
	t.Run("completed before the run", func(t *testing.T) {
		store := newRecordingStore()
		var first effectLog
		skips := skipsFile(t)
		h := build(t, store, &first)
		if _, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: sqsLines(bodies...), Invoker: localtest.InProcess(h)}); err != nil {
			t.Fatal(err)
		}
		// The same payments again, in new messages: every one a duplicate.
		var effects effectLog
		h = build(t, store, &effects)
		rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: sqsLines(bodies...),
			Invoker: localtest.InProcess(h), Effects: effects.read, ExactlyOnce: true, Skips: skips, Idempotency: store})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Held() || rep.Totals.Skipped != 3 || !strings.Contains(rep.Skipped[0].Checked, "had completed before the run") {
			t.Fatalf("held %v %+v, skipped %+v", rep.Held(), rep.Invariants, rep.Skipped)
		}
	})
}

// TestFalseSkipClaims: a function whose claims are false fails the run:
// a test event that is not one, a duplicate of a key never completed, a
// claim for no record of the run.
func TestFalseSkipClaims(t *testing.T) {
	size := 1
	m := sqsMapping()
	m.BatchSize = &size
	for _, tt := range []struct {
		name, reason, key, record string
		want                      string
	}{
		{name: "not a test event", reason: localtest.SkipS3TestEvent, want: "as an s3:TestEvent message, but its payload is not one"},
		{name: "key never completed", reason: localtest.SkipDuplicate, key: "nobody", want: `idempotency key "nobody", but that key is not completed`},
		{name: "no key", reason: localtest.SkipDuplicate, want: "named no idempotency key"},
		{name: "unknown reason", reason: "because", want: `a reason the runner does not know ("because"`},
		{name: "no such record", reason: localtest.SkipS3TestEvent, record: "m-9", want: "no record of this run has that id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "skips.jsonl")
			var effects effectLog
			// The function drops message 2, and writes a claim for it.
			h, err := handlers.NewSQS(func(_ context.Context, r handlers.SQSRecord[command]) error {
				if r.Value.ID != "o2" {
					effects.add(localtest.Effect{Record: r.RecordID()})
					return nil
				}
				rec := r.RecordID()
				if tt.record != "" {
					rec = tt.record
				}
				line := fmt.Sprintf(`{"record":%q,"reason":%q,"key":%q}`+"\n", rec, tt.reason, tt.key)
				return os.WriteFile(path, []byte(line), 0o644)
			}, quietOpts()...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := localtest.Run(context.Background(), localtest.Options{Mapping: m, Records: sqsLines(`{"id":"o1"}`, `{"id":"o2"}`),
				Invoker: localtest.InProcess(h), Effects: effects.read, Idempotency: newRecordingStore(),
				Skips: func() ([]localtest.Skip, error) { return localtest.ReadSkips(path) }})
			if err != nil {
				t.Fatal(err)
			}
			loss := invariant(rep, localtest.InvariantNoLoss)
			if rep.Held() || loss.Status != localtest.StatusViolated || !strings.Contains(fmt.Sprint(loss.Violations), tt.want) {
				t.Fatalf("want a violation saying %q: %+v", tt.want, loss)
			}
		})
	}
}
