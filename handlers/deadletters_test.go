package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	sevents "github.com/sluicehq/sluice/events"
)

// sink is a dlq.Destination that keeps what it accepts; reject decides per
// envelope (nil: accept), fail fails whole sends, block waits for the
// deadline, and panics panics.
type sink struct {
	mu     sync.Mutex
	calls  int
	got    []*dlq.Envelope
	reject func(e *dlq.Envelope) error
	fail   error
	block  bool
	panics bool
}

func (s *sink) Send(ctx context.Context, envs []*dlq.Envelope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	switch {
	case s.panics:
		panic("destination exploded")
	case s.block:
		<-ctx.Done()
		return ctx.Err()
	case s.fail != nil:
		return s.fail
	}
	errs := make([]error, len(envs))
	bad := false
	for i, e := range envs {
		if s.reject != nil {
			errs[i] = s.reject(e)
		}
		if errs[i] != nil {
			bad = true
			continue
		}
		b, err := e.Marshal() // what a real destination keeps
		if err != nil {
			return err
		}
		kept, err := dlq.Unmarshal(b)
		if err != nil {
			return err
		}
		s.got = append(s.got, kept)
	}
	if bad {
		return &dlq.SendError{Errs: errs}
	}
	return nil
}

func (s *sink) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.got {
		out = append(out, e.RecordID)
	}
	return out
}

// dlOpts is quiet options with a report hook and dead letters.
func dlOpts(rep *BatchReport, dest dlq.Destination, dopts []dlq.Option, extra ...Option) []Option {
	env := func(k string) (string, bool) {
		if k == EnvFunctionName {
			return "orders-fn", true
		}
		return "", false
	}
	o := []Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(env), WithoutRetry(),
		WithOnBatch(func(_ context.Context, r BatchReport) { *rep = r }), WithDeadLetters(dest, dopts...)}
	return append(o, extra...)
}

func lambdaCtx() context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-42"})
}

// recordsOf returns each record of a "Records" event as encoding/json
// writes it alone.
func recordsOf[E any](t *testing.T, recs []E) []string {
	t.Helper()
	out := make([]string, len(recs))
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// TestDeadLettersKinesisPermanent: permanent failures and a decode error are
// quarantined with complete envelopes, each sent before the shard goes on
// (one send per record), and the stream goes on past them.
func TestDeadLettersKinesisPermanent(t *testing.T) {
	b := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", ShardID: "shardId-000000000007"}
	for i, a := range []string{"ok", "permanent", "ok", "ok", "permanent", "ok"} {
		b.Add(fmt.Sprintf("pk-%d", i), payload(fmt.Sprint(i), a))
	}
	b.Add("pk-bad", []byte("not json"))
	ev := b.Event()
	raw, _ := json.Marshal(ev)
	want := recordsOf(t, ev.Records)
	var rec recorder
	var rep BatchReport
	dest := &sink{}
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		rec.add(r.Value.ID)
		return act(r.Value.Action)
	}, dlOpts(&rep, dest, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(lambdaCtx(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s, %v: want success", out, err)
	}
	if fmt.Sprint(rec.seen) != "[0 1 2 3 4 5]" {
		t.Fatalf("ran %v", rec.seen)
	}
	if dest.calls != 3 || fmt.Sprint(dest.ids()) != fmt.Sprint([]string{ev.Records[1].Kinesis.SequenceNumber, ev.Records[4].Kinesis.SequenceNumber, ev.Records[6].Kinesis.SequenceNumber}) {
		t.Fatalf("%d sends of %v", dest.calls, dest.ids())
	}
	for k, i := range []int{1, 4, 6} {
		e, r := dest.got[k], ev.Records[i]
		if string(e.Record) != want[i] {
			t.Errorf("record %d: envelope holds %s, want %s", i, e.Record, want[i])
		}
		reason, class := dlq.ReasonPermanent, "permanent"
		if e.Version != dlq.Version || e.Source != "kinesis" || e.SourceARN != "arn:aws:kinesis:us-east-1:123456789012:stream/orders" ||
			e.Shard != "shardId-000000000007" || e.RecordID != r.Kinesis.SequenceNumber || e.EventID != r.EventID ||
			e.SequenceNumber != r.Kinesis.SequenceNumber || e.PartitionKey != r.Kinesis.PartitionKey ||
			e.ArrivalTime.Sub(r.Kinesis.ApproximateArrivalTimestamp.Time).Abs() > time.Millisecond || e.Attempts != 1 || e.FirstFailure.IsZero() ||
			e.LastFailure.IsZero() || e.Error == "" || e.Class != class || e.Reason != reason ||
			e.FunctionName != "orders-fn" || e.RequestID != "req-42" || e.Truncated != nil {
			t.Errorf("record %d: envelope %+v", i, e)
		}
	}
	if rep.Quarantined != 3 || !rep.Records[1].Quarantined || rep.Records[0].Quarantined || rep.Records[1].Outcome != batch.Succeeded {
		t.Fatalf("report: %d quarantined, records %+v", rep.Quarantined, rep.Records)
	}
}

// TestDeadLettersAttemptsAcrossInvocations: a plain failure is reported
// until its attempts, counted in the store, reach the limit.
func TestDeadLettersAttemptsAcrossInvocations(t *testing.T) {
	raw, seqs := kinesisTestEvent("ok", "fail", "ok")
	store := &attemptsCounter{AttemptsStore: dlq.NewMemory(0)}
	dest := &sink{}
	var rep BatchReport
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(3), dlq.WithAttempts(store)})...)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		out, err := h.Invoke(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		got := failures(t, out)
		if n < 3 && !slices.Equal(got, pick(seqs, 1)) || n == 3 && len(got) != 0 {
			t.Fatalf("invocation %d reported %v", n, got)
		}
	}
	if ids := dest.ids(); len(ids) != 1 || ids[0] != seqs[1] || dest.got[0].Attempts != 3 || dest.got[0].Reason != dlq.ReasonAttempts ||
		dest.got[0].Class != "plain" || !strings.Contains(dest.got[0].Error, "asked to fail") {
		t.Fatalf("quarantined %v: %+v", ids, dest.got)
	}
	if store.begins != 0 || store.fails != 3 {
		t.Fatalf("store: %d Begin, %d Fail; want 0 and 3 (one per failure, none for healthy records)", store.begins, store.fails)
	}
}

