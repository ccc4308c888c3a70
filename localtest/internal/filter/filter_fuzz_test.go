package filter

import (
	"encoding/json"
	"testing"

	"github.com/sluicehq/sluice/events"
)

// FuzzFilterPattern: compiling a pattern and matching a record never
// panic, and a pattern means the same after a round trip through JSON
// (decoded and encoded again: other spacing, other field order).
func FuzzFilterPattern(f *testing.F) {
	seeds := [][2]string{
		{`{"body":{"type":["order"]}}`, `{"body":"{\"type\":\"order\"}"}`},
		{`{"body":["hello"]}`, `{"body":"hello"}`},
		{`{"a":[null,"",true,300,{"prefix":"us-"},{"suffix":".png"}]}`, `{"a":["us-east-1",300.0,null]}`},
		{`{"a":[{"numeric":[">",10,"<=",20]}],"b":[{"anything-but":["x",1]}]}`, `{"a":15,"b":2}`},
		{`{"$or":[{"a":[{"exists":false}]},{"b":{"c":[{"equals-ignore-case":"X"}]}}]}`, `{"b":[{"c":"x"},{"c":"y"}]}`},
		{`{"a":{"b":[{"prefix":{"equals-ignore-case":"AB"}}]}}`, `{"a":{"b":"abc"}}`},
		{`{"a":[{"numeric":["=",1e400]}]}`, `{"a":1}`},
		{`{"body":{"a":[1]}}`, `{"body":"{\"a\":1} trailing"}`},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, record string) {
		p, err := Compile(events.SourceSQS, pat)
		if err != nil {
			return
		}
		view, verr := View(events.SourceSQS, json.RawMessage(record))
		got := verr == nil && p.Match(view)
		if got != (verr == nil && p.Match(view)) {
			t.Fatalf("pattern %s on %s: two evaluations disagree", pat, record)
		}
		v, err := DecodeJSON([]byte(pat))
		if err != nil {
			t.Fatalf("compiled pattern %q is not JSON: %v", pat, err)
		}
		again, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		q, err := Compile(events.SourceSQS, string(again))
		if err != nil {
			if len([]rune(string(again))) > MaxPatternLength {
				return // the re-encoding is longer than Lambda allows
			}
			t.Fatalf("pattern %s compiles, its re-encoding %s does not: %v", pat, again, err)
		}
		if verr == nil && q.Match(view) != got {
			t.Fatalf("pattern %s and its re-encoding %s disagree on %s", pat, again, record)
		}
	})
}
