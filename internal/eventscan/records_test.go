package eventscan

import (
	"strings"
	"testing"
)

func TestRecordArray(t *testing.T) {
	type rec struct {
		ID string `json:"id"`
		N  int    `json:"n"`
	}
	id := func(r *rec) string { return r.ID }
	for _, tc := range []struct {
		name, in string
		ids      []string
		bad      []bool
		err      string
	}{
		{"whole", `{"Records":[{"id":"a","n":1},{"id":"b"}]}`, []string{"a", "b"}, nil, ""},
		{"one bad record", `{"Records":[{"id":"a","n":1},{"id":"b","n":"x"}]}`, []string{"a", "b"}, []bool{false, true}, ""},
		{"a bad record without its id", `{"Records":[{"n":"x"}]}`, nil, nil, "record 0 is malformed and has no identifier"},
		{"not JSON", `{"Records":`, nil, nil, "the event is not a test event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, errs, err := RecordArray("test", []byte(tc.in), id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || len(recs) != len(tc.ids) {
				t.Fatalf("%+v %v", recs, err)
			}
			for i, r := range recs {
				if r.ID != tc.ids[i] {
					t.Errorf("record %d: %+v", i, r)
				}
				if bad := errs != nil && errs[i] != nil; bad != (tc.bad != nil && tc.bad[i]) {
					t.Errorf("record %d: error %v", i, errs)
				}
			}
		})
	}
}
