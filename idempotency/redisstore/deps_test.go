package redisstore_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRedisClientStaysHere: the Redis client is linked only by packages
// that import this one, so events, batch, handlers (and every function that
// does not use this store) link none of it.
func TestRedisClientStaysHere(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "github.com/sluicehq/sluice/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const self = "github.com/sluicehq/sluice/idempotency/redisstore"
	seen := map[string]bool{}
	selfLinks := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, deps := f[0], map[string]bool{}
		for _, d := range f[1:] {
			deps[d] = true
		}
		seen[pkg] = true
		redis := false
		for d := range deps {
			if strings.HasPrefix(d, "github.com/redis/") || strings.HasPrefix(d, "github.com/valkey-io/") {
				redis = true
			}
		}
		if pkg == self {
			selfLinks = redis
		}
		if redis && pkg != self && !deps[self] {
			t.Errorf("%s links a Redis client without importing %s", pkg, self)
		}
	}
	if !selfLinks {
		t.Fatalf("go list shows no Redis client among %s's dependencies: this test would see none anywhere", self)
	}
	for _, pkg := range []string{"events", "batch", "handlers", "idempotency", self[len("github.com/sluicehq/sluice/"):]} {
		if !seen["github.com/sluicehq/sluice/"+pkg] {
			t.Fatalf("go list did not list %s; its output:\n%s", pkg, out)
		}
	}
}
