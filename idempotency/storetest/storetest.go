// Package storetest is the conformance suite every idempotency.Store must
// pass, as watermill's pubsub tests are for Pub/Subs. A store's test calls
//
//	storetest.Run(t, func(t *testing.T) idempotency.Store { return newStore(t) })
//
// The suite drives time through each call (Claim.Now, WithClock), so it
// needs no sleeping, except for the cases of Do that wait for another
// claim or renew their own (up to 3 s of real time each,
// run in parallel), and it uses keys unique to each subtest, so the stores
// may share one table or server. Times are near the real clock, so a
// database that deletes expired records (DynamoDB TTL) leaves them alone.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// Run runs the whole suite; newStore is called once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s idempotency.Store)
	}{
		{"ClaimFreeKey", testClaimFreeKey},
		{"ClaimLiveInProgress", testClaimLiveInProgress},
		{"ClaimAfterLeaseExpiry", testClaimAfterLeaseExpiry},
		{"CompleteThenDuplicate", testCompleteThenDuplicate},
		{"CompletedExpires", testCompletedExpires},
		{"CompletedOutlivesLease", testCompletedOutlivesLease},
		{"EmptyResult", testEmptyResult},
		{"ReleaseFreesKey", testReleaseFreesKey},
		{"PayloadHashStored", testPayloadHashStored},
		{"FencingComplete", testFencingComplete},
		{"FencingRelease", testFencingRelease},
		{"ExtendMovesLease", testExtendMovesLease},
		{"ExtendLapsedUntaken", testExtendLapsedUntaken},
		{"FencingExtend", testFencingExtend},
		{"ExtendCompleted", testExtendCompleted},
		{"CompleteUnknownKey", testCompleteUnknownKey},
		{"DoOnce", testDoOnce},
		{"DoFailureReleases", testDoFailureReleases},
		{"DoPayloadMismatch", testDoPayloadMismatch},
		{"DoConcurrent", testDoConcurrent},
		{"DoWaitsForLapse", testDoWaitsForLapse},
		{"DoWaitsForCompletion", testDoWaitsForCompletion},
		{"DoRenewsLease", testDoRenewsLease},
		{"LongKeys", testLongKeys},
	}
	// A store that reads many keys at once (idempotency.Getter) is held
	// to it too.
	if _, ok := newStore(t).(idempotency.Getter); ok {
		tests = append(tests, struct {
			name string
			fn   func(t *testing.T, s idempotency.Store)
		}{"GetMany", testGetMany})
	}
	// A store that completes a group of keys at once
	// (idempotency.GroupCompleter) is held to it too.
	if _, ok := newStore(t).(idempotency.GroupCompleter); ok {
		tests = append(tests, []struct {
			name string
			fn   func(t *testing.T, s idempotency.Store)
		}{
			{"CompleteAll", testCompleteAll},
			{"CompleteAllOneLost", testCompleteAllOneLost},
			{"CompleteAllMany", testCompleteAllMany},
			{"CompleteAllManyOneLost", testCompleteAllManyOneLost},
		}...)
	}
	// A store that keeps lane checkpoints (idempotency.LaneStore) is held
	// to them too.
	if _, ok := newStore(t).(idempotency.LaneStore); ok {
		tests = append(tests, []struct {
			name string
			fn   func(t *testing.T, s idempotency.Store)
		}{
			{"LaneClaimFree", testLaneClaimFree},
			{"LaneSaveThenRefused", testLaneSaveThenRefused},
			{"LaneRelease", testLaneRelease},
			{"LaneLapseAndFencing", testLaneLapseAndFencing},
			{"LaneUpto", testLaneUpto},
			{"LaneExpired", testLaneExpired},
			{"LaneExtend", testLaneExtend},
			{"LaneOwnerAgain", testLaneOwnerAgain},
			{"LaneLongKey", testLaneLongKey},
		}...)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

var keyCounter atomic.Int64

func key(t *testing.T) string {
	return fmt.Sprintf("%s#%d#%d", t.Name(), time.Now().UnixNano(), keyCounter.Add(1))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// base is a time near the real clock, whole seconds.
func base() time.Time { return time.Now().Truncate(time.Second) }

func claim(k, owner string, now time.Time, lease time.Duration) idempotency.Claim {
	return idempotency.Claim{Key: k, Owner: owner, Now: now, LeaseUntil: now.Add(lease), Expires: now.Add(time.Hour)}
}

func mustClaim(t *testing.T, s idempotency.Store, c idempotency.Claim) {
	t.Helper()
	rec, err := s.Claim(ctx(t), c)
	if err != nil {
		t.Fatalf("Claim(%s by %s): %v", c.Key, c.Owner, err)
	}
	if rec != nil {
		t.Fatalf("Claim(%s by %s) found %+v, want the claim taken", c.Key, c.Owner, *rec)
	}
}

func mustFind(t *testing.T, s idempotency.Store, c idempotency.Claim) idempotency.Record {
	t.Helper()
	rec, err := s.Claim(ctx(t), c)
	if err != nil {
		t.Fatalf("Claim(%s by %s): %v", c.Key, c.Owner, err)
	}
	if rec == nil {
		t.Fatalf("Claim(%s by %s) took the key, want the existing record", c.Key, c.Owner)
	}
	if rec.Key != c.Key {
		t.Errorf("record key %q, want %q", rec.Key, c.Key)
	}
	return *rec
}

func testClaimFreeKey(t *testing.T, s idempotency.Store) {
	mustClaim(t, s, claim(key(t), "a", base(), time.Minute))
}

func testClaimLiveInProgress(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Minute))
	rec := mustFind(t, s, claim(k, "b", now.Add(59*time.Second), time.Minute))
	if rec.Status != idempotency.StatusInProgress || rec.Owner != "a" {
		t.Errorf("found %v owned by %q, want INPROGRESS owned by a", rec.Status, rec.Owner)
	}
	if want := now.Add(time.Minute); !rec.LeaseUntil.Equal(want) {
		t.Errorf("LeaseUntil %v, want %v", rec.LeaseUntil, want)
	}
	// Millisecond precision: one millisecond before the lease ends it is live.
	mustFind(t, s, claim(k, "c", now.Add(time.Minute-time.Millisecond), time.Minute))
	// At the lease's end it is still live (the condition is lease < now).
	mustFind(t, s, claim(k, "c", now.Add(time.Minute), time.Minute))
}

