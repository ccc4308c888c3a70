package idempotency_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicehq/sluice/idempotency"
)

func TestStoredKey(t *testing.T) {
	long := strings.Repeat("a", 3000)
	cjk := strings.Repeat("\u7ea2", 1000) // 3,000 bytes, three a character
	for _, tc := range []struct {
		name      string
		key       string
		limit     int
		kept      bool // stored as it is
		wantBytes int  // the stored form's length, when not kept
	}{
		{"short", "fn#msg-1", 2048, true, 0},
		{"at the limit", long[:2048], 2048, true, 0},
		{"one over", long[:2049], 2048, false, 2048},
		{"long", long, 2048, false, 2048},
		{"sort key limit", long, 1024, false, 1024},
		// 2048-72 = 1976 is inside the 659th character: the head stops
		// before it, at 1974 bytes.
		{"cut between characters", cjk, 2048, false, 1974 + 72},
		{"limit too small for a digest", long, 50, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := idempotency.StoredKey(tc.key, tc.limit)
			if tc.kept {
				if got != tc.key {
					t.Fatalf("StoredKey changed a key that fits (or cannot be shortened): %q", got)
				}
				return
			}
			if len(got) != tc.wantBytes || len(got) > tc.limit {
				t.Errorf("stored form has %d bytes, want %d (limit %d)", len(got), tc.wantBytes, tc.limit)
			}
			if !utf8.ValidString(got) {
				t.Errorf("stored form is not valid UTF-8: a character was cut")
			}
			head, sum, ok := strings.Cut(got, idempotency.DigestMarker)
			if !ok || len(sum) != 64 || !strings.HasPrefix(tc.key, head) {
				t.Errorf("stored form %q..., want a head of the key, %q and 64 hex digits", got[:40], idempotency.DigestMarker)
			}
			if again := idempotency.StoredKey(tc.key, tc.limit); again != got {
				t.Errorf("StoredKey is not a function of its key")
			}
			if other := idempotency.StoredKey(tc.key+"x", tc.limit); other == got {
				t.Errorf("two keys with the same head have the same stored form")
			}
		})
	}
}

// TestStoredKeyStable pins the stored form: tables written by one version
// are read by the next, so it may never change. (The digest was checked
// with another SHA-256 implementation, Python's hashlib.)
func TestStoredKeyStable(t *testing.T) {
	got := idempotency.StoredKey("orders#"+strings.Repeat("x", 100), 80)
	const want = "orders#x#sha256:190ef7548080c46a90081a32be16b719da5abc5a135e15024f20e4b4045bc765"
	if got != want {
		t.Fatalf("StoredKey = %q, want %q: the stored form of long keys changed, so tables already written would no longer be found", got, want)
	}
}
