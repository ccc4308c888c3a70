package localtest

import (
	"strings"
	"testing"
)

func TestCheckInvariants(t *testing.T) {
	recs := []inputRef{{id: "s1", key: "a", payloadID: "1"}, {id: "s2", key: "a", payloadID: "2"}, {id: "s3", key: "b", payloadID: "3"}}
	all := map[string]string{"s1": FateProcessed, "s2": FateOnFailure, "s3": FateProcessed}
	tests := []struct {
		name      string
		fates     map[string]string
		effects   []Effect
		unordered bool
		broken    string // the invariant that must fail, or ""
		mention   string
	}{
		{"all good", all, []Effect{{"1", "a"}, {"3", "b"}}, false, "", ""},
		{"a record without a fate is lost", map[string]string{"s1": FateProcessed, "s3": FateProcessed}, []Effect{{"1", "a"}, {"3", "b"}}, false, InvariantNoLoss, "s2"},
		{"processed without an effect is lost", all, []Effect{{"1", "a"}}, false, InvariantNoLoss, "payload 3"},
		{"on-failure needs no effect", all, []Effect{{"1", "a"}, {"3", "b"}}, false, "", ""},
		{"out of order within a key", map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed},
			[]Effect{{"2", "a"}, {"1", "a"}, {"3", "b"}}, false, InvariantOrder, "key a"},
		{"duplicates after the first effect are fine", map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed},
			[]Effect{{"1", "a"}, {"2", "a"}, {"1", "a"}, {"3", "b"}}, false, "", ""},
		{"other keys may interleave", map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed},
			[]Effect{{"3", "b"}, {"1", "a"}, {"2", "a"}}, false, "", ""},
		{"SQS standard promises no order", map[string]string{"s1": FateProcessed, "s2": FateProcessed, "s3": FateProcessed},
			[]Effect{{"2", "a"}, {"1", "a"}, {"3", "b"}}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := checkInvariants(recs, tt.fates, tt.effects, true, tt.unordered)
			for _, inv := range res {
				if inv.Held != (inv.Name != tt.broken) {
					t.Fatalf("%s held=%v: %+v", inv.Name, inv.Held, res)
				}
				if !inv.Held && !strings.Contains(strings.Join(inv.Violations, "\n"), tt.mention) {
					t.Fatalf("violation should mention %q: %v", tt.mention, inv.Violations)
				}
			}
			if tt.unordered && len(res) != 1 || !tt.unordered && len(res) != 2 {
				t.Fatalf("%d invariants checked", len(res))
			}
		})
	}
}
