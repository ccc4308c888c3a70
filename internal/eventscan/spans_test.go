package eventscan

import (
	"encoding/json"
	"testing"
)

// FuzzRecordSpans: the spans SplitRecords finds are the ones encoding/json
// finds, and it finds none where encoding/json refuses the event.
func FuzzRecordSpans(f *testing.F) {
	for _, s := range []string{
		`{"Records":[]}`, `{"Records":[{"a":1},{"b":[1,2,{"c":"d\"}"}]}]}`, ` { "x" : [1,{}] , "Records" : [ "s" , 2 , null , true ] } `,
		`{"records":[1]}`, `{"Records":[1],"Records":[2]}`, `{"Records":[1],"RECORDS":[2]}`, `{"Records":{}}`, `{"Records":[1]} x`,
		`{"Rec\u006frds":[1]}`, `{"Records":["\\"]}`, `{}`, `[]`, `{"Records":[-1.5e3,{"k":"\u00e9"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		spans := SplitRecords(in, false)
		var ev struct {
			Records []json.RawMessage `json:"Records"`
		}
		if err := json.Unmarshal(in, &ev); err != nil {
			if spans != nil {
				t.Fatalf("%q: %d spans where encoding/json refuses the event (%v)", in, len(spans), err)
			}
			return
		}
		if len(spans) != len(ev.Records) {
			t.Fatalf("%d spans, encoding/json finds %d: %q", len(spans), len(ev.Records), in)
		}
		for i := range spans {
			if string(spans[i]) != string(ev.Records[i]) {
				t.Fatalf("span %d = %q, encoding/json %q", i, spans[i], ev.Records[i])
			}
		}
	})
}

func TestSplitRecords(t *testing.T) {
	for _, tc := range []struct {
		in    string
		kafka bool
		want  []string
	}{
		{`{"Records":[{"a":1}, 2]}`, false, []string{`{"a":1}`, `2`}},
		{`{"Records":[1],"RECORDS":[2]}`, false, []string{`2`}}, // encoding/json's last case-insensitive match
		{`{"records":{"t-1":[3],"t-0":[1, 2]}}`, true, []string{`1`, `2`, `3`}},
		{`{"Records":`, false, nil},
		{`{"records":[1]}`, true, nil},
	} {
		got := SplitRecords([]byte(tc.in), tc.kafka)
		if len(got) != len(tc.want) {
			t.Errorf("SplitRecords(%s) = %q, want %q", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if string(got[i]) != tc.want[i] {
				t.Errorf("SplitRecords(%s)[%d] = %s, want %s", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}
