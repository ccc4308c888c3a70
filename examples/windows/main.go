// Command windows counts and sums orders per customer over five-minute
// tumbling windows of a Kinesis stream, with Sluice's typed window handler:
// the aggregate travels in Lambda's window state between invokes, and the
// final invoke of each window writes it once.
//
// Run it on your laptop, through the local runner (an emulated stream of
// 3,000 orders, a mapping with TumblingWindowInSeconds 300, one bad order,
// and the answer of the first final invoke lost, as a timeout would lose
// it):
//
//	go run ./examples/windows
//	go run ./examples/windows -window-seconds 1   several windows
//
// The emulated stream's orders arrive a millisecond apart, so 3,000 of them
// fill one five-minute window (two when they straddle a boundary);
// -window-seconds 1 shows the state of several windows.
//
// Deployed, the same binary is the Lambda function (the runtime sets
// AWS_LAMBDA_RUNTIME_API); build it as Lambda runs Go:
//
//	CGO_ENABLED=0 GOOS=linux go build -tags lambda.norpc -o bootstrap ./examples/windows
//
// and give its Kinesis event source mapping TumblingWindowInSeconds 300 and
// ReportBatchItemFailures. Each window's totals are written as one JSON line
// per customer to standard output (put your table write there). With
// SLUICE_IDEMPOTENCY_TABLE set (sluice tables create --idempotency NAME)
// a retried final invoke does not write a window twice.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"text/tabwriter"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/handlers"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/localtest"
)

// Order is the record payload.
type Order struct {
	OrderID  string `json:"orderId"`
	Customer string `json:"customer"`
	Cents    int64  `json:"cents"`
}

// Totals is the aggregate of one window: per customer, how many orders and
// how much they came to.
type Totals struct {
	Customers map[string]Total `json:"c"`
}

// Total is one customer's share of a window.
type Total struct {
	Orders int   `json:"n"`
	Cents  int64 `json:"s"`
}

// fold adds one order to the window's totals. It must not do anything but
// compute: Lambda and Sluice may fold a record again.
func fold(_ context.Context, t Totals, r handlers.KinesisRecord[Order]) (Totals, error) {
	o := r.Value
	if o.Customer == "" || o.Cents < 0 {
		return t, batch.Permanent(fmt.Errorf("order %q: no customer or a negative amount", o.OrderID))
	}
	if t.Customers == nil {
		t.Customers = map[string]Total{}
	}
	c := t.Customers[o.Customer]
	c.Orders++
	c.Cents += o.Cents
	t.Customers[o.Customer] = c
	return t, nil
}

// Row is one customer's line of a closed window.
type Row struct {
	WindowStart string `json:"windowStart"`
	Shard       string `json:"shard"`
	Customer    string `json:"customer"`
	Orders      int    `json:"orders"`
	Cents       int64  `json:"cents"`
}

// sink receives the rows of each closed window.
type sink func(ctx context.Context, rows []Row) error

// final writes a closed window's totals, one row per customer.
func final(write sink) func(ctx context.Context, w handlers.Window, t Totals) error {
	return func(ctx context.Context, w handlers.Window, t Totals) error {
		names := slices.Sorted(func(yield func(string) bool) {
			for c := range t.Customers {
				if !yield(c) {
					return
				}
			}
		})
		rows := make([]Row, 0, len(names))
		for _, c := range names {
			rows = append(rows, Row{WindowStart: w.Start.UTC().Format("15:04:05"), Shard: w.ShardID, Customer: c,
				Orders: t.Customers[c].Orders, Cents: t.Customers[c].Cents})
		}
		return write(ctx, rows)
	}
}

func newHandler(write sink, opts ...handlers.Option) (*handlers.KinesisWindowHandler[Order, Totals], error) {
	return handlers.NewKinesisWindow(fold, final(write), opts...)
}

func main() {
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambdaMain()
		return
	}
	orders := flag.Int("orders", 3000, "how many orders the emulated stream holds")
	window := flag.Int("window-seconds", 300, "TumblingWindowInSeconds of the mapping (1-900)")
	flag.Parse()
	if err := local(context.Background(), os.Stdout, *orders, *window); err != nil {
		fmt.Fprintln(os.Stderr, "windows:", err)
		os.Exit(1)
	}
}

