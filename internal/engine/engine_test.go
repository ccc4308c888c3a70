package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/batch"
)

// items makes one item per key letter: "aab" is three items, keys a, a, b.
func items(keys string) []Item {
	out := make([]Item, len(keys))
	for i, k := range keys {
		out[i] = Item{ID: fmt.Sprint(i), Key: string(k)}
	}
	return out
}

// outcomes parses "s f -" as Succeeded, Failed, NotAttempted.
func outcomes(s string) []batch.Outcome {
	out := make([]batch.Outcome, len(s))
	for i, c := range s {
		switch c {
		case 's':
			out[i] = Succeeded
		case 'f':
			out[i] = Failed
		case '-':
			out[i] = NotAttempted
		}
	}
	return out
}

func TestReport(t *testing.T) {
	tests := []struct {
		name     string
		policy   Policy
		keys     string
		outcomes string
		want     []int
	}{
		{"independent all ok", Independent, "abcd", "ssss", nil},
		{"independent every failure and unattempted", Independent, "abcd", "fsf-", []int{0, 2, 3}},
		{"ordered reports failure and everything after", Ordered, "abab", "sf--", []int{1, 2, 3}},
		{"ordered later success after failure still reported", Ordered, "abab", "sfss", []int{1, 2, 3}},
		{"ordered all ok", Ordered, "abab", "ssss", nil},
		{"per group reports only the failed group onwards", OrderedPerGroup, "abab", "sf-s", []int{1, 2, 3}},
		{"per group two groups fail", OrderedPerGroup, "abab", "fs-f", []int{0, 2, 3}},
		{"stream reports the first failure only", Stream, "aaaa", "ssf-", []int{2}},
		{"stream first record failed", Stream, "aaaa", "f---", []int{0}},
		{"stream not attempted is reported", Stream, "aaaa", "ss--", []int{2}},
		{"stream per key lowest non-success", StreamPerKey, "abab", "sfsf", []int{1}},
		{"stream per key unattempted below failure", StreamPerKey, "abab", "s-sf", []int{1}},
		{"partition reports failed and later of that partition", PerPartition, "aabb", "f-sf", []int{0, 1, 3}},
		{"partition later success in failed partition reported", PerPartition, "aaab", "sfss", []int{1, 2}},
		{"empty", Stream, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Report(tt.policy, items(tt.keys), outcomes(tt.outcomes))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Report(%v, %q) = %v, want %v", tt.policy, tt.outcomes, got, tt.want)
			}
		})
	}
}

// failOn returns a process func failing the listed indexes and recording calls.
func failOn(fail ...int) (Process, *[]int) {
	var mu sync.Mutex
	calls := []int{}
	return func(ctx context.Context, w, i int) error {
		mu.Lock()
		calls = append(calls, i)
		mu.Unlock()
		if slices.Contains(fail, i) {
			return fmt.Errorf("record %d failed", i)
		}
		return nil
	}, &calls
}

func TestRunPolicies(t *testing.T) {
	tests := []struct {
		name        string
		policy      Policy
		concurrency int
		keys        string
		fail        []int
		wantCalls   []int // sorted
		want        string
		wantReport  []int
	}{
		{"stream stops at first failure", Stream, 1, "abcdef", []int{2}, []int{0, 1, 2}, "ssf---", []int{2}},
		{"ordered stops everything", Ordered, 1, "ababab", []int{1}, []int{0, 1}, "sf----", []int{1, 2, 3, 4, 5}},
		{"per group skips only failed group", OrderedPerGroup, 1, "ababab", []int{1}, []int{0, 1, 2, 4}, "sfs-s-", []int{1, 3, 5}},
		{"per group concurrent", OrderedPerGroup, 4, "ababab", []int{1}, []int{0, 1, 2, 4}, "sfs-s-", []int{1, 3, 5}},
		{"independent runs all", Independent, 1, "abcdef", []int{1, 4}, []int{0, 1, 2, 3, 4, 5}, "sfssfs", []int{1, 4}},
		{"independent concurrent", Independent, 3, "abcdef", []int{1, 4}, []int{0, 1, 2, 3, 4, 5}, "sfssfs", []int{1, 4}},
		{"partition stops its partition only", PerPartition, 2, "aabbaa", []int{1}, []int{0, 1, 2, 3}, "sfss--", []int{1, 4, 5}},
		{"stream per key sequential", StreamPerKey, 1, "abab", []int{1}, []int{0, 1}, "sf--", []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, calls := failOn(tt.fail...)
			res := Run(context.Background(), items(tt.keys), Config{Policy: tt.policy, Concurrency: tt.concurrency}, p)
			got := slices.Sorted(slices.Values(*calls))
			if !slices.Equal(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
			if !slices.Equal(res.Outcomes, outcomes(tt.want)) {
				t.Errorf("outcomes = %v, want %v", res.Outcomes, outcomes(tt.want))
			}
			if !slices.Equal(res.Report, tt.wantReport) {
				t.Errorf("report = %v, want %v", res.Report, tt.wantReport)
			}
			if res.Err != nil {
				t.Errorf("unexpected function error %v", res.Err)
			}
			for i, o := range res.Outcomes {
				if o != Succeeded && res.Errors[i] == nil {
					t.Errorf("record %d is %v without an error", i, o)
				}
			}
		})
	}
}

