package handlers

import (
	"testing"
	"time"
)

func TestMsAttr(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"1762162200000", time.UnixMilli(1762162200000)},
		{"0", time.UnixMilli(0)},
		{"999999999999999999", time.UnixMilli(999999999999999999)},   // 18 digits: the fast path's longest
		{"1000000000000000000", time.UnixMilli(1000000000000000000)}, // 19: strconv
		{"-5", time.UnixMilli(-5)},
		{"+5", time.UnixMilli(5)},
		{"", time.Time{}},
		{"12a", time.Time{}},
		{"1.5", time.Time{}},
		{"99999999999999999999", time.Time{}}, // overflows int64
	} {
		if got := msAttr(c.in); !got.Equal(c.want) {
			t.Errorf("msAttr(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