func testClaimAfterLeaseExpiry(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Second))
	mustClaim(t, s, claim(k, "b", now.Add(time.Second+time.Millisecond), time.Minute))
	rec := mustFind(t, s, claim(k, "c", now.Add(2*time.Second), time.Minute))
	if rec.Owner != "b" {
		t.Errorf("owner %q, want b", rec.Owner)
	}
}

func testCompleteThenDuplicate(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Minute))
	exp := now.Add(time.Hour)
	if err := s.Complete(ctx(t), k, "a", []byte(`{"ok":1}`), exp); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	rec := mustFind(t, s, claim(k, "b", now.Add(time.Second), time.Minute))
	if rec.Status != idempotency.StatusCompleted || string(rec.Result) != `{"ok":1}` || !rec.Expires.Equal(exp) {
		t.Errorf("found %v %q expiring %v, want COMPLETED {\"ok\":1} expiring %v", rec.Status, rec.Result, rec.Expires, exp)
	}
	// Completing again by the same owner (a lost response retried) succeeds.
	if err := s.Complete(ctx(t), k, "a", []byte(`{"ok":1}`), exp); err != nil {
		t.Errorf("second Complete by the owner: %v", err)
	}
}

func testCompletedExpires(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Minute))
	if err := s.Complete(ctx(t), k, "a", []byte("r"), now.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	// Second precision: at the expiry second it still holds.
	mustFind(t, s, claim(k, "b", now.Add(10*time.Second+999*time.Millisecond), time.Minute))
	mustClaim(t, s, claim(k, "b", now.Add(11*time.Second), time.Minute))
}

func testCompletedOutlivesLease(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Second))
	if err := s.Complete(ctx(t), k, "a", []byte("r"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rec := mustFind(t, s, claim(k, "b", now.Add(time.Minute), time.Minute))
	if rec.Status != idempotency.StatusCompleted {
		t.Errorf("status %v, want COMPLETED: a completed record has no lease", rec.Status)
	}
}

func testEmptyResult(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Minute))
	if err := s.Complete(ctx(t), k, "a", nil, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rec := mustFind(t, s, claim(k, "b", now, time.Minute))
	if rec.Status != idempotency.StatusCompleted || len(rec.Result) != 0 {
		t.Errorf("found %v %q, want COMPLETED with no result", rec.Status, rec.Result)
	}
}

func testReleaseFreesKey(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "a", now, time.Hour))
	if err := s.Release(ctx(t), k, "a"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustClaim(t, s, claim(k, "b", now, time.Hour))
}

func testPayloadHashStored(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	c := claim(k, "a", now, time.Minute)
	c.PayloadHash = idempotency.PayloadHash([]byte("p1"))
	mustClaim(t, s, c)
	if rec := mustFind(t, s, claim(k, "b", now, time.Minute)); rec.PayloadHash != c.PayloadHash {
		t.Errorf("in progress: hash %q, want %q", rec.PayloadHash, c.PayloadHash)
	}
	if err := s.Complete(ctx(t), k, "a", []byte("r"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if rec := mustFind(t, s, claim(k, "b", now, time.Minute)); rec.PayloadHash != c.PayloadHash {
		t.Errorf("completed: hash %q, want %q", rec.PayloadHash, c.PayloadHash)
	}
}

// testFencingComplete is the race no Powertools store closes: A claims, A's
// lease expires, B claims, A's complete is refused and leaves B's claim
// alone, B completes.
func testFencingComplete(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "A", now, time.Second))
	later := now.Add(2 * time.Second)
	mustClaim(t, s, claim(k, "B", later, time.Minute))

	err := s.Complete(ctx(t), k, "A", []byte("from A"), now.Add(time.Hour))
	if !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("stale owner's Complete: %v, want ErrLeaseLost", err)
	}
	rec := mustFind(t, s, claim(k, "C", later.Add(time.Second), time.Minute))
	if rec.Status != idempotency.StatusInProgress || rec.Owner != "B" || rec.Result != nil {
		t.Fatalf("after the stale Complete: %v owned by %q with result %q, want B's claim untouched", rec.Status, rec.Owner, rec.Result)
	}
	if err := s.Complete(ctx(t), k, "B", []byte("from B"), later.Add(time.Hour)); err != nil {
		t.Fatalf("new owner's Complete: %v", err)
	}
	rec = mustFind(t, s, claim(k, "C", later.Add(time.Second), time.Minute))
	if rec.Status != idempotency.StatusCompleted || string(rec.Result) != "from B" {
		t.Errorf("final record %v %q, want COMPLETED \"from B\"", rec.Status, rec.Result)
	}
	if err := s.Complete(ctx(t), k, "A", []byte("from A"), now.Add(time.Hour)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("stale owner's Complete after B completed: %v, want ErrLeaseLost", err)
	}
}

