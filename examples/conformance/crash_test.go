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

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluicehq/sluice/dlq/dynamodbattempts"
	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/dynamodbstore"
	"github.com/sluicehq/sluice/internal/testsupport/rie"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// crashEvent is one event of three records of one lane (one partition key,
// one message group), ids "1", "2", "3", record 2 doing crash; retry is the
// same event as Lambda delivers it again (SQS: a receive count of 2). ids
// are the records' identities in the effects file.
func crashEvent(t *testing.T, source, crash string) (first, retry []byte, ids []string) {
	t.Helper()
	actions := []string{"ok", crash, "ok"}
	marshal := func(ev any) []byte {
		raw, err := sevents.MarshalEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	switch source {
	case "kinesis":
		b := &sevents.KinesisBuilder{}
		for i, a := range actions {
			b.Add("pk", cmd(fmt.Sprint(i+1), a))
		}
		ev := b.Event()
		for _, r := range ev.Records {
			ids = append(ids, r.Kinesis.SequenceNumber)
		}
		raw := marshal(ev)
		return raw, raw, ids
	case "sqs", "sqs-fifo":
		b := &sevents.SQSBuilder{}
		if source == "sqs-fifo" {
			b.QueueARN = "arn:aws:sqs:us-east-1:123456789012:orders.fifo"
		}
		for i, a := range actions {
			if source == "sqs-fifo" {
				b.AddFIFO(string(cmd(fmt.Sprint(i+1), a)), "g", "")
			} else {
				b.Add(string(cmd(fmt.Sprint(i+1), a)))
			}
		}
		ev := b.Event()
		for _, r := range ev.Records {
			ids = append(ids, r.MessageId)
		}
		first = marshal(ev)
		again := events.SQSEvent{Records: append([]events.SQSMessage(nil), ev.Records...)}
		for i := range again.Records {
			attrs := map[string]string{}
			for k, v := range again.Records[i].Attributes {
				attrs[k] = v
			}
			attrs["ApproximateReceiveCount"] = "2"
			again.Records[i].Attributes = attrs
		}
		return first, marshal(again), ids
	}
	t.Fatalf("no crash event for %s", source)
	return nil, nil, nil
}

// crashFunction starts the compiled conformance function under RIE (a 60 s
// timeout: a claim that followed the deadline would hold its key that
// long) with idempotency on table and dead letters on: SLUICE_DLQ_FILE and
// SLUICE_MAX_ATTEMPTS=2, the parallelization factor declared 1, and, for a stream, attempts counted in the
// DynamoDB table attempts.
func crashFunction(t *testing.T, bin string, srv *servers.Server, source, table, attempts, effects, dlqFile string, extra ...string) *rie.Function {
	t.Helper()
	opts := []rie.Option{
		rie.Env("SLUICE_SOURCE", source), rie.Env("SLUICE_EFFECTS_FILE", effects),
		rie.Env("SLUICE_IDEMPOTENCY_TABLE", table), rie.Env("AWS_LAMBDA_FUNCTION_NAME", "conformance"),
		rie.Env("SLUICE_DLQ_FILE", dlqFile), rie.Env("SLUICE_MAX_ATTEMPTS", "2"),
		// A mapping of factor 1, declared as the constructs declare it: a
		// Kinesis shard keeps one checkpoint (laneItem reads it).
		rie.Env("SLUICE_PARALLELIZATION_FACTOR", "1"),
		rie.Env("AWS_ENDPOINT_URL_DYNAMODB", srv.Endpoint), rie.Env("AWS_REGION", servers.Region),
		rie.Env("AWS_ACCESS_KEY_ID", servers.AccessKeyID), rie.Env("AWS_SECRET_ACCESS_KEY", servers.SecretAccessKey),
		rie.Env("AWS_CONFIG_FILE", os.DevNull), rie.Env("AWS_SHARED_CREDENTIALS_FILE", os.DevNull),
		rie.Env("AWS_LAMBDA_LOG_FORMAT", "JSON"), rie.Timeout(60 * time.Second),
	}
	if attempts != "" {
		opts = append(opts, rie.Env("SLUICE_ATTEMPTS_TABLE", attempts))
	}
	for i := 0; i+1 < len(extra); i += 2 {
		opts = append(opts, rie.Env(extra[i], extra[i+1]))
	}
	return rie.Start(t, bin, opts...)
}

// The scenario of a crash with idempotency on: one event of three records
// (ok, crash, ok) of one lane, and record 2 kills the process (os.Exit, as
// a crash or an out-of-memory kill would) after claiming its key, either
// before its effect (exit) or after it, before its outcome is written
// (exitafter). Lambda delivers the event again, at once, to a fixed
// function (CONFORMANCE_FIXED). The dead invocation's claim lapses within
// one lease (idempotency.DefaultLease), not at its 60 s deadline, so the
// retry waits for it and then runs the record, in the same invocation:
//
//   - the retry answers with nothing reported: no retry is spent on "in
//     progress", nothing is quarantined (the dead-letter file stays empty)
//     and, on Kinesis, no attempt is counted (the attempts table stays
//     empty);
//   - every record has taken effect, and a record runs again only if its
//     idempotency record had not completed: effects after the retry are
//     the effects after the crash plus one for each record not completed
//     by then (record 2 after exitafter has two: the crash cannot be told
//     from one before the effect; on SQS standard, records 1 and 3 ran
//     beside record 2 and may have been completing when it crashed);
//   - on Kinesis and SQS FIFO (one lane, which keeps a checkpoint) record 3
//     never runs before record 2's last run. The write of record 1's
//     checkpoint overlaps record 2's run (a lane writes when a round trip
//     passed or depth records wait, idempotency.DefaultOrderedDepth), so
//     the crash can find it covered or not; not, the retry runs it again.
//     The dead process's lease on the lane lapses within one lease.
//
// How long the retry took and how long the claim had left when it began
// are logged, for the figure in docs/handlers.md.
func TestCrashWithIdempotencyRetryWaitsForLease(t *testing.T) {
	bin := rie.BuildHandler(t, "github.com/sluicehq/sluice/examples/conformance")
	srv := servers.DynamoDB(t)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	for _, source := range []string{"kinesis", "sqs-fifo", "sqs"} {
		for _, crash := range []string{"exit", "exitafter"} {
			t.Run(source+"/"+crash, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				table := servers.UniqueName(t, "idem")
				if err := dynamodbstore.CreateTable(ctx, db, table); err != nil {
					t.Fatal(err)
				}
				attempts := ""
				if source == "kinesis" {
					attempts = servers.UniqueName(t, "attempts")
					if err := dynamodbattempts.CreateTable(ctx, db, attempts); err != nil {
						t.Fatal(err)
					}
				}
				dir := t.TempDir()
				effects, dlqFile := filepath.Join(dir, "effects.jsonl"), filepath.Join(dir, "dlq.jsonl")
				first, retry, ids := crashEvent(t, source, crash)

				crashing := crashFunction(t, bin, srv, source, table, attempts, effects, dlqFile)
				out, err := crashing.Invoke(ctx, first)
				var fe *rie.FunctionError
				if !errors.As(err, &fe) || fe.Type != "Runtime.ExitError" {
					t.Fatalf("first invocation: %s %v; want the process to exit (Runtime.ExitError)", out, err)
				}
				if err := crashing.Stop(); err != nil {
					t.Fatal(err)
				}
				afterCrash := effectCounts(t, effects)
				done := map[string]bool{}
				var leaseEnd, aheadEnd time.Time
				read := time.Now()
				if source != "sqs" {
					// An ordered lane keeps a checkpoint, not a record per
					// key: a record completed when the checkpoint covers it,
					// and the dead process's lease on the lane holds record
					// 2 (and 3, ahead of it) until it lapses.
					lane := laneItem(ctx, t, db, table, source, first)
					for i, id := range ids {
						done[id] = lane.covers(t, source, first, i)
					}
					leaseEnd, aheadEnd = lane.lease, lane.lease
				}
				for i, id := range ids {
					if source != "sqs" {
						break
					}
					it, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
						Key: map[string]types.AttributeValue{dynamodbstore.DefaultPartitionKey: &types.AttributeValueMemberS{Value: "conformance#" + idemKey(source, first, i)}}})
					if err != nil {
						t.Fatal(err)
					}
					status, _ := it.Item[dynamodbstore.AttrStatus].(*types.AttributeValueMemberS)
					done[id] = status != nil && status.Value == "COMPLETED"
					if ms, ok := it.Item[dynamodbstore.AttrInProgressExpiration].(*types.AttributeValueMemberN); ok && i >= 1 && !done[id] {
						n, err := strconv.ParseInt(ms.Value, 10, 64)
						if err != nil {
							t.Fatal(err)
						}
						if i == 1 {
							leaseEnd = time.UnixMilli(n)
						} else {
							aheadEnd = time.UnixMilli(n)
						}
					}
				}
				if source != "sqs" {
					want := map[string]int{ids[0]: 1}
					if crash == "exitafter" {
						want[ids[1]] = 1
					}
					// Record 1's complete overlaps record 2's run (a lane keeps
					// up to idempotency.DefaultOrderedDepth completes in
					// flight): the crash can come before it landed, and then
					// record 1 is in progress too and the retry runs it again
					// (the effects check below wants one more for it).
					if fmt.Sprint(afterCrash) != fmt.Sprint(want) || done[ids[1]] || leaseEnd.IsZero() {
						t.Fatalf("after the crash: effects %v, completed %v, record 2's lease until %v; want effects %v, record 2 in progress",
							afterCrash, done, leaseEnd, want)
					}
					t.Logf("%s/%s: record 1's completion had landed before the crash: %v", source, crash, done[ids[0]])
					// Record 3's claim was taken ahead, before record 2 ran: the
					// crash left it in progress, with a lease that ends within
					// one lease (it lapses; nobody renews it), and the retry
					// below runs record 3 after it, reporting nothing.
					if aheadEnd.IsZero() || aheadEnd.After(read.Add(idempotency.DefaultLease)) {
						t.Fatalf("after the crash: record 3's claim ahead has a lease until %v (read at %v); want one that lapses within %v",
							aheadEnd, read, idempotency.DefaultLease)
					}
				}

				fixedFn := crashFunction(t, bin, srv, source, table, attempts, effects, dlqFile, "CONFORMANCE_FIXED", crash)
				begin := time.Now()
				out, err = fixedFn.Invoke(ctx, retry)
				took := time.Since(begin)
				if err != nil {
					t.Fatalf("retry: %v", err)
				}
				if got := reported(t, source, out); len(got) != 0 {
					t.Fatalf("retry reported %v: %v", got, failedRecords(t, batchLogs(ctx, t, fixedFn)))
				}
				left := "none (record 2 had not claimed)"
				if !leaseEnd.IsZero() {
					left = leaseEnd.Sub(begin).Round(time.Millisecond).String()
				}
				t.Logf("%s/%s: the retry answered after %v; record 2's claim had %s left when it began", source, crash, took.Round(time.Millisecond), left)

				after := effectCounts(t, effects)
				for i, id := range ids {
					want := afterCrash[id]
					if !done[id] {
						want++
					}
					// On SQS standard records 1 and 3 ran beside record 2, and
					// on a lane record 1's complete overlapped record 2's run:
					// a complete the dead process had sent may land after the
					// table was read, and then the retry finds it completed.
					late := (source == "sqs" && i != 1 || i == 0) && !done[id] && afterCrash[id] == 1 && after[id] == 1
					if (after[id] != want || after[id] == 0) && !late {
						t.Errorf("record %d: %d effects after the retry, want %d (%d after the crash, completed then: %v)", i+1, after[id], want, afterCrash[id], done[id])
					}
				}
				if data, err := os.ReadFile(dlqFile); err == nil && len(data) > 0 {
					t.Errorf("quarantined: %s", data)
				} else if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				if attempts != "" {
					scan, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(attempts), ConsistentRead: aws.Bool(true)})
					if err != nil {
						t.Fatal(err)
					}
					if len(scan.Items) != 0 {
						t.Errorf("the attempts table holds %d items, want none: no attempt was made that failed", len(scan.Items))
					}
				}
				if source != "sqs" {
					es := readEffects(t, effects)
					last2, first3 := -1, -1
					for i, e := range es {
						if e.Record == ids[1] {
							last2 = i
						}
						if e.Record == ids[2] && first3 < 0 {
							first3 = i
						}
					}
					if first3 < last2 {
						t.Errorf("record 3 ran before record 2's last run: effects %v", es)
					}
				}
			})
		}
	}
}

