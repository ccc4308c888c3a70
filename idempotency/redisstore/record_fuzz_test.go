package redisstore

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/idempotency"
)

// FuzzRecord: whatever fields a hash holds, reading it back as a record
// either fails with an error or yields a record whose status is one of the
// two, with the expiries the fields say; it never panics.
func FuzzRecord(f *testing.F) {
	f.Add("INPROGRESS", "o", "1798000000123", "1798000000", "", "h", uint8(0))
	f.Add("COMPLETED", "o", "", "1798000000", "res", "", uint8(0b000100))
	f.Add("DONE", "", "x", "-1", "\x00", "", uint8(0b111111))
	f.Add("INPROGRESS", "o", "1e3", "99999999999999999999", "", "", uint8(0b100000))
	s := &Store{prefix: DefaultPrefix}
	f.Fuzz(func(t *testing.T, status, owner, lease, exp, data, hash string, missing uint8) {
		vals := []any{status, owner, lease, exp, data, hash}
		for i := range vals {
			if missing&(1<<i) != 0 {
				vals[i] = nil // the field is absent (HMGET's nil)
			}
		}
		rec, err := s.record("k", vals)
		if err != nil {
			if rec != nil {
				t.Fatalf("record = %+v with error %v", rec, err)
			}
			return
		}
		if rec.Status != idempotency.StatusInProgress && rec.Status != idempotency.StatusCompleted {
			t.Fatalf("status %v from %q", rec.Status, vals[0])
		}
		if n, err := strconv.ParseInt(exp, 10, 64); rec.Key != "k" || err != nil || !rec.Expires.Equal(time.Unix(n, 0)) {
			t.Fatalf("record %+v from %q", rec, vals)
		}
		if rec.Status == idempotency.StatusInProgress {
			if n, err := strconv.ParseInt(lease, 10, 64); err != nil || !rec.LeaseUntil.Equal(time.UnixMilli(n)) {
				t.Fatalf("in-progress record with lease %v from %q", rec.LeaseUntil, vals)
			}
		}
		if len(rec.Result) > 0 && string(rec.Result) != data {
			t.Fatalf("result %q, want %q", rec.Result, data)
		}
	})
	if _, err := s.record("k", []any{"COMPLETED"}); err == nil {
		f.Fatal("record of one field: no error")
	}
}