func testFencingRelease(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "A", now, time.Second))
	later := now.Add(2 * time.Second)
	mustClaim(t, s, claim(k, "B", later, time.Minute))
	if err := s.Release(ctx(t), k, "A"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("stale owner's Release: %v, want ErrLeaseLost", err)
	}
	if rec := mustFind(t, s, claim(k, "C", later, time.Minute)); rec.Owner != "B" {
		t.Errorf("owner %q after the stale Release, want B", rec.Owner)
	}
}

// testExtendMovesLease: the owner's renewal moves the lease on, so a
// claim after the first lease finds the key still held.
func testExtendMovesLease(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "A", now, time.Second))
	until := now.Add(time.Minute + 250*time.Millisecond)
	if err := s.Extend(ctx(t), k, "A", until); err != nil {
		t.Fatalf("Extend by the owner: %v", err)
	}
	rec := mustFind(t, s, claim(k, "B", now.Add(2*time.Second), time.Minute))
	if rec.Status != idempotency.StatusInProgress || rec.Owner != "A" || !rec.LeaseUntil.Equal(until) {
		t.Errorf("found %v owned by %q until %v, want INPROGRESS owned by A until %v", rec.Status, rec.Owner, rec.LeaseUntil, until)
	}
	mustClaim(t, s, claim(k, "B", until.Add(time.Millisecond), time.Minute))
}

// testExtendLapsedUntaken: a lease that ran out but that nobody took over
// is still its owner's to renew.
func testExtendLapsedUntaken(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "A", now, time.Second))
	if err := s.Extend(ctx(t), k, "A", now.Add(time.Minute)); err != nil {
		t.Fatalf("Extend of a lapsed, untaken claim: %v", err)
	}
	if rec := mustFind(t, s, claim(k, "B", now.Add(2*time.Second), time.Minute)); rec.Owner != "A" {
		t.Errorf("owner %q, want A", rec.Owner)
	}
}

// testFencingExtend: a stale owner, overtaken after its lease ran out,
// cannot renew: its Extend fails with ErrLeaseLost and leaves the new
// owner's lease alone.
func testFencingExtend(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "A", now, time.Second))
	later := now.Add(2 * time.Second)
	mustClaim(t, s, claim(k, "B", later, 10*time.Second))
	if err := s.Extend(ctx(t), k, "A", later.Add(time.Hour)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("stale owner's Extend: %v, want ErrLeaseLost", err)
	}
	rec := mustFind(t, s, claim(k, "C", later.Add(time.Second), time.Minute))
	if rec.Owner != "B" || !rec.LeaseUntil.Equal(later.Add(10*time.Second)) {
		t.Errorf("after the stale Extend: owner %q until %v, want B until %v", rec.Owner, rec.LeaseUntil, later.Add(10*time.Second))
	}
	mustClaim(t, s, claim(k, "C", later.Add(11*time.Second), time.Minute))
}

// testExtendCompleted: a completed record has no lease to extend.
func testExtendCompleted(t *testing.T, s idempotency.Store) {
	k, now := key(t), base()
	mustClaim(t, s, claim(k, "A", now, time.Minute))
	if err := s.Complete(ctx(t), k, "A", []byte("r"), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Extend(ctx(t), k, "A", now.Add(time.Hour)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Extend of a completed record: %v, want ErrLeaseLost", err)
	}
	rec := mustFind(t, s, claim(k, "B", now.Add(time.Second), time.Minute))
	if rec.Status != idempotency.StatusCompleted || string(rec.Result) != "r" {
		t.Errorf("found %v %q, want the completed record untouched", rec.Status, rec.Result)
	}
}

func testCompleteUnknownKey(t *testing.T, s idempotency.Store) {
	k := key(t)
	if err := s.Complete(ctx(t), k, "A", []byte("r"), base().Add(time.Hour)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Complete of an unclaimed key: %v, want ErrLeaseLost", err)
	}
	if err := s.Release(ctx(t), k, "A"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Release of an unclaimed key: %v, want ErrLeaseLost", err)
	}
	if err := s.Extend(ctx(t), k, "A", base().Add(time.Minute)); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("Extend of an unclaimed key: %v, want ErrLeaseLost", err)
	}
	// None created a record.
	mustClaim(t, s, claim(k, "B", base(), time.Minute))
}

func testDoOnce(t *testing.T, s idempotency.Store) {
	k := key(t)
	runs := 0
	fn := func(context.Context) ([]byte, error) { runs++; return []byte("result"), nil }
	for i := range 3 {
		got, err := idempotency.Do(ctx(t), s, k, fn)
		if err != nil || string(got) != "result" {
			t.Fatalf("Do #%d = %q, %v; want \"result\", nil", i+1, got, err)
		}
	}
	if runs != 1 {
		t.Errorf("fn ran %d times, want 1", runs)
	}
}