// lane is what the test reads of an ordered lane's checkpoint item.
type lane struct {
	position string
	lease    time.Time
}

// laneItem reads the checkpoint of the lane of raw's records (one lane:
// one shard, one message group).
func laneItem(ctx context.Context, t *testing.T, db *dynamodb.Client, table, source string, raw []byte) lane {
	t.Helper()
	var key string
	if source == "kinesis" {
		var ev events.KinesisEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		shard, _, _ := strings.Cut(ev.Records[0].EventID, ":")
		key = "conformance#lane#kinesis#" + ev.Records[0].EventSourceArn + "#" + shard
	} else {
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		key = "conformance#lane#sqs#" + ev.Records[0].EventSourceARN + "#" + ev.Records[0].Attributes["MessageGroupId"]
	}
	it, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamodbstore.DefaultPartitionKey: &types.AttributeValueMemberS{Value: key}}})
	if err != nil {
		t.Fatal(err)
	}
	if it.Item == nil {
		t.Fatalf("no checkpoint item %s", key)
	}
	var l lane
	if p, ok := it.Item[dynamodbstore.AttrPosition].(*types.AttributeValueMemberS); ok {
		l.position = p.Value
	}
	if ms, ok := it.Item[dynamodbstore.AttrInProgressExpiration].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(ms.Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		l.lease = time.UnixMilli(n)
	}
	return l
}

// covers reports whether the lane's checkpoint covers record i of raw.
func (l lane) covers(t *testing.T, source string, raw []byte, i int) bool {
	t.Helper()
	var seq string
	if source == "kinesis" {
		var ev events.KinesisEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		seq = ev.Records[i].Kinesis.SequenceNumber
	} else {
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		seq = ev.Records[i].Attributes["SequenceNumber"]
	}
	p, ok := idempotency.Position(seq)
	if !ok {
		t.Fatalf("record %d: sequence number %q", i, seq)
	}
	return l.position != "" && p <= l.position
}

// idemKey is record i's default idempotency key (without the function
// name): the Kinesis event id or the SQS message id.
func idemKey(source string, raw []byte, i int) string {
	if source == "kinesis" {
		var ev events.KinesisEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return ""
		}
		return ev.Records[i].EventID
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ""
	}
	return ev.Records[i].MessageId
}