type attemptsCounter struct {
	dlq.AttemptsStore
	mu            sync.Mutex
	begins, fails int
	failErr       error
}

func (s *attemptsCounter) Begin(ctx context.Context, key string, now time.Time) (dlq.Attempts, error) {
	s.mu.Lock()
	s.begins++
	s.mu.Unlock()
	return s.AttemptsStore.Begin(ctx, key, now)
}

func (s *attemptsCounter) Fail(ctx context.Context, key string, counted bool, f dlq.Failure) (dlq.Attempts, error) {
	s.mu.Lock()
	s.fails++
	err := s.failErr
	s.mu.Unlock()
	if err != nil {
		return dlq.Attempts{}, err
	}
	return s.AttemptsStore.Fail(ctx, key, counted, f)
}

// TestDeadLettersCrash: a lone record whose invocations never answer (the
// invoking goroutine ends mid-record, as a process that exits) is
// quarantined without running once it reached the limit; a healthy lone
// record runs.
func TestDeadLettersCrash(t *testing.T) {
	raw, seqs := kinesisTestEvent("crash")
	store := dlq.NewMemory(0)
	dest := &sink{}
	var rep BatchReport
	runs := 0
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
		runs++
		runtime.Goexit() // nothing is answered: the invocation crashed
		return nil
	}, dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(3), dlq.WithAttempts(store)})...)
	if err != nil {
		t.Fatal(err)
	}
	crash := func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.Invoke(context.Background(), raw)
			t.Error("the invocation answered")
		}()
		<-done
	}
	crash()
	crash()
	if runs != 2 || dest.calls != 0 {
		t.Fatalf("after two crashes: %d runs, %d sends", runs, dest.calls)
	}
	out, err := h.Invoke(lambdaCtx(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("third delivery: %s, %v; want success", out, err)
	}
	if runs != 2 || len(dest.got) != 1 {
		t.Fatalf("third delivery ran the record (%d runs) or sent %d envelopes", runs, len(dest.got))
	}
	e := dest.got[0]
	if e.RecordID != seqs[0] || e.Reason != dlq.ReasonCrash || e.Class != dlq.ClassCrash || e.Attempts != 3 ||
		!strings.Contains(e.Error, "2 deliveries") || e.RequestID != "req-42" {
		t.Fatalf("crash envelope %+v", e)
	}
	if !rep.Records[0].Quarantined || rep.Quarantined != 1 {
		t.Fatalf("report %+v", rep)
	}
	// A healthy record alone for the first time runs, whatever its limit.
	raw2, _ := kinesisTestEvent("ok")
	h2, _ := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { runs++; return nil },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(1), dlq.WithAttempts(dlq.NewMemory(0))})...)
	if out, err := h2.Invoke(context.Background(), raw2); err != nil || len(failures(t, out)) != 0 || runs != 3 {
		t.Fatalf("healthy lone record: %s, %v, runs %d", out, err, runs)
	}
}

