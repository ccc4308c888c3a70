package jsonread

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sample is a shape with every kind of field a table reads.
type sample struct {
	Name  string            `json:"name"`
	Count int64             `json:"count"`
	Ratio float64           `json:"ratio"`
	On    bool              `json:"on"`
	Data  []byte            `json:"data"`
	Inner inner             `json:"inner"`
	Ptr   *inner            `json:"ptr"`
	Attrs map[string]string `json:"attrs"`
	List  []string          `json:"list"`
}

type inner struct {
	A string `json:"a"`
	B int64  `json:"b"`
}

var innerTable = NewTable("an inner object",
	Str("a", func(v *inner) *string { return &v.A }),
	Int64("b", func(v *inner) *int64 { return &v.B }),
)

var sampleTable = NewTable("a sample",
	Str("name", func(v *sample) *string { return &v.Name }),
	Int64("count", func(v *sample) *int64 { return &v.Count }),
	Field[sample]{Name: "ratio", Read: func(r *Reader, v *sample) error { return r.Float64Into(&v.Ratio) }},
	Field[sample]{Name: "on", Read: func(r *Reader, v *sample) error { return r.BoolInto(&v.On) }},
	Field[sample]{Name: "data", Read: func(r *Reader, v *sample) error { return r.Base64Into(&v.Data, nil) }},
	Obj("inner", innerTable, func(v *sample) *inner { return &v.Inner }),
	Ptr("ptr", innerTable, func(v *sample) **inner { return &v.Ptr }),
	Field[sample]{Name: "attrs", Read: func(r *Reader, v *sample) error { return StringMap(r, &v.Attrs, 0, nil) }},
	Field[sample]{Name: "list", Read: func(r *Reader, v *sample) error { return StringSlice(r, &v.List) }},
)

// readSample decodes in as the table reads a top-level object.
func readSample(in []byte) (sample, error) { return readSampleWith(Shared(in)) }

// readSampleWith decodes r's input as readSample does.
func readSampleWith(r *Reader) (sample, error) {
	var v sample
	if null, err := r.Null(); err != nil {
		return v, err
	} else if !null {
		if err := sampleTable.Read(r, &v); err != nil {
			return v, err
		}
	}
	if err := r.End(); err != nil {
		return v, err
	}
	return v, r.Saved()
}

var seeds = []string{
	`{}`, `null`, `{"name":"x","count":3,"ratio":1.5e3,"on":true,"data":"AQI=","inner":{"a":"y","b":-2},"ptr":{"a":"p"},"attrs":{"k":"v","n":null},"list":["a","b"]}`,
	`{"NAME":"upper","name":"lower"}`, `{"Name":"x"}`, `{"ſame":"x"}`, `{"na\u006de":"escaped key"}`,
	`{"name":"a","name":"b"}`, `{"inner":{"a":"x"},"inner":{"b":1}}`, `{"ptr":{"a":"x"},"ptr":{"b":1}}`, `{"ptr":null}`,
	`{"list":["a","b"],"list":[null,"c"]}`, `{"list":[]}`, `{"list":null}`, `{"attrs":{}}`, `{"attrs":{"a":"1"},"attrs":{"b":"2"}}`,
	`{"count":1.5}`, `{"count":"1"}`, `{"count":99999999999999999999}`, `{"name":1,"count":2}`, `{"ratio":1e999}`,
	`{"data":"%%%"}`, `{"data":""}`, `{"data":[1,2,255]}`, `{"data":[256]}`, `{"data":"AQ\nI="}`, `{"data":"AQ\/I="}`,
	`{"name":"\ud83d\ude00\ud800x\udc00\u00e9"}`, "{\"name\":\"\xff\xfe\"}", `{"name":"\u0000"}`, "{\"name\":\"a\tb\"}",
	`{"unknown":{"deep":[1,2,{"x":null}],"s":"\u0041"}}`, `{"unknown":[1,2,}`, `{"unknown":tru}`, `{"unknown":01}`,
	`{"unknown":-}`, `{"unknown":1.}`, `{"unknown":1e}`, `{"unknown":"\x"}`, `{"unknown":"\u12"}`, `{} x`, `{`, ``, ` `,
	`{"on":"true"}`, `{"on":null}`, `{"inner":null}`, `{"inner":[]}`, `{"ptr":[]}`, `{"attrs":[]}`, `{"list":{}}`, `[]`, `"s"`,
	`{"attrs":{"a":1}}`, `{"list":[1]}`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":1 "b":2}`,
}