func testDoFailureReleases(t *testing.T, s idempotency.Store) {
	k := key(t)
	boom := errors.New("boom")
	runs := 0
	if _, err := idempotency.Do(ctx(t), s, k, func(context.Context) ([]byte, error) { runs++; return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Do = %v, want fn's error", err)
	}
	got, err := idempotency.Do(ctx(t), s, k, func(context.Context) ([]byte, error) { runs++; return []byte("ok"), nil })
	if err != nil || string(got) != "ok" || runs != 2 {
		t.Errorf("retry after a failure: %q, %v, %d runs; want it to run at once", got, err, runs)
	}
}

func testDoPayloadMismatch(t *testing.T, s idempotency.Store) {
	k := key(t)
	ok := func(context.Context) ([]byte, error) { return []byte("ok"), nil }
	if _, err := idempotency.Do(ctx(t), s, k, ok, idempotency.WithPayload([]byte("p1"))); err != nil {
		t.Fatal(err)
	}
	if got, err := idempotency.Do(ctx(t), s, k, ok, idempotency.WithPayload([]byte("p1"))); err != nil || string(got) != "ok" {
		t.Errorf("same payload: %q, %v; want the stored result", got, err)
	}
	if _, err := idempotency.Do(ctx(t), s, k, ok, idempotency.WithPayload([]byte("p2"))); !errors.Is(err, idempotency.ErrPayloadMismatch) {
		t.Errorf("different payload: %v, want ErrPayloadMismatch", err)
	}
}

func testDoConcurrent(t *testing.T, s idempotency.Store) {
	const n = 16
	k := key(t)
	var runs atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	results := make([][]byte, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = idempotency.Do(ctx(t), s, k, func(context.Context) ([]byte, error) {
				runs.Add(1)
				return []byte("once"), nil
			})
		})
	}
	close(start)
	wg.Wait()
	if got := runs.Load(); got != 1 {
		t.Errorf("fn ran %d times for one key, want 1", got)
	}
	for i := range n {
		if errs[i] != nil && !errors.Is(errs[i], idempotency.ErrInProgress) {
			t.Errorf("Do #%d: %v, want nil or ErrInProgress", i, errs[i])
		}
		if errs[i] == nil && string(results[i]) != "once" {
			t.Errorf("Do #%d returned %q, want \"once\"", i, results[i])
		}
	}
}

// testGetMany: 250 keys (more than one DynamoDB request's worth), a third
// completed with results, a third in progress, a third never claimed.
func testGetMany(t *testing.T, s idempotency.Store) {
	g := s.(idempotency.Getter)
	now := base()
	prefix := key(t)
	keys := make([]string, 250)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s#%03d", prefix, i)
		switch i % 3 {
		case 0:
			mustClaim(t, s, claim(keys[i], "o", now, time.Minute))
			if err := s.Complete(ctx(t), keys[i], "o", []byte(fmt.Sprint("r", i)), now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		case 1:
			mustClaim(t, s, claim(keys[i], "o", now, time.Minute))
		}
	}
	got, err := g.Get(ctx(t), keys)
	if err != nil {
		t.Fatalf("Get(%d keys): %v", len(keys), err)
	}
	for i, k := range keys {
		r := got[k]
		switch i % 3 {
		case 0:
			if r == nil || r.Status != idempotency.StatusCompleted || string(r.Result) != fmt.Sprint("r", i) || r.Key != k {
				t.Fatalf("key %d: want completed with result r%d, got %+v", i, i, r)
			}
		case 1:
			if r == nil || r.Status != idempotency.StatusInProgress || r.Owner != "o" {
				t.Fatalf("key %d: want in progress by o, got %+v", i, r)
			}
		default:
			if r != nil {
				t.Fatalf("key %d was never claimed, got %+v", i, r)
			}
		}
	}
	if len(got) != 167 {
		t.Fatalf("Get returned %d records, want 167", len(got))
	}
	empty, err := g.Get(ctx(t), nil)
	if err != nil || len(empty) != 0 {
		t.Fatalf("Get(no keys) = %v, %v", empty, err)
	}
}

// longKeys are keys no store may refuse: an S3 notification's default key
// for a 1,000-byte object key of three-byte characters, URL-encoded
// (about 9,000 bytes), the same raw (about 3,000 bytes of UTF-8), and two
// keys of 4,000 bytes that differ only in their last byte.
func longKeys(t *testing.T) []string {
	base := key(t)
	name := strings.Repeat("\u7ea2", 333) + "x" // 1,000 bytes of UTF-8
	encoded := strings.ReplaceAll(url.QueryEscape(name), "+", "%20")
	long := base + "#" + strings.Repeat("k", 4000)
	return []string{
		base + "#bucket/" + encoded + "@0055AED6DCD90281E5",
		base + "#bucket/" + name + "@0055AED6DCD90281E5",
		long + "a", long + "b",
	}
}

