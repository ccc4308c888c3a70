package emf

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAppend(t *testing.T) {
	f := NewFormat("Team/Orders", []Metric{{"Received", "Count"}, {"Duration", "Milliseconds"}, {"Age", "Milliseconds"}})
	ts := time.UnixMilli(1700000000123)
	dims := []Dim{{"FunctionName", "fn"}, {"Source", "sqs\"x"}}
	head := `{"_aws":{"Timestamp":1700000000123,"CloudWatchMetrics":[{"Namespace":"Team/Orders","Dimensions":[["FunctionName","Source"]],"Metrics":[` +
		`{"Name":"Received","Unit":"Count"},{"Name":"Duration","Unit":"Milliseconds"}`
	for _, tc := range []struct {
		name string
		vals []Value
		want string
	}{
		{"without the optional last metric", []Value{Int(3), Float(1.25)},
			head + `]}]},"FunctionName":"fn","Source":"sqs\"x","Received":3,"Duration":1.25}` + "\n"},
		{"with it", []Value{Int(3), Float(2), Int(-4)},
			head + `,{"Name":"Age","Unit":"Milliseconds"}]}]},"FunctionName":"fn","Source":"sqs\"x","Received":3,"Duration":2,"Age":-4}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(f.Append([]byte("x"), ts, dims, tc.vals))
			if got != "x"+tc.want {
				t.Fatalf("line\n %s\nwant\n x%s", got, tc.want)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(got[1:]), &v); err != nil {
				t.Fatal(err)
			}
		})
	}
	if !strings.Contains(f.Head(), `"Team/Orders"`) {
		t.Fatalf("head %s", f.Head())
	}
}

func TestValidNamespace(t *testing.T) {
	for ns, want := range map[string]string{
		"Team/Orders #1: a-b_c.d": "",
		"":                        "must be 1 to 255",
		strings.Repeat("x", 256):  "must be 1 to 255",
		"AWS/Lambda":              "reserved",
		"bad$name":                "is not allowed",
	} {
		err := ValidNamespace(ns)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("ValidNamespace(%.20q) = %v, want %q", ns, err, want)
		}
	}
}
