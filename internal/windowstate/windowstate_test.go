package windowstate

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// agg is a count and sum per customer.
type agg struct {
	Count map[string]int   `json:"n"`
	Sum   map[string]int64 `json:"s"`
}

func (a agg) add(customer string, amount int64) agg {
	if a.Count == nil {
		a.Count, a.Sum = map[string]int{}, map[string]int64{}
	}
	a.Count[customer]++
	a.Sum[customer] += amount
	return a
}

func TestEncoding(t *testing.T) {
	big := agg{Count: map[string]int{}, Sum: map[string]int64{}}
	for i := range 2000 {
		big = big.add(fmt.Sprintf("customer-%05d", i), int64(i))
	}
	for _, tc := range []struct {
		name string
		in   agg
		key  string
	}{
		{"zero", agg{}, jsonKey},
		{"small", agg{}.add("a", 3), jsonKey},
		{"large is compressed", big, gzipKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := Encode(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]string
			if err := json.Unmarshal(enc, &m); err != nil || m["sluice"] != "1" || m[tc.key] == "" || len(m) != 2 {
				t.Fatalf("state %s: %v", enc, err)
			}
			got, err := Decode[agg](m)
			if err != nil || !maps.Equal(got.Count, tc.in.Count) || !maps.Equal(got.Sum, tc.in.Sum) {
				t.Fatalf("round trip: %+v %v", got, err)
			}
		})
	}
	raw, _ := json.Marshal(big)
	enc, _ := Encode(big)
	if len(enc)*3 > len(raw) {
		t.Fatalf("a 2,000-customer aggregate of %d bytes encodes to %d: want a third or less", len(raw), len(enc))
	}
	for _, tc := range []struct {
		name  string
		state map[string]string
		want  string
	}{
		{"empty is the zero value", map[string]string{}, ""},
		{"not ours", map[string]string{"count": "3"}, "not written by a Sluice window handler"},
		{"newer version", map[string]string{"sluice": "2", "json": "{}"}, `format version "2"`},
		{"no payload", map[string]string{"sluice": "1"}, "neither"},
		{"bad base64", map[string]string{"sluice": "1", "gz": "%%%"}, "not base64"},
		{"bad gzip", map[string]string{"sluice": "1", "gz": "AAAA"}, "not gzip"},
		{"another type", map[string]string{"sluice": "1", "json": `{"n":[1]}`}, "does not decode into windowstate.agg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode[agg](tc.state)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