// testLongKeys: keys far longer than any database's key limit are
// claimed, completed, found again and kept apart (a store keeps them by
// a digest, idempotency.StoredKey), and a Getter reads them back under
// the keys as given.
func testLongKeys(t *testing.T, s idempotency.Store) {
	now := base()
	keys := longKeys(t)
	for i, k := range keys {
		mustClaim(t, s, claim(k, "a", now, time.Minute))
		if err := s.Complete(ctx(t), k, "a", []byte(fmt.Sprint("r", i)), now.Add(time.Hour)); err != nil {
			t.Fatalf("Complete of a %d-byte key: %v", len(k), err)
		}
	}
	for i, k := range keys {
		rec := mustFind(t, s, claim(k, "b", now.Add(time.Second), time.Minute))
		if rec.Status != idempotency.StatusCompleted || string(rec.Result) != fmt.Sprint("r", i) {
			t.Errorf("key %d (%d bytes): found %v %q, want COMPLETED r%d: long keys must not share a record", i, len(k), rec.Status, rec.Result, i)
		}
	}
	// A claim refused and released under a long key.
	k := keys[0] + "#released"
	mustClaim(t, s, claim(k, "a", now, time.Minute))
	if err := s.Extend(ctx(t), k, "a", now.Add(2*time.Minute)); err != nil {
		t.Fatalf("Extend of a long key: %v", err)
	}
	if err := s.Release(ctx(t), k, "a"); err != nil {
		t.Fatalf("Release of a long key: %v", err)
	}
	mustClaim(t, s, claim(k, "b", now, time.Minute))
	g, ok := s.(idempotency.Getter)
	if !ok {
		return
	}
	got, err := g.Get(ctx(t), append(keys, k))
	if err != nil {
		t.Fatalf("Get of long keys: %v", err)
	}
	for i, k := range keys {
		if r := got[k]; r == nil || r.Key != k || string(r.Result) != fmt.Sprint("r", i) {
			t.Errorf("Get: key %d (%d bytes) read back as %+v, want its completed record under the key as given", i, len(k), r)
		}
	}
	if r := got[k]; r == nil || r.Status != idempotency.StatusInProgress {
		t.Errorf("Get: the claimed long key read back as %+v, want in progress", r)
	}
}

// testDoWaitsForLapse: the claim of an owner that died lapses at the end of
// its lease, on the real clock; Do, started before, waits and then runs fn.
func testDoWaitsForLapse(t *testing.T, s idempotency.Store) {
	k, now := key(t), time.Now()
	mustClaim(t, s, claim(k, "dead", now, 200*time.Millisecond))
	runs := 0
	got, err := idempotency.Do(ctx(t), s, k, func(context.Context) ([]byte, error) { runs++; return []byte("mine"), nil })
	if err != nil || string(got) != "mine" || runs != 1 {
		t.Fatalf("Do after a dead owner's claim: %q, %v, %d runs; want it to wait for the lapse and run once", got, err, runs)
	}
}

// testDoWaitsForCompletion: the owner completes while Do waits: Do returns
// the owner's result, without running fn.
func testDoWaitsForCompletion(t *testing.T, s idempotency.Store) {
	k, now := key(t), time.Now()
	mustClaim(t, s, claim(k, "owner", now, time.Minute))
	waiting := make(chan struct{})
	go func() {
		<-waiting
		time.Sleep(100 * time.Millisecond) // Do has made its first claim and waits
		if err := s.Complete(ctx(t), k, "owner", []byte("theirs"), time.Now().Add(time.Hour)); err != nil {
			t.Error(err)
		}
	}()
	close(waiting)
	runs := 0
	got, err := idempotency.Do(ctx(t), s, k, func(context.Context) ([]byte, error) { runs++; return []byte("mine"), nil })
	if err != nil || string(got) != "theirs" || runs != 0 {
		t.Fatalf("Do while the owner completes: %q, %v, %d runs; want the owner's result and no run", got, err, runs)
	}
}

// testDoRenewsLease: fn runs for three leases; its owner renews the
// claim, so another claimant finds it held throughout, and the record
// completes once.
func testDoRenewsLease(t *testing.T, s idempotency.Store) {
	k := key(t)
	const lease = time.Second
	var other error
	got, err := idempotency.Do(ctx(t), s, k, func(c context.Context) ([]byte, error) {
		time.Sleep(3 * lease)
		// Another invocation, which does not wait, finds the key held.
		_, other = idempotency.Do(c, s, k, func(context.Context) ([]byte, error) { return []byte("twice"), nil }, idempotency.WithWait(0))
		return []byte("once"), c.Err()
	}, idempotency.WithRenewedLease(lease))
	if err != nil || string(got) != "once" {
		t.Fatalf("Do = %q, %v; want \"once\"", got, err)
	}
	if !errors.Is(other, idempotency.ErrInProgress) {
		t.Fatalf("a claim after three leases: %v, want ErrInProgress (the owner renewed its lease)", other)
	}
	rec := mustFind(t, s, claim(k, "C", time.Now(), time.Minute))
	if rec.Status != idempotency.StatusCompleted || string(rec.Result) != "once" {
		t.Errorf("final record %v %q, want COMPLETED \"once\"", rec.Status, rec.Result)
	}
}

// group claims n keys for owner "a" (with a lease of a minute from now)
// and returns their completions, each with a result of its own.
func group(t *testing.T, s idempotency.Store, n int, now time.Time) []idempotency.Completion {
	t.Helper()
	prefix := key(t)
	cs := make([]idempotency.Completion, n)
	for i := range cs {
		cs[i] = idempotency.Completion{Key: fmt.Sprintf("%s#%03d", prefix, i), Owner: "a", Result: []byte(fmt.Sprint("r", i)), Expires: now.Add(time.Hour)}
		if i%7 == 3 {
			cs[i].Result = nil // a record with no result among them
		}
		mustClaim(t, s, claim(cs[i].Key, "a", now, time.Minute))
	}
	return cs
}

