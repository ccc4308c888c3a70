package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/events/kpl"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
	"github.com/sluicehq/sluice/localtest"
)

// TestKPLAggregates: sluice invoke sends an event holding a KPL aggregated
// record (the KPL's format, github.com/awslabs/amazon-kinesis-producer/
// blob/master/aggregation-format.md) to a Sluice handler, which runs its
// user records and reports the aggregate when one of them fails; sluice run
// takes records lines with "aggregate" and delivers each user record.
func TestKPLAggregates(t *testing.T) {
	bin := conformance(t)
	dir := t.TempDir()
	b := &events.KinesisBuilder{Clock: fixedClock}
	b.Add("pk", command("p1", "ok"))
	b.AddAggregated(kpl.Record{PartitionKey: "a", Data: command("u1", "ok")}, kpl.Record{PartitionKey: "b", Data: command("u2", "fail")},
		kpl.Record{PartitionKey: "c", Data: command("u3", "ok")})
	ev := b.Event()
	path := prettyEvent(t, dir, "kpl.json", ev)
	t.Run("invoke", func(t *testing.T) {
		effects := filepath.Join(t.TempDir(), "effects.jsonl")
		seq := ev.Records[1].Kinesis.SequenceNumber
		code, out, errs := runCLI(t, "invoke", "--event", path, "--handler", bin, "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_EFFECTS_FILE="+effects)
		if code != 1 || !strings.Contains(out, seq) || !strings.HasSuffix(lastLine(errs), "partial: 1 item reported: "+seq) {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		raw, _ := os.ReadFile(effects)
		if got := strings.Count(string(raw), "\n"); got != 2 || !strings.Contains(string(raw), `"id":"u1"`) || strings.Contains(string(raw), `"id":"u3"`) {
			t.Fatalf("effects (want p1 and u1, the function stopping at u2):\n%s", raw)
		}
	})
	t.Run("run", func(t *testing.T) {
		var lines []string
		n := 0
		for i := range 6 {
			var users []string
			for k := range 4 {
				n++
				users = append(users, fmt.Sprintf(`{"partitionKey":"cust-%d","data":{"id":"u%d-%d","action":"ok"}}`, (i+k)%3, i, k))
			}
			lines = append(lines, `{"aggregate":[`+strings.Join(users, ",")+`]}`)
		}
		lines = append(lines, `{"partitionKey":"pk","data":{"id":"plain","action":"ok"}}`)
		n++
		records := write(t, t.TempDir(), "records.jsonl", strings.Join(lines, "\n")+"\n")
		mapping := write(t, t.TempDir(), "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":3,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
		effects := filepath.Join(t.TempDir(), "effects.jsonl")
		code, out, errs := runCLI(t, "run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet",
			"--effects", effects, "--env", "SLUICE_SOURCE=kinesis")
		if code != 0 || !strings.Contains(out, "kinesis mapping: 25 records (24 of them user records of 6 KPL aggregates)") ||
			!strings.Contains(out, "invariant no-record-lost: held") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		raw, _ := os.ReadFile(effects)
		if got := strings.Count(string(raw), "\n"); got != n || !strings.Contains(string(raw), `"id":"u5-3"`) {
			t.Fatalf("%d effects, want one per user record (%d):\n%s", got, n, raw)
		}
	})
}

// kplRecordsFile is a records file of aggregates and plain records: line
// 2k+1 an aggregate of four orders over three partition keys, line 2k+2 a
// plain order; every payload has an id. It returns the path and how many
// records the run has (each user record one).
func kplRecordsFile(t *testing.T, aggregates int, action func(line, sub int) string) (string, int) {
	var lines []string
	n := 0
	for i := range aggregates {
		var users []string
		for k := range 4 {
			users = append(users, fmt.Sprintf(`{"partitionKey":"cust-%d","data":{"id":"u%d-%d","action":%q}}`, (i+k)%3, i, k, action(2*i+1, k)))
		}
		lines = append(lines, `{"aggregate":[`+strings.Join(users, ",")+`]}`,
			fmt.Sprintf(`{"partitionKey":"pk-%d","data":{"id":"p%d","action":%q}}`, i%2, i, action(2*i+2, -1)))
		n += 5
	}
	return write(t, t.TempDir(), "records.jsonl", strings.Join(lines, "\n")+"\n"), n
}

func ok(int, int) string { return "ok" }

// TestRunKPLDropFails: a function that acknowledges the user records of an
// aggregate after the first without doing their work fails sluice run
// (exit 1, the lost user records named by line and sub-sequence number);
// the same function fixed passes, with --effects-key too. Before, both
// passed: the runner named the aggregate by its sequence number.
func TestRunKPLDropFails(t *testing.T) {
	bin := conformance(t)
	records, n := kplRecordsFile(t, 3, ok)
	mapping := write(t, t.TempDir(), "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":4,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	base := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--env", "SLUICE_SOURCE=kinesis"}
	t.Run("drops", func(t *testing.T) {
		code, out, errs := runCLI(t, append(base, "--effects", filepath.Join(t.TempDir(), "e.jsonl"), "--env", "CONFORMANCE_DROP=user-records")...)
		if code != 1 || !strings.Contains(out, "invariant no-record-lost: VIOLATED") || !strings.Contains(out, "record line 1:1 (id u0-1) was acknowledged as processed but no effect names it") ||
			!strings.Contains(out, "FAIL: no-record-lost violated") {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
		}
	})
	for _, key := range []string{"", "id"} {
		t.Run("correct, effects-key "+key, func(t *testing.T) {
			args := append(base, "--effects", filepath.Join(t.TempDir(), "e.jsonl"))
			if key != "" {
				args = append(args, "--effects-key", key)
			}
			code, out, errs := runCLI(t, args...)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("kinesis mapping: %d records", n)) || !strings.Contains(out, fmt.Sprintf("processed %d", n)) ||
				!strings.Contains(out, "invariant order-per-key: held") {
				t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
			}
		})
	}
}

// TestRunKPLExactlyOnceAndQuarantine: with idempotency on DynamoDB Local
// (SLUICE_IDEMPOTENCY_TABLE turns --exactly-once on) and every batch
// delivered twice, a correct function passes effect-once: its user
// records are records of their own. One user record that fails
// permanently goes to the function's dead letters alone, as --expect
// N:S=quarantined says. Before, effect-once read three user records as
// one record that "took effect 3 times", and the envelope quarantined the
// whole aggregate.
func TestRunKPLExactlyOnceAndQuarantine(t *testing.T) {
	bin := conformance(t)
	srv := servers.DynamoDB(t)
	table := servers.UniqueName(t, "kpl")
	if code, out, errs := runCLIEnv(t, awsEnv(srv), "tables", "create", "--idempotency", table); code != 0 {
		t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
	}
	records, n := kplRecordsFile(t, 4, func(line, sub int) string {
		if line == 3 && sub == 2 {
			return "permanent"
		}
		return "ok"
	})
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":3,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	args := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--quiet", "--faults", "duplicate=1",
		"--effects", filepath.Join(dir, "e.jsonl"), "--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_IDEMPOTENCY_TABLE=" + table,
		"--env", "SLUICE_DLQ_FILE=" + filepath.Join(dir, "dlq.jsonl"), "--report", filepath.Join(dir, "report.json")}
	for _, kv := range awsEnv(srv) {
		args = append(args, "--env", kv)
	}
	code, out, errs := runCLI(t, append(args, "--expect", "3:2=quarantined")...)
	if code != 0 || !strings.Contains(out, "invariant effect-once: held") || !strings.Contains(out, fmt.Sprintf("processed %d", n-1)) ||
		!strings.Contains(out, "quarantined 1") || !strings.Contains(out, "line 3:2 (id u1-2): quarantined") {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	var rep localtest.Report
	raw, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Duplicates == 0 || rep.Totals.Records != n {
		t.Fatalf("totals %+v", rep.Totals)
	}
	// The same records again, in a new run over the same table: every
	// effect already happened, so every record is skipped as a duplicate
	// its shard's checkpoint covered before the run, which the runner
	// reads from the table (the lane's item: the records' own keys hold
	// nothing). The quarantined one runs (and is parked) again.
	code, out, errs = runCLI(t, append(args, "--expect", "3:2=quarantined")...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("skipped %d", n-1)) || !strings.Contains(out, "covered its position before the run") {
		t.Fatalf("second run: exit %d, want 0\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, append(args, "--expect", "3:9=quarantined")...); code != 2 || !strings.Contains(errs, "line 3 holds no user record 9 (it holds 4)") {
		t.Fatalf("--expect past the aggregate: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestRunKPLKinesisEndpoint: a stream on kinesalite holding aggregates a
// producer wrote with the KPL: a function that drops user records fails
// sluice run, the correct one passes.
func TestRunKPLKinesisEndpoint(t *testing.T) {
	bin := conformance(t)
	srv := servers.Kinesis(t)
	ctx := context.Background()
	client := kinesis.NewFromConfig(srv.AWSConfig())
	name := servers.UniqueName(t, "kpl")
	if _, err := client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && d.StreamDescriptionSummary.StreamStatus == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not active: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 4 {
		var users []kpl.Record
		for k := range 3 {
			users = append(users, kpl.Record{PartitionKey: fmt.Sprint("cust-", k), Data: command(fmt.Sprintf("u%d-%d", i, k), "ok")})
		}
		if _, err := client.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(name), PartitionKey: aws.String(fmt.Sprint("agg-", i)), Data: kpl.Encode(users)}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":2,
		"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":%q,"StreamName":%q}`, srv.Endpoint, name))
	for _, drop := range []bool{false, true} {
		args := []string{"run", "--mapping", mapping, "--handler", bin, "--quiet", "--timeout", "5s",
			"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--env", "SLUICE_SOURCE=kinesis"}
		if drop {
			args = append(args, "--env", "CONFORMANCE_DROP=user-records")
		}
		code, out, errs := runCLI(t, args...)
		switch {
		case !strings.Contains(out, "12 records (12 of them user records of 4 KPL aggregates)"):
			t.Fatalf("drop %v: exit %d\n%s\n%s", drop, code, out, errs)
		case !drop && (code != 0 || !strings.Contains(out, "processed 12")):
			t.Fatalf("correct: exit %d\n%s\n%s", code, out, errs)
		case drop && (code != 1 || !strings.Contains(out, "invariant no-record-lost: VIOLATED") || !strings.Contains(out, ":2 (id u0-2) was acknowledged as processed")):
			t.Fatalf("drops: exit %d\n%s\n%s", code, out, errs)
		}
	}
}