// TestDeadLettersSQSReceiveCount: SQS attempts are the receive count.
func TestDeadLettersSQSReceiveCount(t *testing.T) {
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
	b.AddRedelivered(string(payload("a", "fail")), 2)
	b.AddRedelivered(string(payload("b", "fail")), 3)
	b.AddRedelivered(string(payload("c", "ok")), 9)
	ev := b.Event()
	raw, _ := sevents.MarshalEvent(ev)
	one, _ := sevents.MarshalEvent(events.SQSEvent{Records: ev.Records[1:2]})
	want := strings.TrimSuffix(strings.TrimPrefix(string(one), `{"Records":[`), "]}")
	dest := &sink{}
	var rep BatchReport
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return act(r.Value.Action) },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(3)})...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || !slices.Equal(failures(t, out), []string{ev.Records[0].MessageId}) {
		t.Fatalf("%s, %v", out, err)
	}
	if len(dest.got) != 1 {
		t.Fatalf("quarantined %v", dest.ids())
	}
	e := dest.got[0]
	if e.RecordID != ev.Records[1].MessageId || e.Attempts != 3 || e.Source != "sqs" || e.SourceARN != b.QueueARN ||
		e.EventID != e.RecordID || string(e.Record) != want || e.ArrivalTime.IsZero() {
		t.Fatalf("envelope %+v", e)
	}
}

// TestDeadLettersDestinationFails: on a Kinesis shard a send that fails,
// rejects a record, panics or runs into the deadline ends with each record
// either in the destination or reported, none lost; and nothing after the
// record whose quarantine failed runs (it would run again when Lambda
// restarts the shard at the reported record).
func TestDeadLettersDestinationFails(t *testing.T) {
	actions := []string{"ok", "permanent", "ok", "permanent", "ok"}
	for _, tc := range []struct {
		name     string
		dest     *sink
		ctx      func() (context.Context, context.CancelFunc)
		reported []int // indexes reported (Kinesis reports the lowest)
		kept     []int
	}{
		{"fails", &sink{fail: errors.New("queue is gone")}, nil, []int{1}, nil},
		{"half", &sink{reject: func(e *dlq.Envelope) error {
			if strings.HasSuffix(e.RecordID, "3") { // the fourth record
				return errors.New("too big")
			}
			return nil
		}}, nil, []int{3}, []int{1}},
		{"panics", &sink{panics: true}, nil, []int{1}, nil},
		{"deadline", &sink{block: true}, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 400*time.Millisecond)
		}, []int{1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, seqs := kinesisTestEvent(actions...)
			var rep BatchReport
			var rec recorder
			h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
				rec.add(r.Value.ID)
				return act(r.Value.Action)
			}, dlOpts(&rep, tc.dest, nil, WithDeadlineMargin(0))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			out, err := h.Invoke(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := failures(t, out); !slices.Equal(got, pick(seqs, tc.reported...)) {
				t.Fatalf("reported %v, want %v", got, pick(seqs, tc.reported...))
			}
			if got := tc.dest.ids(); !slices.Equal(got, pick(seqs, tc.kept...)) && (len(got) != 0 || len(tc.kept) != 0) {
				t.Fatalf("destination kept %v, want %v", got, pick(seqs, tc.kept...))
			}
			// Every permanent record is in the destination or reported
			// (the lowest reported one), and nothing after that one ran.
			lowest := tc.reported[0]
			if want := fmt.Sprint(seqsUpTo(lowest)); fmt.Sprint(rec.seen) != want {
				t.Errorf("ran %v, want %v: nothing after the record whose quarantine failed", rec.seen, want)
			}
			for _, i := range []int{1, 3} {
				var qe *QuarantineError
				switch {
				case slices.Contains(tc.kept, i):
					if !rep.Records[i].Quarantined {
						t.Errorf("record %d is kept but not counted as quarantined", i)
					}
				case i == lowest:
					if rep.Records[i].Quarantined || rep.Records[i].Outcome != batch.Failed || !errors.As(rep.Records[i].Err, &qe) {
						t.Errorf("record %d: %+v, want failed with a QuarantineError", i, rep.Records[i])
					}
				case i > lowest:
					if rep.Records[i].Outcome != batch.NotAttempted {
						t.Errorf("record %d: %+v, want not attempted", i, rep.Records[i])
					}
				default:
					t.Errorf("record %d is neither kept nor redelivered", i)
				}
			}
			if rep.Quarantined != len(tc.kept) {
				t.Fatalf("BatchReport.Quarantined %d, want %d", rep.Quarantined, len(tc.kept))
			}
		})
	}
}

