package localtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/dlq"
	"github.com/sluicehq/sluice/events"
)

func TestCheckFates(t *testing.T) {
	recs := []inputRef{
		{id: "s1", line: 1, payloadID: "o1"},
		{id: "s2", line: 2, payloadID: "o2"},
		{id: "s3", line: 3},
	}
	tests := []struct {
		name   string
		fates  []string // per record
		expect []string // per record
		allow  []string
		unkn   string
		want   string
		// unexpected lists "<line>:<expected>:<got>"
		unexpected []string
		mention    string
	}{
		{name: "all processed", fates: []string{FateProcessed, FateProcessed, FateProcessed}, want: StatusHeld},
		{name: "filtered is expected by construction", fates: []string{FateProcessed, FateFiltered, FateProcessed}, want: StatusHeld},
		{name: "every fate but processed fails by default", fates: []string{FateQuarantined, FateDeadLettered, FateOnFailure},
			want:       StatusViolated,
			unexpected: []string{"1:processed:quarantined", "2:processed:dead-lettered", "3:processed:on-failure"},
			mention:    "line 1 (id o1): expected processed, got quarantined (the function parked it in its own dead letters)"},
		{name: "left fails by default", fates: []string{FateProcessed, FateLeft, FateProcessed}, want: StatusViolated,
			unexpected: []string{"2:processed:left"}, mention: "got left (still in the source"},
		{name: "expect names the fate", fates: []string{FateQuarantined, FateProcessed, FateOnFailure},
			expect: []string{FateQuarantined, "", FateOnFailure}, want: StatusHeld},
		{name: "an expected fate that did not happen fails", fates: []string{FateProcessed, FateProcessed, FateProcessed},
			expect: []string{FateQuarantined, "", ""}, want: StatusViolated, unexpected: []string{"1:quarantined:processed"},
			mention: "line 1 (id o1): expected quarantined, got processed"},
		{name: "an explicit expectation does not take filtered", fates: []string{FateFiltered, FateProcessed, FateProcessed},
			expect: []string{FateProcessed, "", ""}, want: StatusViolated, unexpected: []string{"1:processed:filtered"}},
		{name: "allow takes a fate for every record", fates: []string{FateOnFailure, FateProcessed, FateOnFailure},
			allow: []string{FateOnFailure}, want: StatusHeld},
		{name: "allow adds to an expectation", fates: []string{FateProcessed, FateOnFailure, FateDeadLettered},
			expect: []string{FateQuarantined, "", ""}, allow: []string{FateProcessed, FateOnFailure}, want: StatusViolated,
			unexpected: []string{"3:processed:dead-lettered"}, mention: "line 3: expected processed or on-failure, got dead-lettered"},
		{name: "several allowed are listed", fates: []string{FateLeft, FateProcessed, FateProcessed},
			allow: []string{FateQuarantined, FateOnFailure}, want: StatusViolated, unexpected: []string{"1:processed:left"},
			mention: "expected processed, quarantined or on-failure, got left"},
		{name: "a record without a fate is not this check's", fates: []string{FateProcessed, "", FateProcessed}, want: StatusHeld},
		{name: "fates that cannot be told apart are not evaluated", fates: []string{FateProcessed, FateProcessed, FateProcessed},
			unkn: "the dead letters could not be read", want: StatusNotEvaluated, mention: "could not be read"},
		{name: "unknown fates do not matter when both are allowed", fates: []string{FateProcessed, FateProcessed, FateProcessed},
			allow: []string{FateQuarantined}, unkn: "the dead letters could not be read", want: StatusHeld},
		{name: "processed or quarantined, neither expected", fates: []string{FateProcessed, FateProcessed, FateProcessed},
			expect: []string{FateOnFailure, FateProcessed, FateProcessed},
			unkn:   "the dead letters could not be read", want: StatusViolated, unexpected: []string{"1:on-failure:processed"}},
		{name: "processed or quarantined, one allowed", fates: []string{FateProcessed, FateProcessed, FateProcessed},
			expect: []string{FateOnFailure, FateQuarantined, FateQuarantined}, allow: []string{FateQuarantined},
			unkn: "the dead letters could not be read", want: StatusNotEvaluated},
		{name: "a mismatch stays violated when fates are unknown", fates: []string{FateOnFailure, FateProcessed, FateProcessed},
			unkn: "the dead letters could not be read", want: StatusViolated, unexpected: []string{"1:processed:on-failure"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fates := map[string]string{}
			for i, f := range tt.fates {
				if f != "" {
					fates[recs[i].id] = f
				}
			}
			res, unexpected := checkFates(fatesInput{records: recs, expect: tt.expect, fates: fates, allow: tt.allow, unknown: tt.unkn})
			if res.Name != InvariantFates || res.Status != tt.want {
				t.Fatalf("%+v, want %s", res, tt.want)
			}
			var got []string
			for _, u := range unexpected {
				got = append(got, strings.Join([]string{strconv.Itoa(u.Line), u.Expected, u.Fate}, ":"))
			}
			if !slices.Equal(got, tt.unexpected) {
				t.Fatalf("unexpected %v, want %v", got, tt.unexpected)
			}
			if text := res.Reason + strings.Join(res.Violations, "\n"); !strings.Contains(text, tt.mention) {
				t.Fatalf("should mention %q: %+v", tt.mention, res)
			}
			if rep := (&Report{Invariants: []InvariantResult{res}}); rep.Held() != (tt.want == StatusHeld) {
				t.Fatalf("Held() = %v for %+v", rep.Held(), res)
			}
		})
	}
}