func TestRunOrderPerKeyUnderConcurrency(t *testing.T) {
	const n = 2000
	its := make([]Item, n)
	for i := range its {
		its[i] = Item{ID: fmt.Sprint(i), Key: fmt.Sprint(i % 7)}
	}
	for _, policy := range []Policy{OrderedPerGroup, StreamPerKey, PerPartition} {
		t.Run(policy.String(), func(t *testing.T) {
			var mu sync.Mutex
			last := map[string]int{}
			var inflight sync.Map
			res := Run(context.Background(), its, Config{Policy: policy, Concurrency: 4}, func(ctx context.Context, w, i int) error {
				k := its[i].Key
				if _, busy := inflight.LoadOrStore(k, true); busy {
					return fmt.Errorf("key %s ran concurrently", k)
				}
				defer inflight.Delete(k)
				mu.Lock()
				defer mu.Unlock()
				if prev, ok := last[k]; ok && prev > i {
					return fmt.Errorf("key %s out of order: %d after %d", k, i, prev)
				}
				last[k] = i
				return nil
			})
			if res.Succeeded != n {
				t.Fatalf("succeeded %d of %d: %v", res.Succeeded, n, res.Err)
			}
		})
	}
}

func TestRunStreamPerKeyDoesNotStartPastLowestFailure(t *testing.T) {
	// Key a fails at index 0; key b's records after index 0 need not run.
	var ran atomic.Int64
	res := Run(context.Background(), items("abbb"), Config{Policy: StreamPerKey, Concurrency: 1}, func(ctx context.Context, w, i int) error {
		ran.Add(1)
		if i == 0 {
			return errors.New("fail")
		}
		return nil
	})
	if ran.Load() != 1 {
		t.Fatalf("ran %d records, want 1", ran.Load())
	}
	if res.Err == nil || !errors.Is(res.Err, batch.ErrNoProgress) {
		t.Fatalf("want batch.ErrNoProgress, got %v", res.Err)
	}
}

func TestRunNoProgress(t *testing.T) {
	p, _ := failOn(0, 1)
	res := Run(context.Background(), items("ab"), Config{Policy: Independent}, p)
	if !errors.Is(res.Err, batch.ErrNoProgress) || res.Report != nil {
		t.Fatalf("all failed: want batch.ErrNoProgress and no report, got %v %v", res.Err, res.Report)
	}
	if !strings.Contains(res.Err.Error(), "record 0") {
		t.Fatalf("error should name the first failed record: %v", res.Err)
	}
	res = Run(context.Background(), items("ab"), Config{Policy: Independent, PartialResponseWhenNoneSucceed: true}, p)
	if res.Err != nil || !slices.Equal(res.Report, []int{0, 1}) {
		t.Fatalf("PartialResponseWhenNoneSucceed: got err %v report %v", res.Err, res.Report)
	}
	res = Run(context.Background(), nil, Config{Policy: Stream}, p)
	if res.Err != nil || len(res.Report) != 0 {
		t.Fatalf("empty batch: got err %v report %v", res.Err, res.Report)
	}
}

