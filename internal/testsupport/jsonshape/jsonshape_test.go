package jsonshape

import (
	"slices"
	"testing"
)

func TestPaths(t *testing.T) {
	got, err := Paths([]byte(`{"Records":[{"a":1,"b":{"c":[1]}},{"a":2,"d":null}],"records":{"t-0":[{"headers":[{"h":[1]}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".Records", ".Records[].a", ".Records[].b", ".Records[].b.c", ".Records[].d", ".records", ".records.*", ".records.*[].headers", ".records.*[].headers[].*"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if _, err := Paths([]byte(`{`)); err == nil {
		t.Fatal("invalid JSON must be an error")
	}
}