func TestParseFates(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "quarantined", want: []string{FateQuarantined}},
		{in: "on-failure, dead-lettered,on-failure", want: []string{FateOnFailure, FateDeadLettered}},
		{in: "left,filtered,processed", want: []string{FateLeft, FateFiltered, FateProcessed}},
		{in: "dead-letter", err: `"dead-letter" is not a fate: want one of processed, skipped, quarantined, dead-lettered, on-failure, filtered, left`},
		{in: "", err: `"" is not a fate`},
		{in: "processed,", err: `"" is not a fate`},
	} {
		got, err := ParseFates(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%q: %v %v, want %v", tt.in, got, err, tt.want)
		}
	}
}

func envelopeLine(t *testing.T, id string) string {
	t.Helper()
	e := &dlq.Envelope{Version: dlq.Version, Source: events.SourceSQS, RecordID: id, Record: []byte(`{"messageId":"` + id + `"}`)}
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// A dead-letter file counts only the envelopes written after it was
// opened; one it cannot read is an error, never an empty list.
func TestFileQuarantine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "dlq.jsonl")
	if err := os.WriteFile(path, []byte(envelopeLine(t, "old")), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := QuarantineFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := q.Quarantined(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("nothing written since it was opened: %v %v", ids, err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(envelopeLine(t, "m1") + "\n" + envelopeLine(t, "m2"))
	f.Close()
	if ids, err := q.Quarantined(ctx); err != nil || !slices.Equal(ids, []string{"m1", "m2"}) {
		t.Fatalf("got %v %v, want [m1 m2]", ids, err)
	}

	fresh, err := QuarantineFile(filepath.Join(dir, "not-yet.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := fresh.Quarantined(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("a file never written holds nothing: %v %v", ids, err)
	}

	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, nil, 0o644)
	qb, _ := QuarantineFile(bad)
	os.WriteFile(bad, []byte(envelopeLine(t, "m1")+"{\"not\":\"an envelope\"}\n"), 0o644)
	if _, err := qb.Quarantined(ctx); err == nil || !strings.Contains(err.Error(), "envelope 2 written during the run") || !errors.Is(err, dlq.ErrNotEnvelope) {
		t.Fatalf("a line that is not an envelope: %v", err)
	}
	os.Truncate(path, 10)
	if _, err := q.Quarantined(ctx); err == nil || !strings.Contains(err.Error(), "shrank") {
		t.Fatalf("a file that shrank: %v", err)
	}
	os.Remove(path)
	if _, err := q.Quarantined(ctx); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("a file removed during the run: %v", err)
	}
}

// quarantineFunc is a Quarantine answering from a function.
type quarantineFunc func(context.Context) ([]string, error)

func (f quarantineFunc) Quarantined(ctx context.Context) ([]string, error) { return f(ctx) }

// A run whose function quarantines a record (it reports it handled: the
// runner reads it back from Options.Quarantine) ends with that record
// quarantined, needing no effect; the run passes only where the record
// expects it, and a Quarantine that cannot be read leaves the checks not
// evaluated.
func TestRunReadsTheQuarantine(t *testing.T) {
	var effects []Effect
	h := fn(func(ctx context.Context, p []byte) ([]byte, error) {
		ids, pids, _ := sqsIDs(t, p)
		for i, id := range ids {
			if pids[i] != "2" { // record 2 goes to the function's dead letters
				effects = append(effects, Effect{Record: id})
			}
		}
		return nil, nil
	})
	m := &Mapping{EventSource: events.SourceSQS, FunctionResponseTypes: []string{"ReportBatchItemFailures"}}
	quarantined := quarantineFunc(func(context.Context) ([]string, error) {
		return []string{"00000002-0000-4000-8000-000000000002", "from-another-run"}, nil
	})
	unreadable := quarantineFunc(func(context.Context) ([]string, error) { return nil, errors.New("queue not found") })
	for _, tt := range []struct {
		name       string
		expect     string
		allow      []string
		quarantine Quarantine
		held       bool
		status     [2]string // no-record-lost, fate-as-expected
	}{
		{"expected", FateQuarantined, nil, quarantined, true, [2]string{StatusHeld, StatusHeld}},
		{"allowed", "", []string{FateQuarantined}, quarantined, true, [2]string{StatusHeld, StatusHeld}},
		{"unexpected", "", nil, quarantined, false, [2]string{StatusHeld, StatusViolated}},
		{"unreadable", FateQuarantined, nil, unreadable, false, [2]string{StatusNotEvaluated, StatusNotEvaluated}},
		// Without the function's dead letters the record looks processed,
		// and its effect is missing: never a pass.
		{"not given", "", nil, nil, false, [2]string{StatusViolated, StatusHeld}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			effects = nil
			recs := sqsRecords(3, nil)
			recs[1].Expect = tt.expect
			rep, _ := run(t, Options{Mapping: m, Records: recs, Invoker: InProcess(h), Allow: tt.allow, Quarantine: tt.quarantine,
				Effects: func() ([]Effect, error) { return effects, nil }})
			if rep.Held() != tt.held {
				t.Fatalf("Held() = %v, want %v: %+v", rep.Held(), tt.held, rep.Invariants)
			}
			got := map[string]string{}
			for _, inv := range rep.Invariants {
				got[inv.Name] = inv.Status
			}
			if got[InvariantNoLoss] != tt.status[0] || got[InvariantFates] != tt.status[1] {
				t.Fatalf("invariants %+v, want %v", rep.Invariants, tt.status)
			}
			wantQ := 1
			if tt.quarantine == nil || tt.name == "unreadable" {
				wantQ = 0
			}
			if rep.Totals.Quarantined != wantQ || rep.Totals.Processed != 3-wantQ {
				t.Fatalf("totals %+v", rep.Totals)
			}
		})
	}
}

func TestRunRefusesUnknownFates(t *testing.T) {
	m := &Mapping{EventSource: events.SourceSQS}
	h := InProcess(fn(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	if _, err := Run(context.Background(), Options{Mapping: m, Records: sqsRecords(1, nil), Invoker: h, Allow: []string{"lost"}}); err == nil ||
		!strings.Contains(err.Error(), `Options.Allow: "lost" is not a fate`) {
		t.Fatalf("an unknown fate in Allow: %v", err)
	}
	recs := sqsRecords(2, nil)
	recs[1].Expect = "parked"
	if _, err := Run(context.Background(), Options{Mapping: m, Records: recs, Invoker: h}); err == nil ||
		!strings.Contains(err.Error(), `record 2: expect: "parked" is not a fate`) {
		t.Fatalf("an unknown fate in Expect: %v", err)
	}
	if _, err := ReadRecords(strings.NewReader(`{"body":"a"}` + "\n" + `{"body":"b","expect":"gone"}`)); err == nil ||
		!strings.Contains(err.Error(), `records line 2: expect: "gone" is not a fate`) {
		t.Fatalf("an unknown fate on a line: %v", err)
	}
}