// completedOf reports, per completion, whether its key is completed with
// its result and expiry (otherwise it must still be a's claim, untouched,
// or, at lost, the other owner's).
func completedOf(t *testing.T, s idempotency.Store, cs []idempotency.Completion, now time.Time, lost int) []bool {
	t.Helper()
	out := make([]bool, len(cs))
	for i, c := range cs {
		rec := mustFind(t, s, claim(c.Key, "probe", now.Add(time.Second), time.Minute))
		switch {
		case rec.Status == idempotency.StatusCompleted:
			if rec.Owner != "a" && rec.Owner != "" || string(rec.Result) != string(c.Result) || !rec.Expires.Equal(c.Expires) {
				t.Fatalf("key %d completed as %+v, want owner a, result %q, expiry %v", i, rec, c.Result, c.Expires)
			}
			out[i] = true
		case i == lost:
			if rec.Owner != "b" || rec.Status != idempotency.StatusInProgress || rec.Result != nil {
				t.Fatalf("key %d (the one a lost): %+v, want b's claim untouched", i, rec)
			}
		case rec.Owner != "a" || rec.Status != idempotency.StatusInProgress || rec.Result != nil:
			t.Fatalf("key %d: %+v, want a's claim untouched", i, rec)
		}
	}
	return out
}

// testCompleteAll: a group completes every key, each with its own result.
func testCompleteAll(t *testing.T, s idempotency.Store) {
	g := s.(idempotency.GroupCompleter)
	now := base()
	cs := group(t, s, 5, now)
	if err := g.CompleteAll(ctx(t), cs); err != nil {
		t.Fatalf("CompleteAll: %v", err)
	}
	for i, done := range completedOf(t, s, cs, now, -1) {
		if !done {
			t.Fatalf("key %d not completed", i)
		}
	}
	if err := g.CompleteAll(ctx(t), nil); err != nil {
		t.Fatalf("CompleteAll of nothing: %v", err)
	}
}

// loseOne lets the claim of cs[i] lapse and gives it to owner b.
func loseOne(t *testing.T, s idempotency.Store, cs []idempotency.Completion, i int, now time.Time) {
	t.Helper()
	// a's claim of cs[i] again, with a lease of a second, which b takes over.
	if err := s.Release(ctx(t), cs[i].Key, "a"); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, claim(cs[i].Key, "a", now.Add(-2*time.Second), time.Second))
	mustClaim(t, s, claim(cs[i].Key, "b", now, time.Minute))
}

// testCompleteAllOneLost: one owner of the group lost its key, so nothing
// of the group is written, and the error names that key.
func testCompleteAllOneLost(t *testing.T, s idempotency.Store) {
	g := s.(idempotency.GroupCompleter)
	now := base()
	cs := group(t, s, 5, now)
	loseOne(t, s, cs, 2, now)
	err := g.CompleteAll(ctx(t), cs)
	if !errors.Is(err, idempotency.ErrLeaseLost) || !strings.Contains(err.Error(), fmt.Sprintf("%q", cs[2].Key)) {
		t.Fatalf("CompleteAll with key 2 lost: %v, want ErrLeaseLost naming %q", err, cs[2].Key)
	}
	for i, done := range completedOf(t, s, cs, now, 2) {
		if done {
			t.Fatalf("key %d completed, though the group's key 2 was lost: a group is all or nothing", i)
		}
	}
	// Without the lost key the rest completes.
	rest := append(append([]idempotency.Completion{}, cs[:2]...), cs[3:]...)
	if err := g.CompleteAll(ctx(t), rest); err != nil {
		t.Fatalf("CompleteAll of the rest: %v", err)
	}
	for i, done := range completedOf(t, s, cs, now, 2) {
		if done == (i == 2) {
			t.Fatalf("key %d: completed %v after the rest completed", i, done)
		}
	}
}

// testCompleteAllMany: 250 keys, more than one DynamoDB transaction holds.
func testCompleteAllMany(t *testing.T, s idempotency.Store) {
	g := s.(idempotency.GroupCompleter)
	now := base()
	cs := group(t, s, 250, now)
	if err := g.CompleteAll(ctx(t), cs); err != nil {
		t.Fatalf("CompleteAll(%d keys): %v", len(cs), err)
	}
	for i, done := range completedOf(t, s, cs, now, -1) {
		if !done {
			t.Fatalf("key %d not completed", i)
		}
	}
}

// testCompleteAllManyOneLost: in a group of 250 whose key 150 was lost,
// what is written is a prefix of the group that ends before key 150 (all
// of a store's atomic parts before the one with the lost key; none, for a
// store that writes the whole group at once).
func testCompleteAllManyOneLost(t *testing.T, s idempotency.Store) {
	g := s.(idempotency.GroupCompleter)
	now := base()
	cs := group(t, s, 250, now)
	loseOne(t, s, cs, 150, now)
	err := g.CompleteAll(ctx(t), cs)
	if !errors.Is(err, idempotency.ErrLeaseLost) || !strings.Contains(err.Error(), fmt.Sprintf("%q", cs[150].Key)) {
		t.Fatalf("CompleteAll with key 150 lost: %v, want ErrLeaseLost naming %q", err, cs[150].Key)
	}
	done := completedOf(t, s, cs, now, 150)
	prefix := 0
	for prefix < len(done) && done[prefix] {
		prefix++
	}
	for i := prefix; i < len(done); i++ {
		if done[i] {
			t.Fatalf("keys 0 to %d completed, then key %d: what a group writes must be a prefix of it", prefix-1, i)
		}
	}
	if prefix > 150 {
		t.Fatalf("keys 0 to %d completed, past the lost key 150", prefix-1)
	}
	t.Logf("a prefix of %d keys was written", prefix)
}

