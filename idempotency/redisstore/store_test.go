package redisstore_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/idempotency/redisstore"
	"github.com/sluicehq/sluice/idempotency/storetest"
	"github.com/sluicehq/sluice/internal/testsupport/servers"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := servers.StopAll(); err != nil {
		println(err.Error())
		code = 1
	}
	os.Exit(code)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newClient is a client of the test binary's shared redis-server.
func newClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: servers.Redis(t).Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func newStore(t *testing.T, c redisstore.Client) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(c, redisstore.WithPrefix(servers.UniqueName(t, "idem")+":"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStore runs the conformance suite against a real redis-server.
func TestStore(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	for _, tc := range []struct {
		name string
		opts []redisstore.Option
	}{
		{"DefaultPrefix", nil},
		{"Prefix", []redisstore.Option{redisstore.WithPrefix(servers.UniqueName(t, "orders") + ":")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, err := redisstore.New(c, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			storetest.Run(t, func(*testing.T) idempotency.Store { return store })
		})
	}
}

// TestLayout reads the hash back to check the documented layout and the
// key's Redis expiry (the end of the record's expiry second).
func TestLayout(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	store := newStore(t, c)
	ctx := testCtx(t)
	now := time.Unix(time.Now().Unix(), 0)
	rkey := store.Key("k1")
	cl := idempotency.Claim{Key: "k1", Owner: "o1", PayloadHash: "h", Now: now, LeaseUntil: now.Add(1500 * time.Millisecond), Expires: now.Add(time.Hour)}
	if rec, err := store.Claim(ctx, cl); rec != nil || err != nil {
		t.Fatalf("Claim = %v, %v", rec, err)
	}
	checkHash(t, c, rkey, map[string]string{
		"status": "INPROGRESS", "owner": "o1", "validation": "h",
		"expiration":             itoa(now.Add(time.Hour).Unix()),
		"in_progress_expiration": itoa(now.Add(1500 * time.Millisecond).UnixMilli()),
	})
	checkExpiry(t, c, rkey, now.Add(time.Hour+time.Second))

	until := now.Add(time.Minute)
	if err := store.Extend(ctx, "k1", "o1", until); err != nil {
		t.Fatal(err)
	}
	checkHash(t, c, rkey, map[string]string{
		"status": "INPROGRESS", "owner": "o1", "validation": "h",
		"expiration":             itoa(now.Add(time.Hour).Unix()),
		"in_progress_expiration": itoa(until.UnixMilli()),
	})

	if err := store.Complete(ctx, "k1", "o1", []byte("res\x00\xff"), now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	checkHash(t, c, rkey, map[string]string{
		"status": "COMPLETED", "owner": "o1", "validation": "h", "data": "res\x00\xff",
		"expiration": itoa(now.Add(2 * time.Hour).Unix()),
	})
	checkExpiry(t, c, rkey, now.Add(2*time.Hour+time.Second))
	rec, err := store.Claim(ctx, idempotency.Claim{Key: "k1", Owner: "o2", Now: now, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)})
	if err != nil || rec == nil || string(rec.Result) != "res\x00\xff" {
		t.Fatalf("duplicate claim = %+v, %v; want the binary result back", rec, err)
	}

	if err := store.Release(ctx, "k1", "o1"); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, rkey).Result(); err != nil || n != 0 {
		t.Errorf("after Release: EXISTS %s = %d, %v; want 0", rkey, n, err)
	}
}

func checkHash(t *testing.T, c *redis.Client, key string, want map[string]string) {
	t.Helper()
	got, err := c.HGetAll(testCtx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("HGETALL %s = %q, want %q", key, got, want)
		return
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("HGETALL %s = %q, want %q", key, got, want)
			return
		}
	}
}

func checkExpiry(t *testing.T, c *redis.Client, key string, want time.Time) {
	t.Helper()
	got, err := c.PExpireTime(testCtx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got != time.Duration(want.UnixMilli())*time.Millisecond {
		t.Errorf("PEXPIRETIME %s = %d ms, want %d (the end of the expiry second)", key, got.Milliseconds(), want.UnixMilli())
	}
}

// TestScriptsReloaded: after the server forgets its scripts (a restart, a
// failover, SCRIPT FLUSH), EVALSHA's NOSCRIPT makes the store send the
// script again, and nothing is lost.
func TestScriptsReloaded(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	store := newStore(t, c)
	ctx := testCtx(t)
	now := time.Now()
	for i, op := range []func() error{
		func() error {
			_, err := store.Claim(ctx, idempotency.Claim{Key: "k", Owner: "o", Now: now, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)})
			return err
		},
		func() error { return store.Extend(ctx, "k", "o", now.Add(2*time.Minute)) },
		func() error { return store.Complete(ctx, "k", "o", []byte("r"), now.Add(time.Hour)) },
		func() error { return store.Release(ctx, "k", "o") },
	} {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := op(); err != nil {
			t.Fatalf("operation %d after SCRIPT FLUSH: %v", i, err)
		}
	}
}

// TestForeignData: a key under the prefix that is not a record is an
// error naming the key, never taken over, never a duplicate.
func TestForeignData(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	store := newStore(t, c)
	ctx := testCtx(t)
	now := time.Now()
	cl := func(k string) idempotency.Claim {
		return idempotency.Claim{Key: k, Owner: "o", Now: now, LeaseUntil: now.Add(time.Minute), Expires: now.Add(time.Hour)}
	}
	if err := c.Set(ctx, store.Key("str"), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, store.Key("hash"), "status", "DONE", "expiration", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"str", "hash"} {
		rec, err := store.Claim(ctx, cl(k))
		var se *idempotency.StoreError
		if !errors.As(err, &se) || se.Op != "claim" || se.Key != k || se.Retryable || rec != nil {
			t.Errorf("Claim of %s: %v, %#v; want a non-retryable *StoreError", k, rec, err)
		}
	}
	if v, err := c.Get(ctx, store.Key("str")).Result(); err != nil || v != "x" {
		t.Errorf("the foreign string is now %q, %v; want it untouched", v, err)
	}
	got, err := store.Get(ctx, []string{"hash", "none"})
	if err == nil || len(got) != 0 {
		t.Errorf("Get of a foreign hash = %v, %v; want an error and no record", got, err)
	}
}

// TestUnreachable: a server that is not there is a retryable StoreError
// for every operation.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := servers.New(t, servers.KindRedis)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	store := newStore(t, c)
	ctx := testCtx(t)
	now := time.Now()
	_, err := store.Claim(ctx, idempotency.Claim{Key: "k", Owner: "o", Now: now, LeaseUntil: now, Expires: now})
	errs := map[string]error{
		"claim":    err,
		"complete": store.Complete(ctx, "k", "o", nil, now),
		"extend":   store.Extend(ctx, "k", "o", now),
		"release":  store.Release(ctx, "k", "o"),
	}
	_, errs["get"] = store.Get(ctx, []string{"k"})
	for op, err := range errs {
		var se *idempotency.StoreError
		if !errors.As(err, &se) || se.Op != op || !se.Retryable || !se.Transient() {
			t.Errorf("%s with the server gone: %#v, want a retryable *StoreError", op, err)
		}
	}
	// A canceled context is not retried.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var se *idempotency.StoreError
	if err := store.Release(cctx, "k", "o"); !errors.As(err, &se) || se.Retryable {
		t.Errorf("Release with a canceled context: %#v, want a non-retryable *StoreError", err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	if _, err := redisstore.New(nil); err == nil {
		t.Error("New(nil): no error")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
