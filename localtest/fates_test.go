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
		{in: "dead-letter", err: `"dead-letter" is not a fate: want one of processed, quarantined, dead-lettered, on-failure, filtered, left`},
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

func TestMarkQuarantined(t *testing.T) {
	fates := map[string]string{"a": FateProcessed, "b": FateOnFailure, "c": FateProcessed, "d": FateProcessed}
	stray := markQuarantined(fates, []string{"a", "b", "x", "a"})
	want := map[string]string{"a": FateQuarantined, "b": FateOnFailure, "c": FateProcessed, "d": FateProcessed}
	for id, f := range want {
		if fates[id] != f {
			t.Errorf("record %s: %s, want %s", id, fates[id], f)
		}
	}
	if !slices.Equal(stray, []string{"x"}) {
		t.Errorf("stray %v, want [x]", stray)
	}
}

func envelopeLine(t *testing.T, id string) string {
	t.Helper()
	e := &dlq.Envelope{Version: dlq.Version, Source: dlq.SourceSQS, RecordID: id, Record: []byte(`{"messageId":"` + id + `"}`)}
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