// TestDeadLettersPanicQuarantined: a panicking function is a failure like
// any other; at the limit the record is quarantined.
func TestDeadLettersPanicQuarantined(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "panic"}, [2]string{"", "ok"})
	dest := &sink{}
	var rep BatchReport
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return act(r.Value.Action) },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(1)})...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s, %v", out, err)
	}
	if len(dest.got) != 1 || dest.got[0].RecordID != ids[0] || !strings.Contains(dest.got[0].Error, "panic: asked to panic") {
		t.Fatalf("quarantined %+v", dest.got)
	}
}

// TestDeadLettersStoreFails: when the attempts store fails, a plain failure
// is reported; a permanent one is still quarantined.
func TestDeadLettersStoreFails(t *testing.T) {
	raw, seqs := kinesisTestEvent("permanent", "fail")
	store := &attemptsCounter{AttemptsStore: dlq.NewMemory(0), failErr: errors.New("throttled")}
	dest := &sink{}
	var rep BatchReport
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(1), dlq.WithAttempts(store)})...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), raw)
	if err != nil || !slices.Equal(failures(t, out), pick(seqs, 1)) || !slices.Equal(dest.ids(), pick(seqs, 0)) {
		t.Fatalf("%s, %v; kept %v", out, err, dest.ids())
	}
}