func TestRunPanicFailsOnlyThatRecord(t *testing.T) {
	res := Run(context.Background(), items("abc"), Config{Policy: Independent}, func(ctx context.Context, w, i int) error {
		if i == 1 {
			panic("kaboom")
		}
		return nil
	})
	var pe *batch.PanicError
	if !errors.As(res.Errors[1], &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Fatalf("record 1: want *batch.PanicError with stack, got %#v", res.Errors[1])
	}
	if !slices.Equal(res.Report, []int{1}) || res.Succeeded != 2 {
		t.Fatalf("report %v succeeded %d", res.Report, res.Succeeded)
	}
}

func TestRunDeadlineGuard(t *testing.T) {
	// A fake clock: each record takes 100ms; the deadline leaves room for 3
	// records before the 250ms margin.
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := base
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	dl, _ := ctx.Deadline()
	// Translate: the guard compares now() with deadline-margin, so put the
	// fake clock just 550ms before the real deadline.
	clock = dl.Add(-550 * time.Millisecond)
	for _, policy := range []Policy{Stream, Independent, OrderedPerGroup} {
		t.Run(policy.String(), func(t *testing.T) {
			mu.Lock()
			clock = dl.Add(-550 * time.Millisecond)
			mu.Unlock()
			var handlerDeadline time.Time
			res := Run(ctx, items("abcdef"), Config{Policy: policy, Margin: 250 * time.Millisecond, Now: now}, func(c context.Context, w, i int) error {
				handlerDeadline, _ = c.Deadline()
				mu.Lock()
				clock = clock.Add(100 * time.Millisecond)
				mu.Unlock()
				return nil
			})
			if res.Succeeded != 3 || res.NotAttempted != 3 {
				t.Fatalf("succeeded %d not attempted %d, want 3 and 3", res.Succeeded, res.NotAttempted)
			}
			for i := 3; i < 6; i++ {
				if !errors.Is(res.Errors[i], batch.ErrDeadline) {
					t.Fatalf("record %d: want batch.ErrDeadline, got %v", i, res.Errors[i])
				}
			}
			if want := dl.Add(-250 * time.Millisecond); !handlerDeadline.Equal(want) {
				t.Fatalf("handler deadline %v, want %v", handlerDeadline, want)
			}
			wantReport := map[Policy][]int{Stream: {3}, Independent: {3, 4, 5}, OrderedPerGroup: {3, 4, 5}}[policy]
			if !slices.Equal(res.Report, wantReport) {
				t.Fatalf("report %v, want %v", res.Report, wantReport)
			}
		})
	}
	_ = base
}

func TestRunDeadlineBeforeFirstRecordIsFunctionError(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(100*time.Millisecond))
	defer cancel()
	called := false
	res := Run(ctx, items("ab"), Config{Policy: Stream, Margin: time.Second}, func(context.Context, int, int) error {
		called = true
		return nil
	})
	if called {
		t.Fatal("no record may start inside the margin")
	}
	if !errors.Is(res.Err, batch.ErrNoProgress) || !errors.Is(res.Err, batch.ErrDeadline) {
		t.Fatalf("want batch.ErrNoProgress wrapping batch.ErrDeadline, got %v", res.Err)
	}
}

func TestNoteRetryCountsAttemptsAndLogsAtDebug(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	busy := errors.New("busy")
	const n = 60
	its := make([]Item, n)
	for i := range its {
		its[i] = Item{ID: fmt.Sprint("id-", i), Key: fmt.Sprint(i % 5)}
	}
	for _, tt := range []struct {
		policy      Policy
		concurrency int
	}{{Independent, 4}, {PerPartition, 3}, {Stream, 1}} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			buf.Reset()
			res := Run(context.Background(), its, Config{Policy: tt.policy, Concurrency: tt.concurrency, Logger: logger, Source: "test"},
				func(ctx context.Context, w, i int) error {
					for a := 1; a <= i%3; a++ {
						NoteRetry(ctx, a, busy, time.Duration(a)*time.Millisecond)
					}
					return nil
				})
			want := 0
			for i := range its {
				want += i % 3
				if got := res.Attempts(i); got != 1+i%3 {
					t.Fatalf("record %d: %d attempts, want %d", i, got, 1+i%3)
				}
			}
			if res.Retried != want {
				t.Fatalf("Retried %d, want %d", res.Retried, want)
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != want+1 {
				t.Fatalf("want %d retry lines and a summary, got %d", want, len(lines))
			}
			var retry, sum map[string]any
			for _, l := range lines {
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatal(err)
				}
				if m["record"] == "id-2" && m["attempt"] == 2.0 {
					retry = m
				}
				if m["msg"] == "sluice: batch done" {
					sum = m
				}
			}
			if retry == nil || retry["level"] != "DEBUG" || retry["error"] != "busy" || retry["wait"] != float64(2*time.Millisecond) || retry["key"] != "2" {
				t.Fatalf("no debug line for the second retry of id-2 with its error and wait: %s", buf.String())
			}
			if sum == nil || sum["retries"] != float64(want) {
				t.Fatalf("summary line should count %d retries: %v", want, sum)
			}
		})
	}
	NoteRetry(context.Background(), 1, busy, time.Second) // outside a Run: nothing to count
}

