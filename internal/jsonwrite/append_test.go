package jsonwrite

import (
	"encoding/json"
	"testing"
)

func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"a<b>&", `"a<b>&"`},
		{"quote\" back\\", `"quote\" back\\"`},
		{"tab\t", `"tab\t"`},
		{"é", `"é"`},
	} {
		if got := string(AppendString([]byte("x"), tc.in)); got != "x"+tc.want {
			t.Errorf("AppendString(%q) = %s, want x%s", tc.in, got, tc.want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f", "é<", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s, not JSON: %v", s, b, err)
		}
		std, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if back != want {
			t.Fatalf("AppendString(%q) reads back as %q, encoding/json's as %q", s, back, want)
		}
	})
}