// TestDeadLettersKafkaAndDynamoDBRaw: envelopes hold each record's bytes in
// the handler's order: Kafka's topic-partitions sorted, DynamoDB's array.
func TestDeadLettersKafkaAndDynamoDBRaw(t *testing.T) {
	kb := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/orders/1"}
	kb.Add("zeta", 1, nil, payload("z0", "ok"))
	kb.Add("alpha", 0, []byte("k"), payload("a0", "ok"))
	kb.Add("zeta", 1, nil, payload("z1", "permanent"))
	kb.Add("alpha", 0, nil, payload("a1", "permanent"))
	kev := kb.Event()
	raw, err := sevents.MarshalEvent(kev)
	if err != nil {
		t.Fatal(err)
	}
	dest := &sink{}
	var rep BatchReport
	h, err := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error { return act(r.Value.Action) }, dlOpts(&rep, dest, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), raw); err != nil {
		t.Fatalf("%s, %v", out, err)
	}
	if len(dest.got) != 2 {
		t.Fatalf("kept %v", dest.ids())
	}
	// Each partition sends its own quarantine, partitions concurrently:
	// the destination's order across them is not the event's.
	slices.SortFunc(dest.got, func(a, b *dlq.Envelope) int { return strings.Compare(a.Topic, b.Topic) })
	for k, want := range []struct {
		topic string
		part  int64
		idx   int
	}{{"alpha", 0, 1}, {"zeta", 1, 1}} {
		e := dest.got[k]
		rec := kev.Records[fmt.Sprintf("%s-%d", want.topic, want.part)][want.idx]
		b, _ := json.Marshal(rec)
		if string(e.Record) != string(b) || e.Topic != want.topic || *e.Partition != want.part || *e.Offset != rec.Offset ||
			e.SourceARN != kb.EventSourceARN || e.RecordID != fmt.Sprintf("%s-%d@%d", want.topic, want.part, rec.Offset) ||
			e.EventID != fmt.Sprintf("%s-%d-%d", want.topic, want.part, rec.Offset) {
			t.Errorf("envelope %d: %+v\nrecord %s", k, e, e.Record)
		}
	}

	db := &sevents.DynamoDBBuilder{}
	for i, a := range []string{"ok", "permanent"} {
		if err := db.Insert(map[string]any{"pk": fmt.Sprint(i)}, map[string]any{"pk": fmt.Sprint(i), "payload": string(payload(fmt.Sprint(i), a))}); err != nil {
			t.Fatal(err)
		}
	}
	dev := db.Event()
	draw, _ := sevents.MarshalEvent(dev)
	ddest := &sink{}
	hd, err := NewDynamoDB(func(ctx context.Context, r DynamoDBRecord[struct {
		Payload string `dynamodbav:"payload"`
	}]) error {
		var m msg
		json.Unmarshal([]byte(r.New.Payload), &m)
		return act(m.Action)
	}, dlOpts(&rep, ddest, nil)...)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := hd.Invoke(context.Background(), draw); err != nil || len(failures(t, out)) != 0 {
		t.Fatalf("%s, %v", out, err)
	}
	want := recordsOf(t, dev.Records)
	if len(ddest.got) != 1 || string(ddest.got[0].Record) != want[1] || ddest.got[0].Source != "dynamodb" ||
		ddest.got[0].PartitionKey != `{"pk":{"S":"1"}}` || ddest.got[0].SequenceNumber != dev.Records[1].Change.SequenceNumber {
		t.Fatalf("dynamodb envelope %+v", ddest.got)
	}
}

func TestDeadLettersOptions(t *testing.T) {
	fn := func(context.Context, KinesisRecord[msg]) error { return nil }
	for name, o := range map[string][]Option{
		"nil destination":          {WithDeadLetters(nil)},
		"bad limit":                {WithDeadLetters(&sink{}, dlq.WithMaxAttempts(0))},
		"stream limit needs store": {WithDeadLetters(&sink{}, dlq.WithMaxAttempts(3))},
		"nil store":                {WithDeadLetters(&sink{}, dlq.WithAttempts(nil))},
	} {
		if _, err := NewKinesis(fn, append(quiet(), o...)...); err == nil {
			t.Errorf("%s: NewKinesis succeeded", name)
		}
	}
	// An SQS handler takes a store: FIFO batches count failures there.
	if _, err := NewSQS(func(context.Context, SQSRecord[msg]) error { return nil },
		append(quiet(), WithDeadLetters(&sink{}, dlq.WithAttempts(dlq.NewMemory(0))))...); err != nil {
		t.Errorf("an SQS handler refused an attempts store: %v", err)
	}
	if _, err := NewKinesis(fn, append(quiet(), WithDeadLetters(&sink{}, dlq.WithMaxAttempts(3), dlq.WithAttempts(dlq.NewMemory(0))))...); err != nil {
		t.Errorf("a valid configuration: %v", err)
	}
}

// seqsUpTo is the test ids "0".."i" of the records a shard ran up to i.
func seqsUpTo(i int) []string {
	out := []string{}
	for k := 0; k <= i; k++ {
		out = append(out, fmt.Sprint(k))
	}
	return out
}

