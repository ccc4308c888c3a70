package handlers

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/idempotency"
)

// nameEnv is an environment with only the function's name set.
func nameEnv(name string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == EnvFunctionName {
			return name, true
		}
		return "", false
	}
}

// TestIdempotencyKeyPrefix: keys start with the function's name unless a
// prefix is given. Renamed, a function without a prefix runs every record
// of its retention again; with one, its records stay duplicates; with the
// old name as its prefix, it keeps the keys a table already holds; a
// shadow replay's keys go under "shadow#" and the prefix.
func TestIdempotencyKeyPrefix(t *testing.T) {
	sb := &sevents.SQSBuilder{}
	sb.Add(`{"id":1}`).Add(`{"id":2}`)
	raw, err := sevents.MarshalEvent(sb.Event())
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{sb.Event().Records[0].MessageId, sb.Event().Records[1].MessageId}
	store := idempotency.NewMemoryStore()
	runs := 0
	build := func(env func(string) (string, bool), opts ...Option) *SQSHandler[map[string]any] {
		h, err := NewSQS(func(ctx context.Context, r SQSRecord[map[string]any]) error { runs++; return nil },
			append([]Option{WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(env), WithConcurrency(1), WithIdempotency(store)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, step := range []struct {
		name string
		h    *SQSHandler[map[string]any]
		runs int
		keys []string // completed afterwards
	}{
		{"named orders-v1, no prefix", build(nameEnv("orders-v1")), 2, []string{"orders-v1#"}},
		{"renamed orders-v2, no prefix: runs again", build(nameEnv("orders-v2")), 2, []string{"orders-v2#"}},
		{"orders-v2 with the old name as its prefix: the keys the table holds", build(nameEnv("orders-v2"), WithIdempotencyKeyPrefix("orders-v1")), 0, nil},
		{"prefix payments", build(nameEnv("orders-v2"), WithIdempotencyKeyPrefix("payments")), 2, []string{"payments#"}},
		{"renamed orders-v3, prefix payments: duplicates", build(nameEnv("orders-v3"), WithIdempotencyKeyPrefix("payments")), 0, nil},
		{"no name and no prefix: bare ids, new keys", build(nameEnv("")), 2, []string{""}},
		{"shadow, prefix payments", build(shadowEnv("1"), WithIdempotencyKeyPrefix("payments")), 2, []string{"shadow#payments#"}},
	} {
		runs = 0
		out, err := step.h.Invoke(context.Background(), raw)
		if err != nil || len(failures(t, out)) != 0 {
			t.Fatalf("%s: %s %v", step.name, out, err)
		}
		if runs != step.runs {
			t.Errorf("%s: the function ran %d times, want %d", step.name, runs, step.runs)
		}
		for _, p := range step.keys {
			for _, id := range ids {
				if !completed(t, store, p+id) {
					t.Errorf("%s: no completed record under %s", step.name, p+id)
				}
			}
		}
	}
	if _, err := NewSQS(func(ctx context.Context, r SQSRecord[map[string]any]) error { return nil },
		WithIdempotency(store), WithIdempotencyKeyPrefix("")); err == nil || !strings.Contains(err.Error(), "WithIdempotencyKeyPrefix") {
		t.Errorf("an empty prefix: %v, want an error naming the option", err)
	}
}
