package s3object

import (
	"regexp"
	"testing"
	"time"
)

func TestKey(t *testing.T) {
	at := time.Date(2024, 5, 1, 9, 8, 7, 654e6, time.FixedZone("x", 3600))
	got := Key("f89f8514-cdd9-4602-9e1f-01a5b77d449b", "shardId-000000000001", at, "0b1c")
	want := "aws/lambda/f89f8514-cdd9-4602-9e1f-01a5b77d449b/shardId-000000000001/2024/05/01/2024-05-01T08.08.07-0b1c"
	if got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if u := RandomUUID(); !v4.MatchString(u) || u == RandomUUID() {
		t.Errorf("RandomUUID %s is not a fresh version 4 UUID", u)
	}
}