func pos(n int) string {
	p, ok := idempotency.Position(fmt.Sprint(n))
	if !ok {
		panic(n)
	}
	return p
}

func laneClaim(lane, owner, upto string, now time.Time, lease time.Duration) idempotency.LaneClaim {
	return idempotency.LaneClaim{Lane: lane, Owner: owner, Upto: upto, Now: now, LeaseUntil: now.Add(lease), Expires: now.Add(time.Hour)}
}

func mustClaimLane(t *testing.T, s idempotency.Store, c idempotency.LaneClaim) idempotency.LaneRecord {
	t.Helper()
	rec, err := s.(idempotency.LaneStore).ClaimLane(ctx(t), c)
	if err != nil {
		t.Fatalf("ClaimLane(%s by %s): %v", c.Lane, c.Owner, err)
	}
	if rec == nil || rec.Lane != c.Lane {
		t.Fatalf("ClaimLane(%s by %s) = %+v, want the lane's record", c.Lane, c.Owner, rec)
	}
	return *rec
}

func taken(t *testing.T, s idempotency.Store, c idempotency.LaneClaim) idempotency.LaneRecord {
	t.Helper()
	rec := mustClaimLane(t, s, c)
	if rec.Owner != c.Owner {
		t.Fatalf("ClaimLane(%s by %s, upto %q) refused (held by %q until %v, position %q); want it taken",
			c.Lane, c.Owner, c.Upto, rec.Owner, rec.LeaseUntil, rec.Position)
	}
	return rec
}

func refused(t *testing.T, s idempotency.Store, c idempotency.LaneClaim) idempotency.LaneRecord {
	t.Helper()
	rec := mustClaimLane(t, s, c)
	if rec.Owner == c.Owner {
		t.Fatalf("ClaimLane(%s by %s, upto %q) taken; want it refused", c.Lane, c.Owner, c.Upto)
	}
	return rec
}

func save(t *testing.T, s idempotency.Store, sv idempotency.LaneSave) error {
	t.Helper()
	return s.(idempotency.LaneStore).SaveLane(ctx(t), sv)
}

// testLaneClaimFree: a lane never written is taken, and has no state.
func testLaneClaimFree(t *testing.T, s idempotency.Store) {
	rec := taken(t, s, laneClaim(key(t), "a", pos(5), base(), time.Minute))
	if rec.Position != "" || rec.State != nil {
		t.Errorf("a new lane has position %q and state %q, want none", rec.Position, rec.State)
	}
}

// testLaneSaveThenRefused: a saved checkpoint is what a refused claim
// returns, with the live lease (milliseconds) and the item's expiry
// (seconds); positions compare as strings.
func testLaneSaveThenRefused(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, laneClaim(lane, "a", pos(9), now, time.Minute))
	lease, exp := now.Add(1500*time.Millisecond), now.Add(2*time.Hour)
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(10), State: []byte(`{"v":1}`), LeaseUntil: lease, Expires: exp}); err != nil {
		t.Fatalf("SaveLane by the owner: %v", err)
	}
	rec := refused(t, s, laneClaim(lane, "b", pos(11), now.Add(time.Second), time.Minute))
	if rec.Owner != "a" || rec.Position != pos(10) || string(rec.State) != `{"v":1}` || !rec.LeaseUntil.Equal(lease) || !rec.Expires.Equal(exp) {
		t.Errorf("refused claim found %+v (state %q), want a's lease until %v, position %q, state {\"v\":1}, expiry %v",
			rec, rec.State, lease, pos(10), exp)
	}
	// At the lease's last millisecond it still holds; after, it is free.
	refused(t, s, laneClaim(lane, "b", pos(11), lease, time.Minute))
	rec = taken(t, s, laneClaim(lane, "b", pos(11), lease.Add(time.Millisecond), time.Minute))
	if rec.Position != pos(10) || string(rec.State) != `{"v":1}` {
		t.Errorf("taken after the lapse, the lane was %+v, want a's checkpoint", rec)
	}
}

// testLaneRelease: a released lease is free at once, and the checkpoint
// written with the release stays.
func testLaneRelease(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, laneClaim(lane, "a", pos(3), now, time.Minute))
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(3), State: []byte("s1"), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", State: nil, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("SaveLane after the release: %v, want ErrLeaseLost (the lease is no longer held)", err)
	}
	rec := taken(t, s, laneClaim(lane, "b", pos(4), now.Add(time.Second), time.Minute))
	if rec.Position != pos(3) || string(rec.State) != "s1" || !rec.LeaseUntil.IsZero() {
		t.Errorf("after a release the lane was %+v, want position %q, state s1, no lease", rec, pos(3))
	}
}