// FuzzTableAgrees keeps a table's decoding equal to encoding/json's for
// the same struct: the same value when both accept, an error from both
// when either refuses (syntax errors worded by encoding/json).
func FuzzTableAgrees(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readSample(in)
		var want sample
		jerr := json.Unmarshal(in, &want)
		// A Reader gathering its strings into one Builder reads the same.
		gathered, gerr := readSampleWith(Gathered(in))
		if (gerr == nil) != (err == nil) || err == nil && !reflect.DeepEqual(gathered, got) {
			t.Fatalf("%q: gathered %#v (%v), shared %#v (%v)", in, gathered, gerr, got, err)
		}
		if (err == nil) != (jerr == nil) {
			t.Fatalf("%q: table error %v, encoding/json error %v", in, err, jerr)
		}
		var se *SyntaxError
		if errors.As(err, &se) {
			var jse *json.SyntaxError
			if werr := SyntaxErr(in, err); !errors.As(werr, &jse) {
				t.Fatalf("%q: the reader found a syntax error (%v), encoding/json %v", in, err, werr)
			}
			return
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n table %#v\n  json %#v", in, got, want)
		}
	})
}

// FuzzSkip keeps Skip's verdict on any input equal to json.Valid's.
func FuzzSkip(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := New(in)
		err := r.Skip()
		if err == nil {
			err = r.End()
		}
		if (err == nil) != json.Valid(in) {
			t.Fatalf("%q: Skip says %v, json.Valid %t", in, err, json.Valid(in))
		}
	})
}

// FuzzString keeps a string's text equal to encoding/json's, from a
// shared, a gathering and a copying reader.
func FuzzString(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`, "\"\xff\"", `"\u00e9\n\/\\"`, `"é"`, `"\ud800\u0041"`, "\"\xff\\n\\u00e9\\ud83d\\ude00\xc3\"", "\"\\ud800\\udc00\xe2\x82\"", "\"a\\\\\\\"b\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want string
		if json.Unmarshal(in, &want) != nil {
			return
		}
		for _, r := range []*Reader{New(in), Shared(in), Gathered(in)} {
			got, ok, err := r.String()
			if err == nil {
				err = r.End()
			}
			if err != nil || !ok || got != want {
				t.Fatalf("%q: %q (ok %t, %v), encoding/json %q", in, got, ok, err, want)
			}
		}
	})
}

func TestTypeErrorNamesTheField(t *testing.T) {
	_, err := readSample([]byte(`{"name":"x","count":"3","inner":{"b":"y"}}`))
	var te *TypeError
	if !errors.As(err, &te) || te.Field != "count" || !strings.Contains(err.Error(), `field "count": a string where a number is expected`) {
		t.Fatalf("error %v", err)
	}
}

func TestSharedStringsAreCutFromOneCopy(t *testing.T) {
	for _, mk := range []func([]byte) *Reader{Shared, Gathered} {
		in := []byte(`{"name":"abc","list":["de"],"attrs":{"k\u0031":"v"}}`)
		v, err := readSampleWith(mk(in))
		if err != nil || v.Name != "abc" || v.List[0] != "de" || v.Attrs["k1"] != "v" {
			t.Fatalf("%+v %v", v, err)
		}
		copy(in, strings.Repeat("x", len(in)))
		if v.Name != "abc" || v.List[0] != "de" || v.Attrs["k1"] != "v" {
			t.Fatalf("a string changed with the input: %+v", v)
		}
	}
}

// TestGatheredStringsOutliveGrowth: a string cut from the Builder stays
// what it was when the Builder outgrows its buffer.
func TestGatheredStringsOutliveGrowth(t *testing.T) {
	in := []byte(`["a","` + strings.Repeat("b", 5000) + `","c\n"]`)
	r := Gathered(in)
	r.GrowStrings(1)
	var got []string
	if err := StringSlice(r, &got); err != nil || r.End() != nil || r.GatheredLen() != 5003 {
		t.Fatalf("%v %d", err, r.GatheredLen())
	}
	if len(got) != 3 || got[0] != "a" || got[1] != strings.Repeat("b", 5000) || got[2] != "c\n" {
		t.Fatalf("%q", got)
	}
}
