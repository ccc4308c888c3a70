package idemlink

import (
	"testing"
)

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestSetGet(t *testing.T) {
	defer func() { funcs = nil }()
	mustPanic(t, "Get before Set", func() { Get[string, int, *bool]() })

	cache := new(bool)
	Set(Funcs[string, int, *bool]{
		CacheOf: func(opts ...int) *bool { return cache },
	})
	f := Get[string, int, *bool]()
	if f.CacheOf() != cache {
		t.Fatal("CacheOf is not the function Set recorded")
	}
	mustPanic(t, "Get with other types", func() { Get[string, int, *int]() })
	mustPanic(t, "a second Set", func() { Set(Funcs[string, int, *bool]{}) })
}
