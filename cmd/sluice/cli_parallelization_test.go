package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

// TestRunDeclaresParallelization: sluice run declares a stream mapping's
// ParallelizationFactor to the function (SLUICE_PARALLELIZATION_FACTOR),
// as the CDK constructs do, so a Kinesis handler with idempotency keeps
// the checkpoints the mapping needs without being told: under a factor of
// 2, one per shard and partition key, every record takes effect once and
// the handler logs no note of an undeclared factor. --env still wins: told
// 1 under the same mapping, the handler keeps one checkpoint per shard,
// takes records of the other batch for duplicates, and the run fails
// no-record-lost; emptied, the factor is undeclared, nothing is lost, and
// the handler logs its note once per process.
func TestRunDeclaresParallelization(t *testing.T) {
	bin := conformance(t)
	srv := servers.DynamoDB(t)
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 120 {
		fmt.Fprintf(&lines, `{"partitionKey":"k%d","data":{"id":"r%d"}}`+"\n", i%6, i)
	}
	records := write(t, dir, "records.jsonl", lines.String())
	mapping := write(t, dir, "mapping.json", `{"EventSource":"kinesis","StartingPosition":"TRIM_HORIZON","BatchSize":20,"Shards":1,`+
		`"ParallelizationFactor":2,"FunctionResponseTypes":["ReportBatchItemFailures"]}`)
	for _, tc := range []struct {
		name, env string
		lost      bool
		notes     bool
	}{
		{"declared by the run", "", false, false},
		{"told 1 by --env", "SLUICE_PARALLELIZATION_FACTOR=1", true, false},
		{"undeclared by --env", "SLUICE_PARALLELIZATION_FACTOR=", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := servers.UniqueName(t, "pf")
			if code, out, errs := runCLIEnv(t, awsEnv(srv), "tables", "create", "--idempotency", table); code != 0 {
				t.Fatalf("tables create: exit %d\n%s\n%s", code, out, errs)
			}
			args := []string{"run", "--mapping", mapping, "--records", records, "--handler", bin, "--logs",
				"--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--effects-key", "id",
				"--env", "SLUICE_SOURCE=kinesis", "--env", "SLUICE_IDEMPOTENCY_TABLE=" + table}
			if tc.env != "" {
				args = append(args, "--env", tc.env)
			}
			code, out, errs := runCLIEnv(t, awsEnv(srv), args...)
			noted := strings.Contains(errs, "ParallelizationFactor is not declared")
			switch {
			case tc.lost && (code != 1 || !strings.Contains(out, "invariant no-record-lost: VIOLATED")):
				t.Fatalf("exit %d, want 1 and no-record-lost violated\n%s", code, out)
			case !tc.lost && (code != 0 || !strings.Contains(out, "invariant no-record-lost: held") || !strings.Contains(out, "invariant effect-once: held")):
				t.Fatalf("exit %d, want 0 with every record once\n%s\n%s", code, out, errs)
			case noted != tc.notes:
				t.Fatalf("the handler's note of an undeclared factor: %v, want %v\n%s", noted, tc.notes, errs)
			}
		})
	}
}
