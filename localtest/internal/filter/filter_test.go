package filter

import (
	"testing"

	"github.com/sluicehq/sluice/events"
)

// matchDoc compiles a pattern and matches it against a plain JSON document
// (no payload decoding).
func matchDoc(t *testing.T, pat, doc string) bool {
	t.Helper()
	p, err := Compile(events.SourceSQS, pat)
	if err != nil {
		t.Fatalf("pattern %s: %v", pat, err)
	}
	v, err := DecodeJSON([]byte(doc))
	if err != nil {
		t.Fatalf("document %s: %v", doc, err)
	}
	return p.Match(v)
}

type matchCase struct {
	name    string
	pattern string
	doc     string
	want    bool
}

// The operator table of Lambda's event filtering page, each example with a
// record that matches and records that do not.
func TestFilterOperators(t *testing.T) {
	cases := []matchCase{
		{"null/matches null", `{"UserID":[null]}`, `{"UserID":null}`, true},
		{"null/not a value", `{"UserID":[null]}`, `{"UserID":"u1"}`, false},
		{"null/not a missing field", `{"UserID":[null]}`, `{}`, false},
		{"empty/matches empty string", `{"LastName":[""]}`, `{"LastName":""}`, true},
		{"empty/not a name", `{"LastName":[""]}`, `{"LastName":"Doe"}`, false},
		{"equals/string", `{"Name":["Alice"]}`, `{"Name":"Alice"}`, true},
		{"equals/is case sensitive", `{"Name":["Alice"]}`, `{"Name":"alice"}`, false},
		{"equals/string is not number", `{"Price":["100"]}`, `{"Price":100}`, false},
		{"equals/boolean", `{"ok":[true]}`, `{"ok":true}`, true},
		{"equals/boolean is not its string", `{"ok":[true]}`, `{"ok":"true"}`, false},
		{"equals/number by text", `{"n":[300]}`, `{"n":300}`, true},
		{"equals/300.0 is not 300", `{"n":[300]}`, `{"n":300.0}`, false},
		{"equals/3.0e2 is not 300", `{"n":[300]}`, `{"n":3.0e2}`, false},
		{"equals-ignore-case/upper", `{"Name":[{"equals-ignore-case":"alice"}]}`, `{"Name":"ALICE"}`, true},
		{"equals-ignore-case/other", `{"Name":[{"equals-ignore-case":"alice"}]}`, `{"Name":"Bob"}`, false},
		{"and/both", `{"Location":["New York"],"Day":["Monday"]}`, `{"Location":"New York","Day":"Monday"}`, true},
		{"and/one", `{"Location":["New York"],"Day":["Monday"]}`, `{"Location":"New York","Day":"Tuesday"}`, false},
		{"and/missing field", `{"Location":["New York"],"Day":["Monday"]}`, `{"Location":"New York"}`, false},
		{"or/values second", `{"PaymentType":["Credit","Debit"]}`, `{"PaymentType":"Debit"}`, true},
		{"or/values none", `{"PaymentType":["Credit","Debit"]}`, `{"PaymentType":"Cash"}`, false},
		{"$or/second branch", `{"$or":[{"Location":["New York"]},{"Day":["Monday"]}]}`, `{"Location":"Boston","Day":"Monday"}`, true},
		{"$or/no branch", `{"$or":[{"Location":["New York"]},{"Day":["Monday"]}]}`, `{"Location":"Boston","Day":"Tuesday"}`, false},
		{"$or/with a field beside it", `{"kind":["a"],"$or":[{"x":[1]},{"y":[2]}]}`, `{"kind":"b","y":2}`, false},
		{"$or/nested", `{"d":{"$or":[{"x":[1]},{"y":[2]}]}}`, `{"d":{"y":2}}`, true},
		{"anything-but/other value", `{"Weather":[{"anything-but":["Raining"]}]}`, `{"Weather":"Sunny"}`, true},
		{"anything-but/listed value", `{"Weather":[{"anything-but":["Raining"]}]}`, `{"Weather":"Raining"}`, false},
		{"anything-but/missing field", `{"Weather":[{"anything-but":["Raining"]}]}`, `{}`, false},
		{"anything-but/single string", `{"state":[{"anything-but":"initializing"}]}`, `{"state":"running"}`, true},
		{"anything-but/numbers by value", `{"code":[{"anything-but":[404, 500]}]}`, `{"code":404.0}`, false},
		{"anything-but/number other", `{"code":[{"anything-but":[404, 500]}]}`, `{"code":200}`, true},
		{"numeric/equals", `{"Price":[{"numeric":["=",100]}]}`, `{"Price":100}`, true},
		{"numeric/equals 100.0", `{"Price":[{"numeric":["=",100]}]}`, `{"Price":100.0}`, true},
		{"numeric/not a string", `{"Price":[{"numeric":["=",100]}]}`, `{"Price":"100"}`, false},
		{"numeric/range inside", `{"Price":[{"numeric":[">",10,"<=",20]}]}`, `{"Price":20}`, true},
		{"numeric/range lower bound excluded", `{"Price":[{"numeric":[">",10,"<=",20]}]}`, `{"Price":10}`, false},
		{"numeric/range above", `{"Price":[{"numeric":[">",10,"<=",20]}]}`, `{"Price":20.5}`, false},
		{"numeric/range fraction", `{"Price":[{"numeric":[">",10,"<=",20]}]}`, `{"Price":15.5}`, true},
		{"numeric/less than", `{"t":[{"numeric":["<",0]}]}`, `{"t":-1e3}`, true},
		{"exists/present", `{"ProductName":[{"exists":true}]}`, `{"ProductName":"Widget"}`, true},
		{"exists/absent", `{"ProductName":[{"exists":true}]}`, `{}`, false},
		{"exists/object is not a leaf", `{"ProductName":[{"exists":true}]}`, `{"ProductName":{"x":1}}`, false},
		{"does not exist/absent", `{"ProductName":[{"exists":false}]}`, `{"Other":1}`, true},
		{"does not exist/present", `{"ProductName":[{"exists":false}]}`, `{"ProductName":""}`, false},
		{"does not exist/empty array", `{"tags":[{"exists":false}]}`, `{"tags":[]}`, true},
		{"does not exist/parent missing", `{"a":{"b":[{"exists":false}]}}`, `{}`, true},
		{"begins with/us", `{"Region":[{"prefix":"us-"}]}`, `{"Region":"us-east-1"}`, true},
		{"begins with/eu", `{"Region":[{"prefix":"us-"}]}`, `{"Region":"eu-west-1"}`, false},
		{"begins with/ignore case", `{"Region":[{"prefix":{"equals-ignore-case":"US-"}}]}`, `{"Region":"us-east-1"}`, true},
		{"ends with/png", `{"FileName":[{"suffix":".png"}]}`, `{"FileName":"photo.png"}`, true},
		{"ends with/jpg", `{"FileName":[{"suffix":".png"}]}`, `{"FileName":"photo.jpg"}`, false},
		{"ends with/ignore case", `{"FileName":[{"suffix":{"equals-ignore-case":".PNG"}}]}`, `{"FileName":"photo.png"}`, true},
		{"array/any element", `{"tags":["urgent"]}`, `{"tags":["low","urgent"]}`, true},
		{"array/no element", `{"tags":["urgent"]}`, `{"tags":["low"]}`, false},
		{"array/numeric any element", `{"tire_pressure":[{"numeric":["<",32]}]}`, `{"tire_pressure":[41,40,31,41]}`, true},
		{"nested/match", `{"a":{"b":{"c":["x"]}}}`, `{"a":{"b":{"c":"x","d":1}}}`, true},
		{"nested/scalar where object expected", `{"a":{"b":["x"]}}`, `{"a":"b"}`, false},
		{"nested/array of objects, one element", `{"a":{"b":[1],"c":[2]}}`, `{"a":[{"b":1,"c":2},{"b":3,"c":4}]}`, true},
		{"nested/array of objects, across elements", `{"a":{"b":[1],"c":[4]}}`, `{"a":[{"b":1,"c":2},{"b":3,"c":4}]}`, false},
		{"fields not in the pattern are ignored", `{"a":["x"]}`, `{"a":"x","b":"y"}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := matchDoc(t, c.pattern, c.doc); got != c.want {
				t.Fatalf("pattern %s on %s: got %v, want %v", c.pattern, c.doc, got, c.want)
			}
		})
	}
}
