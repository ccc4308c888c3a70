package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sevents "github.com/sluicehq/sluice/events"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
	"github.com/sluicehq/sluice/localtest/source"
)

// On a real queue, messages that match no filter are deleted without an
// invocation, as Lambda deletes them, and reported filtered.
func TestAWSSQSFilterCriteria(t *testing.T) {
	t.Parallel()
	srv := servers.SQS(t)
	ctx := awsCtx(t, 45*time.Second)
	cfg := srv.AWSConfig()
	c := sqs.NewFromConfig(cfg)
	url, _ := awsCreateQueue(ctx, t, c, servers.UniqueName(t, "filter"), nil)
	for i := range 6 {
		typ := "order"
		if i%2 == 1 {
			typ = "noise"
		}
		body := fmt.Sprintf(`{"n":%d,"type":%q}`, i, typ)
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	var (
		mu   sync.Mutex
		seen []int
	)
	h := bytesFunc(func(_ context.Context, p []byte) ([]byte, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ev.Records {
			var b struct{ N int }
			if err := json.Unmarshal([]byte(m.Body), &b); err != nil {
				return nil, err
			}
			seen = append(seen, b.N)
		}
		return []byte(`{"batchItemFailures":[]}`), nil
	})
	m := &localtest.Mapping{EventSource: sevents.SourceSQS, FunctionResponseTypes: []string{"ReportBatchItemFailures"},
		FilterCriteria: &localtest.FilterCriteria{Filters: []localtest.Filter{{Pattern: `{"body":{"type":["order"]}}`}}}}
	rep, err := localtest.Run(ctx, localtest.Options{Mapping: m, Queue: source.SQSQueue(cfg, url), Invoker: localtest.InProcess(h)})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(seen); !slices.Equal(seen, []int{0, 2, 4}) {
		t.Fatalf("the function saw %v, want the orders 0, 2, 4", seen)
	}
	if rep.Totals.Records != 6 || rep.Totals.Filtered != 3 || rep.Totals.Processed != 3 || rep.QueueLeft != 0 || !rep.Held() {
		t.Fatalf("totals %+v, queue left %d, invariants %+v, stopped %q", rep.Totals, rep.QueueLeft, rep.Invariants, rep.Stopped)
	}
	if left, dl := awsCounts(ctx, t, source.SQSQueue(cfg, url)); left != 0 || dl != 0 {
		t.Fatalf("the filtered messages must be deleted: Counts %d, %d", left, dl)
	}
}
