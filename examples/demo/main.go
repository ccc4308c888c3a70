// Command demo runs an order-processing function, wrapped by Sluice, over a
// sample Kinesis batch and the same orders as an SQS batch, and shows what
// happened to each record and what the function answers Lambda.
//
//	go run ./examples/demo                      both embedded samples
//	go run ./examples/demo -source sqs -event my-sqs-event.json
//
// The samples hold eight orders: most succeed, one hits a transient payment
// gateway error (retried in process), one has a negative amount (a permanent
// error), one is not JSON, and one makes the function panic. With both
// samples, a third part delivers the SQS batch twice (SQS is at-least-once)
// to a function with idempotency and dead letters on: no order is charged
// twice, and the poison messages are quarantined with their records.
//
// With OpenTelemetry's environment set (OTEL_EXPORTER_OTLP_ENDPOINT and
// the rest; package tracing, FromEnv), every batch is traced too: a batch
// span and a span per record, exported over OTLP before each batch answers.
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=demo go run ./examples/demo
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/tracing"
)

//go:embed testdata/orders-kinesis.json
var kinesisSample []byte

//go:embed testdata/orders-sqs.json
var sqsSample []byte

// Order is the record payload.
type Order struct {
	OrderID  string  `json:"orderId"`
	Customer string  `json:"customer"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// payments is the demo's side effect: it charges orders, and its gateway
// times out on the first attempt for order ord-1003.
type payments struct {
	mu       sync.Mutex
	attempts map[string]int
	notes    map[string]string // per order: what happened
	charges  map[string]int    // per order: successful charges
	accounts map[string]string
}

func newPayments() *payments {
	return &payments{attempts: map[string]int{}, notes: map[string]string{}, charges: map[string]int{},
		accounts: map[string]string{"alice": "acct-1", "bob": "acct-2", "carol": "acct-3"}}
}

// charge is the business logic the user writes: one order at a time.
func (p *payments) charge(ctx context.Context, o Order) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts[o.OrderID]++
	if o.Amount <= 0 {
		return batch.Permanent(fmt.Errorf("order %s: amount %.2f is not positive", o.OrderID, o.Amount))
	}
	if o.OrderID == "ord-1003" && p.attempts[o.OrderID] == 1 {
		return batch.Transient(errors.New("payment gateway timed out"))
	}
	acct := p.accounts[o.Customer]
	if acct == "" {
		var missing *struct{ ID string }
		_ = missing.ID // a bug: an unknown customer dereferences nil
	}
	note := fmt.Sprintf("charged %.2f %s to %s", o.Amount, o.Currency, acct)
	if n := p.attempts[o.OrderID]; n > 1 {
		note += fmt.Sprintf(" (attempt %d)", n)
	}
	p.notes[o.OrderID] = note
	p.charges[o.OrderID]++
	return nil
}

func main() {
	source := flag.String("source", "all", "kinesis, sqs or all")
	eventPath := flag.String("event", "", "a Lambda event file to use instead of the embedded sample (needs -source)")
	flag.Parse()
	tr, err := tracing.FromEnv(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if err := run(os.Stdout, *source, *eventPath, tr.Options()...); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if tr.Enabled() {
		fmt.Println("\ntraces: each batch's spans were exported before it answered (service " + or(os.Getenv(tracing.EnvServiceName), "sluice") + ")")
	}
	_ = tr.Shutdown(context.Background())
}

// run runs the demo; extra are options every handler takes (tracing).
func run(w io.Writer, source, eventPath string, extra ...handlers.Option) error {
	sources := []string{"kinesis", "sqs"}
	switch {
	case source == "all" && eventPath != "":
		return errors.New("-event needs -source kinesis or -source sqs")
	case source == "all":
	case source == "kinesis" || source == "sqs":
		sources = []string{source}
	default:
		return fmt.Errorf("-source %q: want kinesis, sqs or all", source)
	}
	for i, s := range sources {
		event := map[string][]byte{"kinesis": kinesisSample, "sqs": sqsSample}[s]
		if eventPath != "" {
			b, err := os.ReadFile(eventPath)
			if err != nil {
				return err
			}
			event = b
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := demo(w, s, event, extra...); err != nil {
			return err
		}
	}
	if source == "all" {
		fmt.Fprintln(w)
		return twice(w, sqsSample, extra...)
	}
	return nil
}

// deadLetters is a dlq.Destination in memory (a deployed function uses an
// SQS queue: dlq/sqsdest).
type deadLetters struct {
	mu   sync.Mutex
	envs []*dlq.Envelope
}

func (d *deadLetters) Send(_ context.Context, envs []*dlq.Envelope) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.envs = append(d.envs, envs...)
	return nil
}

// twice delivers the SQS batch two times to one function with idempotency
// (an in-memory store; DynamoDB when deployed) and dead letters on.
func twice(w io.Writer, event []byte, extra ...handlers.Option) error {
	fmt.Fprintln(w, "== SQS again, delivered twice (SQS is at-least-once), with WithIdempotency and WithDeadLetters")
	p := newPayments()
	dead := &deadLetters{}
	var rep handlers.BatchReport
	orders := map[string]string{}
	var mu sync.Mutex
	opts := []handlers.Option{
		handlers.WithLogger(slog.New(slog.DiscardHandler)),
		handlers.WithOnBatch(func(ctx context.Context, r handlers.BatchReport) { rep = r }),
		handlers.WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(10 * time.Millisecond)}),
		handlers.WithConcurrency(1),
		handlers.WithIdempotency(idempotency.NewMemoryStore()),
		handlers.WithDeadLetters(dead, dlq.WithMaxAttempts(3)),
	}
	h, err := handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[Order]) error {
		mu.Lock()
		orders[r.MessageID()] = r.Value.OrderID
		mu.Unlock()
		return p.charge(ctx, r.Value)
	}, append(opts, extra...)...)
	if err != nil {
		return err
	}
	var out []byte
	for range 2 {
		if out, err = h.Invoke(context.Background(), event); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\trecord\torder\tsecond delivery\tdetail")
	for i, rec := range rep.Records {
		order := orders[rec.ID]
		what, detail := fate("sqs", rec), p.notes[order]
		switch {
		case rec.Duplicate:
			what, detail = "skipped: its effect already happened", "still "+detail+", once"
		case rec.Quarantined:
			what, detail = "quarantined: sent to the dead-letter queue", "the message is deleted; its record waits for sluice redrive"
		case rec.Outcome == batch.Failed:
			detail = firstLine(rec.Err.Error())
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, short(rec.ID), or(order, "-"), what, detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "answer to Lambda: %s\n", out)
	once := "each once"
	for order, n := range p.charges {
		if n != 1 {
			once = fmt.Sprintf("but %s %d times", order, n)
		}
	}
	fmt.Fprintf(w, "after two deliveries: %d orders charged, %s; %d duplicates skipped on the second delivery.\n", len(p.charges), once, rep.Duplicates)
	fmt.Fprintf(w, "%d dead letters, each holding the whole message (both poison messages came twice, so twice each; a redrive replays a record once):\n",
		len(dead.envs))
	for _, e := range dead.envs {
		fmt.Fprintf(w, "  %s  reason %s, attempts %d: %s\n", short(e.RecordID), e.Reason, e.Attempts, firstLine(e.Error))
	}
	return nil
}

func demo(w io.Writer, source string, event []byte, extra ...handlers.Option) error {
	p := newPayments()
	var rep handlers.BatchReport
	opts := []handlers.Option{
		handlers.WithLogger(slog.New(slog.DiscardHandler)), // the table below says it all
		handlers.WithOnBatch(func(ctx context.Context, r handlers.BatchReport) { rep = r }),
		handlers.WithRetry(batch.RetryPolicy{Retries: 2, Backoff: batch.Exponential(10 * time.Millisecond)}),
	}
	opts = append(opts, extra...)
	var h lambda.Handler
	var err error
	var orderOf func(id string) string
	ids := map[string]string{} // record id -> order id, as seen by the function
	var mu sync.Mutex
	see := func(rec, order string) { mu.Lock(); ids[rec] = order; mu.Unlock() }
	switch source {
	case "kinesis":
		fmt.Fprintln(w, "== Kinesis: one shard, records in order; the batch stops at the first failure")
		h, err = handlers.NewKinesis(func(ctx context.Context, r handlers.KinesisRecord[Order]) error {
			see(r.SequenceNumber(), r.Value.OrderID)
			return p.charge(ctx, r.Value)
		}, opts...)
	case "sqs":
		fmt.Fprintln(w, "== SQS standard queue: messages independent; every failure is reported")
		h, err = handlers.NewSQS(func(ctx context.Context, r handlers.SQSRecord[Order]) error {
			see(r.MessageID(), r.Value.OrderID)
			return p.charge(ctx, r.Value)
		}, append(opts, handlers.WithConcurrency(1))...)
	}
	if err != nil {
		return err
	}
	orderOf = func(id string) string { return ids[id] }

	out, invokeErr := h.Invoke(context.Background(), event)

	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\trecord\torder\twhat happened\tdetail")
	for i, rec := range rep.Records {
		order := orderOf(rec.ID)
		detail := p.notes[order]
		if rec.Outcome == batch.Failed {
			detail = firstLine(rec.Err.Error())
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, short(rec.ID), or(order, "-"), fate(source, rec), detail)
	}
	tw.Flush()
	if invokeErr != nil {
		fmt.Fprintf(w, "answer to Lambda: function error: %v\n", invokeErr)
		return nil
	}
	fmt.Fprintf(w, "answer to Lambda: %s\n", out)
	first, reported := -1, 0
	for i, rec := range rep.Records {
		if rec.Reported {
			reported++
			if first < 0 {
				first = i
			}
		}
	}
	switch source {
	case "kinesis":
		if first >= 0 {
			fmt.Fprintf(w, "Lambda next: checkpoints before record %d and redelivers records %d-%d; nothing is lost, and nothing after the failure ran twice.\n",
				first+1, first+1, len(rep.Records))
		}
	case "sqs":
		fmt.Fprintf(w, "Lambda next: deletes the %d processed messages; the %d reported ones return to the queue after the visibility timeout.\n",
			len(rep.Records)-reported, reported)
	}
	return nil
}

// fate says in plain words what became of a record and what happens next.
func fate(source string, rec handlers.RecordOutcome) string {
	switch rec.Outcome {
	case batch.Succeeded:
		if rec.Attempts > 1 {
			return fmt.Sprintf("succeeded on attempt %d", rec.Attempts)
		}
		return "succeeded"
	case batch.Failed:
		if batch.Classify(rec.Err) == batch.ClassPermanent {
			return "failed permanently: not retried in process"
		}
		return "failed: will be retried by Lambda"
	}
	switch {
	case errors.Is(rec.Err, batch.ErrDeadline):
		return "not attempted: too close to the deadline"
	case source == "kinesis":
		return "not attempted: Lambda redelivers it with the failed record"
	}
	return "not attempted: an earlier record of its order failed"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return s
}

// short abbreviates long sequence numbers and message ids for the table; the
// answer to Lambda shows them in full.
func short(id string) string {
	if len(id) > 16 {
		return "…" + id[len(id)-8:]
	}
	return id
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
