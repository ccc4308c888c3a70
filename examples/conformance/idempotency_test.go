package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// idemFunction starts the compiled conformance function under RIE with
// idempotency on table (DynamoDB Local at srv), its effects going to
// effects and its log lines in JSON; extra adds environment variables.
func idemFunction(t *testing.T, bin string, srv *servers.Server, table, effects string, extra ...string) *rie.Function {
	t.Helper()
	opts := []rie.Option{
		rie.Env("SLUICE_SOURCE", "sqs"), rie.Env("SLUICE_EFFECTS_FILE", effects),
		rie.Env("SLUICE_IDEMPOTENCY_TABLE", table), rie.Env("AWS_LAMBDA_FUNCTION_NAME", "conformance"),
		rie.Env("AWS_ENDPOINT_URL_DYNAMODB", srv.Endpoint), rie.Env("AWS_REGION", servers.Region),
		rie.Env("AWS_ACCESS_KEY_ID", servers.AccessKeyID), rie.Env("AWS_SECRET_ACCESS_KEY", servers.SecretAccessKey),
		rie.Env("AWS_CONFIG_FILE", os.DevNull), rie.Env("AWS_SHARED_CREDENTIALS_FILE", os.DevNull),
		rie.Env("AWS_LAMBDA_LOG_FORMAT", "JSON"), rie.Timeout(60 * time.Second),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		opts = append(opts, rie.Env(extra[i], extra[i+1]))
	}
	return rie.Start(t, bin, opts...)
}

func idemTable(t *testing.T, srv *servers.Server) (*dynamodb.Client, string) {
	t.Helper()
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	table := servers.UniqueName(t, "idem")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	return db, table
}

// failedRecords reads the function's "record failed" log lines: the error
// of each failed record, by message id.
func failedRecords(t *testing.T, logs string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(logs, "\n") {
		i := strings.IndexByte(line, '{')
		if i < 0 || !strings.Contains(line, "sluice: record failed") {
			continue
		}
		var l struct{ Msg, Record, Error string }
		if err := json.Unmarshal([]byte(line[i:]), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Msg == "sluice: record failed" {
			out[l.Record] = l.Error
		}
	}
	return out
}

func effectCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, e := range readEffects(t, path) {
		n[e.Record]++
	}
	return n
}

// countStatus scans table for items of status.
func countStatus(ctx context.Context, db *dynamodb.Client, table, status string) (int, error) {
	n := 0
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{
		TableName: aws.String(table), Select: types.SelectCount,
		FilterExpression:          aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": dynamodbstore.AttrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: status}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += int(page.Count)
	}
	return n, nil
}

