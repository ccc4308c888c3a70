package slicepool

import (
	"fmt"
	"testing"
)

type item struct{ ID, Key string }

func TestPoolGivesZeroElements(t *testing.T) {
	var p Pool[item]
	if s := p.Make(3); len(s) != 3 || s[0] != (item{}) {
		t.Fatalf("empty pool: %v", s)
	}
	s := p.Make(4)
	for i := range s {
		s[i] = item{ID: fmt.Sprint(i), Key: "k"}
	}
	s = append(s[:2], item{ID: "past the length"})[:1] // dirty past the length too
	p.Put(s)
	got := p.Get()
	if len(got) != 0 {
		t.Fatalf("len %d after get, want 0", len(got))
	}
	for i, it := range got[:cap(got)] {
		if it != (item{}) {
			t.Fatalf("element %d of a reused slice is %+v, want zero", i, it)
		}
	}
}