// TestDeadLettersStandardSQSBatchesSends: on a standard queue the batch's
// quarantines go in one send after every record ran; when it fails, each
// is reported with a QuarantineError and every other record succeeded.
func TestDeadLettersStandardSQSBatchesSends(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "permanent"}, [2]string{"", "ok"}, [2]string{"", "permanent"}, [2]string{"", "ok"})
	for _, tc := range []struct {
		name     string
		dest     *sink
		reported []int
	}{
		{"accepted", &sink{}, nil},
		{"fails", &sink{fail: errors.New("queue is gone")}, []int{0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			var rep BatchReport
			h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
				rec.add(r.Value.ID)
				return act(r.Value.Action)
			}, dlOpts(&rep, tc.dest, nil, WithConcurrency(1))...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := failures(t, out); !slices.Equal(got, pick(ids, tc.reported...)) {
				t.Fatalf("reported %v, want %v", got, pick(ids, tc.reported...))
			}
			if tc.dest.calls != 1 || len(rec.seen) != 4 {
				t.Fatalf("%d sends, ran %v: want one send after all four records", tc.dest.calls, rec.seen)
			}
			for _, i := range tc.reported {
				var qe *QuarantineError
				if !errors.As(rep.Records[i].Err, &qe) {
					t.Errorf("record %d: %+v, want a QuarantineError", i, rep.Records[i])
				}
			}
		})
	}
}

