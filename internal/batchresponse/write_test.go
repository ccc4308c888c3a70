package batchresponse

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzStringResponse checks the hand-built response against encoding/json.
func FuzzStringResponse(f *testing.F) {
	f.Add("49590338271490256608559692538361571095921575989136588898", "059f36b4-87a3-44ab-83d2-661975830a7d")
	f.Add(`a"b\c`, "\u2028<>&\x01")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // identifiers come from decoded JSON: always valid UTF-8
		}
		ids := []string{a, b}
		out := AppendStringFailures(nil, []int{0, 1}, func(i int) string { return ids[i] })
		var r events.SQSEventResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if len(r.BatchItemFailures) != 2 || r.BatchItemFailures[0].ItemIdentifier != a || r.BatchItemFailures[1].ItemIdentifier != b {
			t.Fatalf("%s does not give back %q %q", out, a, b)
		}
	})
}