func TestAttemptsOfRecordsNotRun(t *testing.T) {
	p, _ := failOn(1)
	res := Run(context.Background(), items("aaa"), Config{Policy: Stream}, p)
	if res.Attempts(0) != 1 || res.Attempts(1) != 1 || res.Attempts(2) != 0 || res.Retries != nil {
		t.Fatalf("attempts %d %d %d retries %v", res.Attempts(0), res.Attempts(1), res.Attempts(2), res.Retries)
	}
}

func TestProcessContextKeepsParentValuesAndCancellation(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	res := Run(parent, items("abc"), Config{Policy: Independent, Concurrency: 2}, func(ctx context.Context, w, i int) error {
		if ctx.Value(key{}) != "v" {
			return errors.New("parent value lost")
		}
		if i == 0 {
			cancel()
		}
		<-ctx.Done() // cancelling the invocation reaches every record
		return nil
	})
	if res.Succeeded != 3 {
		t.Fatalf("outcomes %v errors %v", res.Outcomes, res.Errors)
	}
}

func TestNoteSkipCountsSucceededDuplicates(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	// Records 0 and 2 are duplicates; record 3 is marked but then fails,
	// so it is a failure, not a duplicate.
	res := Run(context.Background(), items("abcd"), Config{Policy: Independent, Concurrency: 2, Logger: logger, Source: "test"},
		func(ctx context.Context, w, i int) error {
			if i != 1 {
				NoteSkip(ctx, Skip{Reason: SkipDuplicate, Key: "k" + strconv.Itoa(i)})
			}
			if i == 3 {
				return errors.New("boom")
			}
			return nil
		})
	if res.Duplicated != 2 || !res.Duplicate(0) || res.Duplicate(1) || !res.Duplicate(2) || res.Duplicate(3) {
		t.Fatalf("Duplicated %d, marks %v, outcomes %v", res.Duplicated, res.Skips, res.Outcomes)
	}
	if s, ok := res.Skipped(2); !ok || s.Key != "k2" {
		t.Fatalf("Skipped(2) = %v %v", s, ok)
	}
	var sum map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "sluice: batch done" {
			sum = m
		}
	}
	if sum == nil || sum["duplicates"] != 2.0 {
		t.Fatalf("summary line should count 2 duplicates: %s", buf.String())
	}
	none := Run(context.Background(), items("ab"), Config{Policy: Stream}, func(context.Context, int, int) error { return nil })
	if none.Duplicated != 0 || none.Skips != nil || none.Duplicate(0) {
		t.Fatalf("no duplicates expected: %+v", none)
	}
	NoteSkip(context.Background(), Skip{Reason: SkipDuplicate}) // outside a Run: nothing to mark
}