// waitFor polls cond every 10 ms until it holds; it fails the test if cond
// fails or ctx ends first (a bound for a broken run, not a timed assertion).
// batchLogs returns fn's output once it holds the batch's summary line,
// which the handler writes after every record's line: the output reaches
// the test through the emulator's pipe, after the invocation's answer.
func batchLogs(ctx context.Context, t *testing.T, fn *rie.Function) string {
	t.Helper()
	var logs string
	waitFor(ctx, t, "the batch's log lines", func() (bool, error) {
		logs = fn.Logs()
		return strings.Contains(logs, `"msg":"sluice: batch done"`), nil
	})
	return logs
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

type invokeResult struct {
	out []byte
	err error
}

func invokeAsync(ctx context.Context, fn *rie.Function, raw []byte) <-chan invokeResult {
	ch := make(chan invokeResult, 1)
	go func() {
		out, err := fn.Invoke(ctx, raw)
		ch <- invokeResult{out, err}
	}()
	return ch
}

// Two invocations of the compiled function run the same 1,000-message SQS
// batch at the same time, in two runtime processes on one table: every
// message takes effect exactly once. Each message's effect is in exactly
// one of the two effects files; the other invocation found it completed (a
// duplicate) or reports it failed with idempotency.ErrInProgress, and never
// for another reason. A message both report is not lost: a third
// invocation over the whole batch runs it, and afterwards every message has
// exactly one effect.
//
// Every record first waits at a gate (the await action) that opens only
// once 16 claims are in progress, which two processes of 8 concurrent
// records each reach only when both hold 8: so both really run at once.
func TestTwoInvocationsAtOnceEveryEffectOnce(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	srv := servers.DynamoDB(t)
	db, table := idemTable(t, srv)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	const n = 1000
	b := &sevents.SQSBuilder{}
	for i := range n {
		b.Add(string(cmd(fmt.Sprintf("m%d", i), "await:"+gate)))
	}
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	effA, effB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	fa := idemFunction(t, bin, srv, table, effA)
	fb := idemFunction(t, bin, srv, table, effB)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ra, rb := invokeAsync(ctx, fa, raw), invokeAsync(ctx, fb, raw)
	waitFor(ctx, t, "16 claims in progress", func() (bool, error) {
		c, err := countStatus(ctx, db, table, "INPROGRESS")
		return c >= 16, err
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a, bb := <-ra, <-rb
	if a.err != nil || bb.err != nil {
		t.Fatalf("invocations: %v; %v", a.err, bb.err)
	}
	repA, repB := setOf(reported(t, "sqs", a.out)), setOf(reported(t, "sqs", bb.out))
	failA, failB := failedRecords(t, batchLogs(ctx, t, fa)), failedRecords(t, batchLogs(ctx, t, fb))
	cntA, cntB := effectCounts(t, effA), effectCounts(t, effB)

	var both []string
	dupA, dupB := 0, 0
	for _, r := range ev.Records {
		id := r.MessageId
		ca, cb := cntA[id], cntB[id]
		if ca+cb > 1 {
			t.Errorf("message %s took effect %d times (a %d, b %d)", id, ca+cb, ca, cb)
		}
		for _, side := range []struct {
			name     string
			effects  int
			reported map[string]bool
			failed   map[string]string
			dup      *int
		}{{"a", ca, repA, failA, &dupA}, {"b", cb, repB, failB, &dupB}} {
			switch {
			case side.effects > 0 && side.reported[id]:
				t.Errorf("invocation %s ran message %s and reported it failed: %s", side.name, id, side.failed[id])
			case side.reported[id] && !errors.Is(errorFromLog(side.failed[id]), idempotency.ErrInProgress):
				t.Errorf("invocation %s reported message %s, not for ErrInProgress: %q", side.name, id, side.failed[id])
			case side.effects == 0 && !side.reported[id] && ca+cb > 0:
				*side.dup++ // found it completed
			case side.effects == 0 && !side.reported[id]:
				t.Errorf("invocation %s neither ran nor reported message %s, and nobody ran it: lost", side.name, id)
			}
		}
		if repA[id] && repB[id] {
			both = append(both, id)
		}
	}
	inA, inB := len(cntA), len(cntB)
	t.Logf("a ran %d, reported %d, found %d completed; b ran %d, reported %d, found %d completed; reported by both: %d",
		inA, len(repA), dupA, inB, len(repB), dupB, len(both))
	if inA < 8 || inB < 8 {
		t.Fatalf("both invocations must have run at least the 8 records they held at the gate: a %d, b %d", inA, inB)
	}

	// Lambda delivers what was reported again: a third invocation over the
	// whole batch runs exactly the messages nobody ran.
	out, err := fa.Invoke(ctx, raw)
	if err != nil || len(reported(t, "sqs", out)) != 0 {
		t.Fatalf("redelivery: %s %v", out, err)
	}
	cntA = effectCounts(t, effA)
	for _, r := range ev.Records {
		if c := cntA[r.MessageId] + cntB[r.MessageId]; c != 1 {
			t.Errorf("after the redelivery, message %s took effect %d times", r.MessageId, c)
		}
	}
	if got, err := countStatus(ctx, db, table, "COMPLETED"); err != nil || got != n {
		t.Fatalf("completed records in the table: %d (%v), want %d", got, err, n)
	}
}

// errorFromLog turns a logged error message back into a sentinel, for
// errors.Is: the message ends with the sentinel's text when it wraps it.
func errorFromLog(msg string) error {
	for _, s := range []error{idempotency.ErrInProgress, idempotency.ErrLeaseLost} {
		if strings.HasSuffix(msg, s.Error()) {
			return fmt.Errorf("%s%w", strings.TrimSuffix(msg, s.Error()), s)
		}
	}
	return errors.New(msg)
}

func setOf(ids []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// A claim whose lease ran out mid-record is taken by another invocation;
// the stale owner's record still finishes its effect, but cannot complete:
// it reports the record failed with idempotency.ErrLeaseLost, and the new
// owner's record (its owner token, then COMPLETED) stays intact. The lease
// is fixed at 1 s (SLUICE_IDEMPOTENCY_LEASE); the await action holds both
// invocations mid-record until the new owner's claim is in the table, so
// the order of events is fixed, not a matter of timing.
func TestLeaseExpiryStaleOwnerCannotComplete(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	srv := servers.DynamoDB(t)
	db, table := idemTable(t, srv)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	b := &sevents.SQSBuilder{}
	b.Add(string(cmd("m0", "await:"+gate)))
	b.Add(string(cmd("m1", "ok"))) // a batch where nothing succeeds is a function error
	ev := b.Event()
	raw, err := sevents.MarshalEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	id := ev.Records[0].MessageId
	key := "conformance#" + id
	effA, effB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	fa := idemFunction(t, bin, srv, table, effA, "SLUICE_IDEMPOTENCY_LEASE", "1s")
	fb := idemFunction(t, bin, srv, table, effB, "SLUICE_IDEMPOTENCY_LEASE", "1s")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	item := func() (map[string]types.AttributeValue, error) {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamodbstore.DefaultPartitionKey: &types.AttributeValueMemberS{Value: key}}})
		if err != nil {
			return nil, err
		}
		return out.Item, nil
	}
	attr := func(it map[string]types.AttributeValue, name string) string {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return ""
	}

	ra := invokeAsync(ctx, fa, raw)
	var ownerA string
	var leaseMs int64
	waitFor(ctx, t, "a's claim of m0", func() (bool, error) {
		it, err := item()
		if err != nil || it == nil {
			return false, err
		}
		ownerA = attr(it, dynamodbstore.AttrOwner)
		leaseMs, err = strconv.ParseInt(attr(it, dynamodbstore.AttrInProgressExpiration), 10, 64)
		return attr(it, dynamodbstore.AttrStatus) == "INPROGRESS", err
	})
	// The claim condition compares the lease with the claimant's clock in
	// milliseconds: wait until it has passed on this machine's clock.
	waitFor(ctx, t, "a's lease to run out", func() (bool, error) { return time.Now().UnixMilli() > leaseMs+5, nil })
	waitFor(ctx, t, "m1 completed", func() (bool, error) {
		c, err := countStatus(ctx, db, table, "COMPLETED")
		return c == 1, err
	})
	rb := invokeAsync(ctx, fb, raw)
	var ownerB string
	waitFor(ctx, t, "b's claim", func() (bool, error) {
		it, err := item()
		if err != nil {
			return false, err
		}
		ownerB = attr(it, dynamodbstore.AttrOwner)
		return ownerB != ownerA, nil
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a, bb := <-ra, <-rb
	if a.err != nil || bb.err != nil {
		t.Fatalf("invocations: %v; %v", a.err, bb.err)
	}
	if got := reported(t, "sqs", bb.out); len(got) != 0 {
		t.Fatalf("the new owner reported %v: %s", got, failedRecords(t, batchLogs(ctx, t, fb)))
	}
	if got := reported(t, "sqs", a.out); len(got) != 1 || got[0] != id {
		t.Fatalf("the stale owner reported %v, want [%s]", got, id)
	}
	if msg := failedRecords(t, batchLogs(ctx, t, fa))[id]; !errors.Is(errorFromLog(msg), idempotency.ErrLeaseLost) {
		t.Fatalf("the stale owner's record failed with %q, want ErrLeaseLost", msg)
	}
	it, err := item()
	if err != nil {
		t.Fatal(err)
	}
	if s, o := attr(it, dynamodbstore.AttrStatus), attr(it, dynamodbstore.AttrOwner); s != "COMPLETED" || o != ownerB {
		t.Fatalf("record after the race: status %s owner %s, want COMPLETED by the new owner %s (the stale owner was %s)", s, o, ownerB, ownerA)
	}
	// Both ran the effect: a lease shorter than the work cannot prevent
	// that, which is why the lease follows the deadline by default.
	if ca, cb := effectCounts(t, effA)[id], effectCounts(t, effB)[id]; ca != 1 || cb != 1 {
		t.Fatalf("effects of m0: a %d, b %d; want 1 each", ca, cb)
	}
	// The record was reported, so Lambda delivers it again: now a duplicate.
	out, err := fa.Invoke(ctx, raw)
	if err != nil || len(reported(t, "sqs", out)) != 0 || effectCounts(t, effA)[id] != 1 || len(readEffects(t, effB)) != 1 {
		t.Fatalf("redelivery: %s %v, effects %v", out, err, effectCounts(t, effA))
	}
}