func lambdaMain() {
	var opts []handlers.Option
	if table := os.Getenv("SLUICE_IDEMPOTENCY_TABLE"); table != "" {
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "windows: loading the AWS configuration:", err)
			os.Exit(2)
		}
		store, err := dynamodbstore.New(dynamodb.NewFromConfig(cfg), table)
		if err != nil {
			fmt.Fprintln(os.Stderr, "windows:", err)
			os.Exit(2)
		}
		opts = append(opts, handlers.WithWindowIdempotency(store))
	}
	enc := json.NewEncoder(os.Stdout)
	h := must(newHandler(func(_ context.Context, rows []Row) error {
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}, opts...))
	lambda.Start(h)
}

func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "windows:", err)
		os.Exit(2)
	}
	return v
}

// local runs the handler through Sluice's local runner over n orders and
// prints each window's totals.
func local(ctx context.Context, out io.Writer, n, window int) error {
	rows, writes, rep, err := runLocal(ctx, n, window)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window start\tshard\tcustomer\torders\tamount\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d.%02d\t\n", r.WindowStart, r.Shard, r.Customer, r.Orders, r.Cents/100, r.Cents%100)
	}
	tw.Flush()
	t := rep.Totals
	fmt.Fprintf(out, "\n%d orders, %d invocations (%d partial failures, %d function errors, %d bisections), %d order given up on; windows written: %d, each once\n",
		t.Records, t.Invocations, t.PartialFailures, t.FunctionErrors, t.Bisections, t.OnFailure, writes)
	return nil
}

// runLocal runs the handler over n emulated orders, with TumblingWindowInSeconds
// window, and returns the rows written and how many times a window was
// written.
func runLocal(ctx context.Context, n, window int) ([]Row, int, *localtest.Report, error) {
	var mu sync.Mutex
	var rows []Row
	writes := 0
	h, err := newHandler(func(_ context.Context, rs []Row) error {
		mu.Lock()
		defer mu.Unlock()
		rows = append(rows, rs...)
		writes++
		return nil
	}, handlers.WithWindowIdempotency(idempotency.NewMemoryStore()), handlers.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, 0, nil, err
	}
	customers := []string{"alice", "bob", "carol", "dave"}
	recs := make([]localtest.InputRecord, n)
	for i := range recs {
		o := Order{OrderID: fmt.Sprintf("ord-%05d", i+1), Customer: customers[i%len(customers)], Cents: int64(100 + i%900)}
		if i == 1234 {
			o.Cents = -5 // a bad order: fails, is retried, isolated by bisection, then given up on
		}
		data, _ := json.Marshal(o)
		recs[i] = localtest.InputRecord{PartitionKey: o.Customer, Data: data}
	}
	size, retries, bisect := 100, 2, true
	rep, err := localtest.Run(ctx, localtest.Options{
		Mapping: &localtest.Mapping{EventSource: events.SourceKinesis, StartingPosition: "TRIM_HORIZON", BatchSize: &size,
			TumblingWindowInSeconds: &window, MaximumRetryAttempts: &retries, BisectBatchOnFunctionError: &bisect,
			FunctionResponseTypes: []string{"ReportBatchItemFailures"}},
		Records: recs,
		Invoker: localtest.InProcess(&loseFirstFinalAnswer{h: h}),
	})
	return rows, writes, rep, err
}

// loseFirstFinalAnswer loses the answer of the first final invoke, as a
// timeout would after the window was written: Lambda retries it, and the
// idempotent final does not write the window again.
type loseFirstFinalAnswer struct {
	h    localtest.BytesHandler
	lost bool
}

func (l *loseFirstFinalAnswer) Invoke(ctx context.Context, p []byte) ([]byte, error) {
	out, err := l.h.Invoke(ctx, p)
	var ev struct {
		Final bool `json:"isFinalInvokeForWindow"`
	}
	if json.Unmarshal(p, &ev) == nil && ev.Final && !l.lost {
		l.lost = true
		return nil, errors.New("the answer was lost")
	}
	return out, err
}