// testLaneLapseAndFencing: a lease that ran out is taken by another owner;
// the old owner's save is then refused and changes nothing.
func testLaneLapseAndFencing(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, laneClaim(lane, "a", "", now, time.Second))
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(1), State: []byte("a1"), LeaseUntil: now.Add(time.Second), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// Unrenewed, a's lease lapses; a save of a's that nobody overtook
	// still lands.
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(2), State: []byte("a2"), LeaseUntil: now.Add(time.Second), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatalf("a save after the lease ran out, nobody else holding it: %v", err)
	}
	taken(t, s, laneClaim(lane, "b", "", now.Add(2*time.Second), time.Minute))
	err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(9), State: []byte("a9"), LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)})
	if !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("the old owner's save: %v, want ErrLeaseLost", err)
	}
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "b", Position: pos(3), State: []byte("b3"), LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatalf("the new owner's save: %v", err)
	}
	rec := refused(t, s, laneClaim(lane, "c", "", now.Add(3*time.Second), time.Minute))
	if rec.Owner != "b" || rec.Position != pos(3) || string(rec.State) != "b3" {
		t.Errorf("the lane is %+v, want b's checkpoint: the stale owner changed it", rec)
	}
	if err := save(t, s, idempotency.LaneSave{Lane: key(t) + "#never", Owner: "a", State: []byte("x"), LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Errorf("a save of a lane never claimed: %v, want ErrLeaseLost", err)
	}
}

// testLaneUpto: a claim whose records are all at or below the lane's
// position is refused and returns the checkpoint, leaving the lease as
// it is (free or held); one with a record above it takes a free lease.
func testLaneUpto(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, laneClaim(lane, "a", pos(9), now, time.Minute))
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(100), State: []byte("s"), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, upto := range []string{pos(7), pos(100)} {
		rec := refused(t, s, laneClaim(lane, "b", upto, now.Add(time.Second), time.Minute))
		if rec.Position != pos(100) || string(rec.State) != "s" || rec.Owner != "a" || !rec.LeaseUntil.IsZero() {
			t.Errorf("upto %q: the refused claim found %+v, want the released lane at %q", upto, rec, pos(100))
		}
	}
	// "100" < "99" as strings, but not as positions.
	taken(t, s, laneClaim(lane, "b", pos(101), now.Add(time.Second), time.Minute))
	// Held by b: a claim of records at or below the position is refused
	// with the checkpoint, and one above it too (b's lease is live).
	if rec := refused(t, s, laneClaim(lane, "c", pos(50), now.Add(2*time.Second), time.Minute)); rec.Position != pos(100) || rec.Owner != "b" {
		t.Errorf("held: found %+v", rec)
	}
	refused(t, s, laneClaim(lane, "c", pos(200), now.Add(2*time.Second), time.Minute))
}

// testLaneExpired: an item past its expiry is taken whatever its lease
// and position (a store that deletes expired items may not have yet).
func testLaneExpired(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, idempotency.LaneClaim{Lane: lane, Owner: "a", Now: now, LeaseUntil: now.Add(time.Hour), Expires: now.Add(10 * time.Second)})
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(100), State: []byte("s"), LeaseUntil: now.Add(time.Hour), Expires: now.Add(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	refused(t, s, laneClaim(lane, "b", pos(5), now.Add(10*time.Second+999*time.Millisecond), time.Minute))
	taken(t, s, laneClaim(lane, "b", pos(5), now.Add(11*time.Second), time.Minute))
}

// testLaneExtend: a save without a state moves the lease and expiry only.
func testLaneExtend(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, laneClaim(lane, "a", "", now, time.Second))
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(4), State: []byte("s4"), LeaseUntil: now.Add(time.Second), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", LeaseUntil: now.Add(time.Minute), Expires: now.Add(2 * time.Hour)}); err != nil {
		t.Fatalf("extend: %v", err)
	}
	rec := refused(t, s, laneClaim(lane, "b", "", now.Add(30*time.Second), time.Minute))
	if rec.Position != pos(4) || string(rec.State) != "s4" || !rec.LeaseUntil.Equal(now.Add(time.Minute)) || !rec.Expires.Equal(now.Add(2*time.Hour)) {
		t.Errorf("after extend the lane is %+v, want position and state kept, lease and expiry moved", rec)
	}
}

// testLaneOwnerAgain: the owner's own claim of its live lease takes it
// again (a record's claim retried after a lost answer).
func testLaneOwnerAgain(t *testing.T, s idempotency.Store) {
	lane, now := key(t), base()
	taken(t, s, laneClaim(lane, "a", "", now, time.Minute))
	taken(t, s, laneClaim(lane, "a", "", now.Add(time.Second), time.Minute))
}

// testLaneLongKey: a lane's key longer than any database's key limit.
func testLaneLongKey(t *testing.T, s idempotency.Store) {
	lane, now := key(t)+"#"+strings.Repeat("\u00e9", 3000), base()
	taken(t, s, laneClaim(lane, "a", "", now, time.Minute))
	if err := save(t, s, idempotency.LaneSave{Lane: lane, Owner: "a", Position: pos(1), State: []byte("s"), Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	other := taken(t, s, laneClaim(lane+"x", "a", "", now, time.Minute))
	if other.Position != "" {
		t.Errorf("two long lane keys share an item")
	}
	if rec := taken(t, s, laneClaim(lane, "b", "", now, time.Minute)); rec.Position != pos(1) {
		t.Errorf("the long lane read back as %+v", rec)
	}
}