// TestParkAndAfter: parked records count as succeeded, so a stream goes on
// past them; the After hook sees them all at once, and a record whose park
// it revokes is reported as failed with the hook's error.
func TestParkAndAfter(t *testing.T) {
	sendErr := errors.New("dlq down")
	for _, tc := range []struct {
		name        string
		policy      Policy
		revoke      map[int]bool
		wantReport  []int
		wantParked  []int
		wantErr     bool
		quarantined int
	}{
		{"stream goes on past parked records", Stream, nil, []int{4}, []int{1, 3}, false, 2},
		{"stream: a revoked park is the lowest failure", Stream, map[int]bool{3: true}, []int{3}, []int{1}, false, 1},
		{"independent: only the revoked record", Independent, map[int]bool{1: true}, []int{1, 4}, []int{3}, false, 1},
		{"ordered: revoked record and every later one", Ordered, map[int]bool{1: true}, []int{1, 2, 3, 4}, []int{3}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []int
			res := Run(context.Background(), items("abcde"), Config{
				Policy: tc.policy, Concurrency: 2,
				After: func(ctx context.Context, res *Result) {
					for i := range res.Outcomes {
						if res.Park(i) != nil {
							seen = append(seen, i)
							if tc.revoke[i] {
								res.Unpark(i, sendErr)
							}
						}
					}
				},
			}, func(ctx context.Context, w, i int) error {
				switch i {
				case 1, 3:
					Park(ctx, "poison "+strconv.Itoa(i))
					return nil
				case 4:
					Park(ctx, "parked then failed") // a failure after Park is a failure
					return errors.New("boom")
				}
				return nil
			})
			if len(seen) != 2 || seen[0] != 1 || seen[1] != 3 {
				t.Fatalf("After saw parked %v, want [1 3]", seen)
			}
			if !slices.Equal(res.Report, tc.wantReport) {
				t.Fatalf("report %v, want %v (outcomes %v)", res.Report, tc.wantReport, res.Outcomes)
			}
			var parked []int
			for i := range res.Outcomes {
				if res.Park(i) != nil {
					parked = append(parked, i)
				}
			}
			if !slices.Equal(parked, tc.wantParked) || res.Quarantined != tc.quarantined {
				t.Fatalf("parked %v (%d), want %v (%d)", parked, res.Quarantined, tc.wantParked, tc.quarantined)
			}
			for i := range tc.revoke {
				if res.Outcomes[i] != Failed || !errors.Is(res.Error(i), sendErr) {
					t.Fatalf("revoked record %d: outcome %v error %v", i, res.Outcomes[i], res.Error(i))
				}
			}
			if res.Succeeded+res.Failed+res.NotAttempted != 5 {
				t.Fatalf("counts do not add up: %+v", res)
			}
		})
	}
	Park(context.Background(), "x") // outside a Run: nothing to mark
}

// TestUnparkEveryRecordIsNoProgress: when every record was parked and every
// send failed, nothing succeeded: the batch is a function error, so Lambda
// can bisect.
func TestUnparkEveryRecordIsNoProgress(t *testing.T) {
	res := Run(context.Background(), items("ab"), Config{Policy: Stream, After: func(ctx context.Context, res *Result) {
		res.Unpark(0, errors.New("dlq down"))
		res.Unpark(1, errors.New("dlq down"))
	}}, func(ctx context.Context, w, i int) error { Park(ctx, i+1); return nil })
	if res.Err == nil || res.Succeeded != 0 || res.Quarantined != 0 {
		t.Fatalf("want a function error: %+v", res)
	}
}

// An After hook that fails a record which succeeded (its idempotency
// complete did not land) gets it reported, with the policy's rules: on a
// FIFO group the group's later records go back with it. Index tells
// Process which record it runs.
func TestResultFailInAfter(t *testing.T) {
	items := []Item{{ID: "a", Key: "g"}, {ID: "b", Key: "g"}, {ID: "c", Key: "h"}}
	seen := make([]int, len(items))
	res := Run(context.Background(), items, Config{Policy: OrderedPerGroup, After: func(_ context.Context, r *Result) {
		r.Fail(0, errors.New("complete lost"))
		r.Fail(0, errors.New("twice")) // not succeeded any more: left alone
	}}, func(ctx context.Context, _, i int) error {
		j, ok := Index(ctx)
		if !ok {
			t.Error("Index: not in a Run")
		}
		seen[i] = j
		return nil
	})
	if fmt.Sprint(res.Report) != "[0 1]" || res.Succeeded != 2 || res.Failed != 1 || res.Error(0).Error() != "complete lost" {
		t.Fatalf("report %v, succeeded %d, failed %d, err %v; want [0 1], 2, 1, complete lost", res.Report, res.Succeeded, res.Failed, res.Error(0))
	}
	if fmt.Sprint(seen) != "[0 1 2]" {
		t.Fatalf("Index saw %v; want [0 1 2]", seen)
	}
	if _, ok := Index(context.Background()); ok {
		t.Fatal("Index outside a Run: ok")
	}
}
