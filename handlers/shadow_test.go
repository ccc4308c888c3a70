package handlers

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/idempotency"
)

// shadowEnv is fnEnv plus SLUICE_SHADOW=v.
func shadowEnv(v string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if k == EnvShadow {
			return v, true
		}
		return fnEnv(k)
	}
}

// A shadow handler tells its records so, and claims their keys under
// "shadow#": the records production completed run again in shadow (once),
// and production's completed keys are untouched; a production handler on
// the same store skips what it did, and runs with Shadow false.
func TestShadowReplayKeysAndContext(t *testing.T) {
	raw, ids := sqsEvent(t, false, [2]string{"", "ok"}, [2]string{"", "ok"})
	store := idempotency.NewMemoryStore()
	type run struct {
		id     string
		shadow bool
	}
	var mu sync.Mutex
	var runs []run
	build := func(env func(string) (string, bool)) *SQSHandler[msg] {
		var rep BatchReport
		h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
			mu.Lock()
			runs = append(runs, run{r.MessageID(), Shadow(ctx)})
			mu.Unlock()
			return nil
		}, append(idemOpts(store, &rep), withLookupEnv(env))...)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	production, shadow := build(fnEnv), build(shadowEnv("1"))
	for _, step := range []struct {
		name string
		h    *SQSHandler[msg]
		want []run // the runs this step adds
	}{
		{"production", production, []run{{ids[0], false}, {ids[1], false}}},
		{"production again: duplicates", production, nil},
		{"shadow: runs each once more, in shadow", shadow, []run{{ids[0], true}, {ids[1], true}}},
		{"shadow again: duplicates in shadow", shadow, nil},
		{"production after the shadow: still duplicates", production, nil},
	} {
		before := len(runs)
		out, err := step.h.Invoke(context.Background(), raw)
		if err != nil || len(failures(t, out)) != 0 {
			t.Fatalf("%s: %s %v", step.name, out, err)
		}
		got := runs[before:]
		if len(got) != len(step.want) {
			t.Fatalf("%s: runs %v, want %v", step.name, got, step.want)
		}
		for _, w := range step.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Fatalf("%s: runs %v, want %v", step.name, got, step.want)
			}
		}
	}
	for _, id := range ids {
		for _, key := range []string{"orders-fn#" + id, "shadow#orders-fn#" + id} {
			if !completed(t, store, key) {
				t.Errorf("no completed record under %s", key)
			}
		}
	}
}

func TestShadowOutsideAHandler(t *testing.T) {
	if Shadow(context.Background()) {
		t.Fatal("Shadow of a plain context is true")
	}
}

func TestShadowEnvValues(t *testing.T) {
	for _, tt := range []struct {
		v      string
		shadow bool
		err    string
	}{
		{"", false, ""}, {"0", false, ""}, {"false", false, ""}, {"1", true, ""}, {"true", true, ""},
		{"yes", false, `SLUICE_SHADOW="yes"`},
	} {
		var got bool
		h, err := NewSQS(func(ctx context.Context, r SQSRecord[msg]) error {
			got = Shadow(ctx)
			return nil
		}, WithLogger(slog.New(slog.DiscardHandler)), withLookupEnv(shadowEnv(tt.v)))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("SLUICE_SHADOW=%q: error %v, want %q", tt.v, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := sqsEvent(t, false, [2]string{"", "ok"})
		if _, err := h.Invoke(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
		if got != tt.shadow {
			t.Errorf("SLUICE_SHADOW=%q: Shadow(ctx) = %v, want %v", tt.v, got, tt.shadow)
		}
	}
}