// TestDeadLettersOrderedLanes: on every ordered source a record whose
// quarantine failed is reported and its lane stops there: SQS FIFO (all
// later messages, or with skip-group the later ones of its group), Kafka
// (its partition), Kinesis with key concurrency (its partition key, and
// nothing above it). A record whose quarantine succeeded lets its lane go
// on.
func TestDeadLettersOrderedLanes(t *testing.T) {
	// Two lanes a and b: a0 ok, a1 permanent (its send fails), a2 ok; b0 ok,
	// b1 ok. In batch order a0 b0 a1 b1 a2.
	type result struct{ ran, reported string }
	down := func() *sink { return &sink{fail: errors.New("queue is gone")} }
	t.Run("sqs-fifo", func(t *testing.T) {
		raw, ids := sqsEvent(t, true, [2]string{"a", "ok"}, [2]string{"b", "ok"}, [2]string{"a", "permanent"}, [2]string{"b", "ok"}, [2]string{"a", "ok"})
		for _, tc := range []struct {
			skip bool
			want result
		}{
			{false, result{"[0 1 2]", fmt.Sprint(pick(ids, 2, 3, 4))}},
			{true, result{"[0 1 2 3]", fmt.Sprint(pick(ids, 2, 4))}},
		} {
			var rec recorder
			var rep BatchReport
			extra := []Option{}
			if tc.skip {
				extra = append(extra, WithSkipGroupOnFailure())
			}
			h, err := NewSQSFIFO(func(ctx context.Context, r SQSRecord[msg]) error {
				rec.add(r.Value.ID)
				return act(r.Value.Action)
			}, dlOpts(&rep, down(), nil, extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Invoke(context.Background(), raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := (result{fmt.Sprint(rec.seen), fmt.Sprint(failures(t, out))}); got != tc.want {
				t.Errorf("skip-group %v: ran %s reported %s, want %+v", tc.skip, got.ran, got.reported, tc.want)
			}
		}
	})
	t.Run("kafka", func(t *testing.T) {
		b := &sevents.KafkaBuilder{EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/demo/1"}
		for i, a := range []string{"ok", "ok", "permanent", "ok", "ok"} {
			b.Add("orders", int64(i%2), nil, payload(fmt.Sprint(i), a))
		}
		raw, err := sevents.MarshalEvent(b.Event())
		if err != nil {
			t.Fatal(err)
		}
		var rec recorder
		var rep BatchReport
		h, err := NewKafka(func(ctx context.Context, r KafkaRecord[msg]) error {
			rec.add(r.Value.ID)
			return act(r.Value.Action)
		}, dlOpts(&rep, down(), nil, WithConcurrency(1))...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Invoke(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
		ran := slices.Clone(rec.seen)
		slices.Sort(ran)
		if fmt.Sprint(ran) != "[0 1 2 3]" {
			t.Errorf("ran %v: want partition 0 stopped at record 2 (4 never ran), partition 1 whole", rec.seen)
		}
		n := 0
		for _, r := range rep.Records {
			var qe *QuarantineError
			if errors.As(r.Err, &qe) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d records failed with a QuarantineError, want 1 (record 2): %+v", n, rep.Records)
		}
	})
	t.Run("kinesis-per-key", func(t *testing.T) {
		b := &sevents.KinesisBuilder{}
		for i, a := range []string{"ok", "ok", "permanent", "ok", "ok"} {
			b.Add([]string{"a", "b"}[i%2], payload(fmt.Sprint(i), a))
		}
		raw, _ := json.Marshal(b.Event())
		var rec recorder
		var rep BatchReport
		h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error {
			rec.add(r.Value.ID)
			return act(r.Value.Action)
		}, dlOpts(&rep, down(), nil, WithKeyConcurrency(1))...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := failures(t, out); len(got) != 1 || got[0] != b.Event().Records[2].Kinesis.SequenceNumber {
			t.Errorf("reported %v, want record 2", got)
		}
		if slices.Contains(rec.seen, "4") {
			t.Errorf("ran %v: record 4 comes after record 2 in its partition key", rec.seen)
		}
	})
}

// TestFIFOAttemptsCountRuns: a FIFO message that waited behind a failing
// message of its group has a high ApproximateReceiveCount but never ran; it
// is quarantined for attempts only after it ran and failed the limit's
// number of times.
func TestFIFOAttemptsCountRuns(t *testing.T) {
	b := &sevents.SQSBuilder{QueueARN: "arn:aws:sqs:us-east-1:123456789012:orders.fifo"}
	b.AddFIFO(string(payload("m", "fail")), "g", "")
	ev := b.Event()
	store := &attemptsCounter{AttemptsStore: dlq.NewMemory(0)}
	dest := &sink{}
	var rep BatchReport
	h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error { return act(r.Value.Action) },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(3), dlq.WithAttempts(store)})...)
	if err != nil {
		t.Fatal(err)
	}
	// Its third receive (two spent waiting) is its first run; it is
	// quarantined on its third failure, the fifth receive.
	for receive := 3; receive <= 5; receive++ {
		ev.Records[0].Attributes["ApproximateReceiveCount"] = fmt.Sprint(receive)
		raw, _ := sevents.MarshalEvent(ev)
		out, err := h.Invoke(context.Background(), raw)
		quarantined := receive == 5
		if quarantined && (err != nil || len(failures(t, out)) != 0) || !quarantined && err == nil {
			t.Fatalf("receive %d: %s, %v (quarantined: %v)", receive, out, err, len(dest.got) > 0)
		}
	}
	if len(dest.got) != 1 || dest.got[0].Attempts != 3 || dest.got[0].Reason != dlq.ReasonAttempts {
		t.Fatalf("quarantined %+v", dest.got)
	}
	if store.fails != 3 || store.begins != 0 {
		t.Fatalf("store: %d Fail, %d Begin; want 3 and 0", store.fails, store.begins)
	}
	// A healthy FIFO batch costs no request.
	ok := &sevents.SQSBuilder{QueueARN: b.QueueARN}
	ok.AddFIFO(string(payload("n", "ok")), "g", "")
	raw, _ := sevents.MarshalEvent(ok.Event())
	if _, err := h.Invoke(context.Background(), raw); err != nil || store.fails != 3 {
		t.Fatalf("healthy batch: %v, %d Fail", err, store.fails)
	}
}

// TestKinesisAttemptsKeyedByShard: two shards may carry the same sequence
// number; their records' attempts are counted apart.
func TestKinesisAttemptsKeyedByShard(t *testing.T) {
	store := dlq.NewMemory(0)
	dest := &sink{}
	var rep BatchReport
	h, err := NewKinesis(func(ctx context.Context, r KinesisRecord[msg]) error { return act(r.Value.Action) },
		dlOpts(&rep, dest, []dlq.Option{dlq.WithMaxAttempts(2), dlq.WithAttempts(store)})...)
	if err != nil {
		t.Fatal(err)
	}
	for _, shard := range []string{"shardId-000000000000", "shardId-000000000001"} {
		b := &sevents.KinesisBuilder{StreamARN: "arn:aws:kinesis:us-east-1:123456789012:stream/orders", ShardID: shard}
		b.Add("pk", payload("x", "ok"))
		b.Add("pk", payload("y", "fail"))
		ev := b.Event()
		raw, _ := json.Marshal(ev)
		out, err := h.Invoke(context.Background(), raw)
		if err != nil || !slices.Equal(failures(t, out), []string{ev.Records[1].Kinesis.SequenceNumber}) {
			t.Fatalf("%s: %s, %v (quarantined %v): its first failure", shard, out, err, dest.ids())
		}
	}
}
