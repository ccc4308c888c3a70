package windowrun

import (
	"context"
	"strings"
	"testing"
	"time"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/eventscan"
)

func windowEvent(early bool, state map[string]string) *eventscan.WindowEvent {
	ev := &eventscan.WindowEvent{ShardID: "shardId-000000000001", EventSourceARN: "arn:aws:kinesis:us-east-1:1:stream/s",
		IsWindowTerminatedEarly: early, State: state}
	ev.Window = &struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	}{Start: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600)), End: time.Date(2026, 1, 2, 3, 5, 5, 0, time.UTC)}
	return ev
}

func TestFinalKey(t *testing.T) {
	base := "window#arn:aws:kinesis:us-east-1:1:stream/s#shardId-000000000001#2026-01-02T02:04:05.0000006Z"
	for _, tc := range []struct {
		name, function string
		ev             *eventscan.WindowEvent
		want           string // the key, or its prefix when early
		early          bool
	}{
		{"no function name", "", windowEvent(false, nil), base, false},
		{"function name first", "fn", windowEvent(false, map[string]string{"a": "1"}), "fn#" + base, false},
		{"terminated early: a hash of the state", "fn", windowEvent(true, map[string]string{"a": "1", "b": "2"}), "fn#" + base + "#early-", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FinalKey(tc.function, tc.ev)
			if !tc.early {
				if got != tc.want {
					t.Fatalf("FinalKey = %q, want %q", got, tc.want)
				}
				return
			}
			if !strings.HasPrefix(got, tc.want) || len(got) != len(tc.want)+16 {
				t.Fatalf("FinalKey = %q, want %q and 16 hex digits", got, tc.want)
			}
			other := FinalKey(tc.function, windowEvent(true, map[string]string{"a": "1", "b": "3"}))
			if other == got || FinalKey(tc.function, windowEvent(true, map[string]string{"b": "2", "a": "1"})) != got {
				t.Fatalf("the hash must follow the state, and only the state: %q, %q", got, other)
			}
		})
	}
}

func TestNewRefusesNilFunctions(t *testing.T) {
	fold := func(_ context.Context, s int, _ string) (int, error) { return s + 1, nil }
	final := func(context.Context, *eventscan.WindowEvent, int) error { return nil }
	seq := func(r string) string { return r }
	if _, err := New[string, int](sevents.SourceKinesis, nil, final, seq); err == nil || !strings.Contains(err.Error(), "fold function is nil") {
		t.Fatalf("nil fold: %v", err)
	}
	if _, err := New(sevents.SourceDynamoDB, fold, nil, seq); err == nil || !strings.Contains(err.Error(), "dynamodb window handler: final function is nil") {
		t.Fatalf("nil final: %v", err)
	}
	h, err := New(sevents.SourceKinesis, fold, final, seq)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Step(context.Background(), "1"); err == nil || !strings.Contains(err.Error(), "outside a window invoke") {
		t.Fatalf("Step outside an invoke: %v", err)
	}
	if _, _, ok := Current(context.Background()); ok {
		t.Fatal("Current found a window in a bare context")
	}
}
