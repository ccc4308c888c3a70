package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseExpectsByID(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags []string
		want  map[string]string
		lines bool
		err   string
	}{
		{"a kafka id", []string{"id:orders-0@1=on-failure"}, map[string]string{"orders-0@1": "on-failure"}, false, ""},
		{"a KPL user record's id", []string{"id:4959:2=quarantined"}, map[string]string{"4959:2": "quarantined"}, false, ""},
		{"with a line", []string{"id:m1=dead-lettered", "3=left"}, map[string]string{"m1": "dead-lettered"}, true, ""},
		{"with every record", []string{"id:m1=dead-lettered", "quarantined"}, map[string]string{"m1": "dead-lettered"}, true, ""},
		{"no fate", []string{"id:m1"}, nil, false, "want id:ID=FATE"},
		{"no id", []string{"id:=left"}, nil, false, "want id:ID=FATE"},
		{"not a fate", []string{"id:m1=gone"}, nil, false, `"gone" is not a fate`},
		{"twice", []string{"id:m1=left", "id:m1=processed"}, nil, false, "id m1 is given twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := parseExpects(tt.flags)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := expectsByID(ex); !maps.Equal(got, tt.want) || hasLineExpects(ex) != tt.lines {
				t.Fatalf("%v (lines %v), want %v (lines %v)", got, hasLineExpects(ex), tt.want, tt.lines)
			}
		})
	}
}

// A record from a real source (here a kfake topic) has no records line:
// --expect id:ID=FATE names it by its id in its source. Before, --expect
// was refused without --records, so a run over a real source whose poison
// record was meant to end on-failure could not pass.
func TestRunExpectByIDOnARealSource(t *testing.T) {
	bin := conformance(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i, action := range []string{"ok", "permanent", "ok"} {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Value: command(fmt.Sprintf("k%d", i), action)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	mapping := write(t, dir, "mapping.json", fmt.Sprintf(`{"EventSource":"kafka","Mode":"provisioned","StartingPosition":"TRIM_HORIZON","BatchSize":1,
		"MaximumRetryAttempts":0,"FunctionResponseTypes":["ReportBatchItemFailures"],"Endpoint":"kafka://%s","Topic":"orders"}`, strings.Join(cluster.ListenAddrs(), ",")))
	run := func(expect ...string) (int, string, string) {
		args := []string{"run", "--mapping", mapping, "--handler", bin, "--effects", filepath.Join(t.TempDir(), "effects.jsonl"), "--quiet",
			"--env", "SLUICE_SOURCE=kafka"}
		for _, e := range expect {
			args = append(args, "--expect", e)
		}
		return runCLI(t, args...)
	}
	if code, out, errs := run(); code != 1 || !strings.Contains(out, "orders-0@1 (id k1): expected processed, got on-failure") {
		t.Fatalf("without the expectation: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := run("id:orders-0@1=on-failure"); code != 0 || !strings.Contains(out, "invariant fate-as-expected: held") {
		t.Fatalf("expected by id: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := run("id:orders-0@1=on-failure", "id:orders-0@7=processed"); code != 1 ||
		!strings.Contains(out, "expected processed for id orders-0@7, but no record of the run has that id") {
		t.Fatalf("an id of no record: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := run("2=on-failure"); code != 2 || !strings.Contains(errs, "name it by its id in its source: --expect id:ID=FATE") {
		t.Fatalf("a line of a real source: exit %d\n%s", code, errs)
	}
}
