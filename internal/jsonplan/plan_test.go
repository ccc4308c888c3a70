package jsonplan

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

type item struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type order struct {
	OrderID    string  `json:"orderId"`
	CustomerID string  `json:"customerId"`
	Amount     float64 `json:"amount"`
	Currency   string  `json:"currency"`
	Items      []item  `json:"items"`
	CreatedAt  string  `json:"createdAt"`
	Paid       bool    `json:"paid"`
	Note       *string `json:"note"`
}

type scalars struct {
	I    int
	I8   int8
	I16  int16
	I32  int32
	I64  int64
	U    uint
	U8   uint8
	U16  uint16
	U32  uint32
	U64  uint64
	UP   uintptr
	F32  float32
	F64  float64
	B    bool
	S    string
	Skip string `json:"-"`
	//lint:ignore SA5008 encoding/json names this field "-": the test checks that rule
	Dash string `json:"-,"`
	//lint:ignore SA5008 an invalid tag name falls back to the field's: the test checks that rule
	Bad  string `json:"a\\b"`
	Omit string `json:",omitempty"`
	//lint:ignore U1000 an unexported field is never decoded: the test checks that rule
	hide string

	QI   int     `json:"qi,string"`
	QU8  uint8   `json:"qu8,string"`
	QF   float64 `json:"qf,string"`
	QF32 float32 `json:"qf32,string"`
	QB   bool    `json:"qb,string"`
	QS   string  `json:"qs,string"`
	//lint:ignore SA5008 "string" on a slice is ignored: the test checks that rule
	QX []int `json:"qx,string"` // not quotable: the option is ignored
}

type named string

type nested struct {
	Name   named               `json:"name"`
	Tags   []string            `json:"tags"`
	Grid   [][]int             `json:"grid"`
	Attrs  map[string]string   `json:"attrs"`
	Kids   map[string]*nested  `json:"kids"`
	Next   *nested             `json:"next"`
	PP     **int               `json:"pp"`
	Any    any                 `json:"any"`
	When   time.Time           `json:"when"`
	WhenP  *time.Time          `json:"whenP"`
	Raw    json.RawMessage     `json:"raw"`
	Bytes  []byte              `json:"bytes"`
	Num    json.Number         `json:"num"`
	Addr   netip.Addr          `json:"addr"`
	Arr    [2]int              `json:"arr"`
	IntKey map[int]string      `json:"intKey"`
	Items  []item              `json:"items"`
	Maps   []map[string]string `json:"maps"`
	Ptrs   []*item             `json:"ptrs"`
	Upper  string              `json:"UPPER"`
	Lower  string              `json:"upper"`
	Ü      string              `json:"ü"`
	Kelvin string              `json:"k"`
}

type embedded struct {
	item
	Extra string
}

type promoted struct {
	Inner struct{ time.Time } `json:"inner"`
}

func seeds() []string {
	return []string{
		`{"orderId":"ord-k-00000000","customerId":"cust-014293","amount":338.91,"currency":"EUR","items":[{"sku":"SKU-710469","qty":1,"price":108.69}],"createdAt":"2025-11-03T09:30:00.000Z"}`,
		`{"orderId":"\u00e9\ud83d\ude00","amount":1e2,"items":null}`, `{"OrderId":"x","ORDERID":"y"}`, `{"orderId":"a","orderId":"b"}`,
		`{"qty":01}`, `{"items":[{"qty":1.5}]}`, `{"orderId":"\ud800"}`, "{\"orderId\":\"\xff\"}", `{}`, `null`, `[]`, ``, `{"amount":"1"}`,
		`{"orderId":"a"} x`, `{"items":[{"sku":"a"}],"extra":{"deep":[[[[1]]]]}}`, `{"items":[]}`, `{"note":null,"paid":true}`, `{"note":"n"}`,
		`{"I":-1,"I8":127,"I16":-32768,"I32":2147483647,"I64":-9223372036854775808,"U":1,"U8":255,"U16":65535,"U32":4294967295,"U64":18446744073709551615,"UP":7,"F32":3.4e38,"F64":-0,"B":false,"S":"s"}`,
		`{"I8":128}`, `{"U":-0}`, `{"I":1e0}`, `{"F32":3.5e38}`, `{"F64":1e400}`, `{"F64":0.1}`, `{"F64":123456789012345678}`, `{"F64":-1.5E-3}`, `{"F64":-.0}`, `{"F64":-.5e1}`, `{"F64":-}`,
		`{"Skip":"x","-":"dash","Bad":"bad","Omit":"o","hide":"h"}`,
		`{"qi":"12","qu8":"255","qf":"1.5","qf32":"2","qb":"true","qs":"\"str\"","qx":[1]}`, `{"qi":12}`, `{"qi":"01"}`, `{"qi":null,"qs":"null"}`,
		`{"qs":"str"}`, `{"qb":"1"}`, `{"qi":" 1"}`, `{"qs":"\"a\\u00e9\""}`,
		`{"name":"n","tags":["a","b"],"grid":[[1,2],[],null],"attrs":{"a":"1","a":"2"},"kids":{"k":{"name":"kid"},"z":null},"next":{"next":{"name":"deep"}}}`,
		`{"pp":5,"any":{"x":[1,"y",null,true]},"when":"2025-11-03T09:30:00Z","whenP":"2025-11-03T09:30:00.5+01:00","raw":{"a" : 1},"bytes":"AQID","num":1.50}`,
		`{"when":null,"whenP":null,"raw":null,"bytes":null,"num":"7","addr":"10.0.0.1","arr":[1,2,3],"intKey":{"1":"a"}}`,
		`{"when":"bad"}`, `{"addr":"x"}`, `{"intKey":{"a":"b"}}`, `{"bytes":"%%"}`, `{"num":"x"}`,
		`{"items":[{"sku":"a"},{"SKU":"b","QTY":2}],"maps":[{"a":"b"},{}],"ptrs":[{"sku":"p"},null]}`,
		`{"UPPER":"u","upper":"l","Upper":"fold"}`, `{"Ü":"fold","\u212a":"kelvin"}`, `{"k":1}`,
		`{"Extra":"e","sku":"s"}`, `{"inner":"2025-11-03T09:30:00Z"}`, `{"inner":{}}`,
		` { "orderId" : "sp" , "items" : [ { "qty" : 2 } , { } ] } `, "{\"orderId\":\"tab\tinside\"}", `{"orderId":"a\/b\"c\\d\b\f\n\r\t"}`,
		`{"orderId":"x","amount":1.}`, `{"orderId":"x",}`, `{"items":[1,]}`, `{"orderId":tru}`, `[1,2]`, `"str"`, `{"a":{"b":[{"c":[]}]}}`,
		`{"items":[{"sku":"a","sku":"b"}]}`, `{"attrs":{"a":null}}`, `{"attrs":{"a":1}}`, `{"kids":{"\u00e9":{}}}`,
	}
}

// check decodes in with the plan (the raw fast path and Unmarshal) and
// with encoding/json, and fails on any difference.
func check[T any](t *testing.T, in []byte) {
	t.Helper()
	p := For(reflect.TypeFor[T]())
	for _, share := range []bool{false, true} {
		var fast T
		data := append([]byte(nil), in...)
		if p.Decode(data, unsafe.Pointer(&fast), share) {
			var std T
			if err := json.Unmarshal(in, &std); err != nil {
				t.Fatalf("%T: plan accepts what encoding/json rejects (%v): %q", fast, err, in)
			}
			if !reflect.DeepEqual(fast, std) {
				t.Fatalf("%T on %q:\n plan %+v\n  std %+v", fast, in, fast, std)
			}
		}
		var a, b T
		errA := p.Unmarshal(data, unsafe.Pointer(&a), share)
		errB := json.Unmarshal(in, &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%T: plan error %v, encoding/json error %v, on %q", a, errA, errB, in)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%T on %q (errors %v, %v):\n plan %+v\n  std %+v", a, in, errA, errB, a, b)
		}
		var c Cache
		var v T
		if err := c.Unmarshal(in, &v); (err == nil) != (errB == nil) || !reflect.DeepEqual(v, b) {
			t.Fatalf("%T: Cache.Unmarshal %+v, %v; encoding/json %+v, %v; on %q", v, v, err, b, errB, in)
		}
	}
}

func checkAll(t *testing.T, in []byte) {
	check[order](t, in)
	check[scalars](t, in)
	check[nested](t, in)
	check[embedded](t, in)
	check[promoted](t, in)
	check[map[string][]int](t, in)
	check[[]item](t, in)
	check[string](t, in)
	check[*float64](t, in)
	check[any](t, in)
}

func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range seeds() {
		checkAll(t, []byte(s))
	}
}

func FuzzAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range seeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkAll(t, in) })
}

// TestPlanDecodes: the shapes the plan handles are decoded by the plan, not
// handed to encoding/json.
func TestPlanDecodes(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		typ  reflect.Type
	}{
		{"order", seeds()[0], reflect.TypeFor[order]()},
		{"scalars", `{"I":1,"F32":1.5,"qi":"3","qs":"\"x\"","Dash":"no","-":"yes"}`, reflect.TypeFor[scalars]()},
		{"folded keys", `{"ORDERID":"x","Items":[{"Sku":"y"}]}`, reflect.TypeFor[order]()},
		{"nested", `{"name":"n","tags":[],"attrs":{"a":"b"},"kids":{"k":{"next":null}},"pp":1,"when":"2025-11-03T09:30:00Z","whenP":null}`, reflect.TypeFor[nested]()},
		{"escapes", `{"orderId":"\u00e9\ud83d\ude00\n","customerId":"é"}`, reflect.TypeFor[order]()},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := reflect.New(c.typ)
			if !For(c.typ).Decode([]byte(c.in), v.UnsafePointer(), false) {
				t.Fatalf("the plan gave %q up", c.in)
			}
		})
	}
}

// TestShare: shared strings point into the input; copied ones do not.
func TestShare(t *testing.T) {
	in := []byte(`{"orderId":"ord-1","customerId":"c\"q"}`)
	p := For(reflect.TypeFor[order]())
	for _, share := range []bool{false, true} {
		var o order
		if !p.Decode(in, unsafe.Pointer(&o), share) || o.OrderID != "ord-1" || o.CustomerID != `c"q` {
			t.Fatalf("share %v: %+v", share, o)
		}
		inside := uintptr(unsafe.Pointer(unsafe.StringData(o.OrderID)))-uintptr(unsafe.Pointer(&in[0])) < uintptr(len(in))
		if inside != share {
			t.Fatalf("share %v: orderId inside the input %v", share, inside)
		}
	}
}

type folded struct {
	A string `json:"ü"`
	B string `json:"k"`
	C string `json:"s"`
}

// TestFoldMatchesEncodingJSON: keys that differ from a field's name by
// case, including the non-ASCII folds, match the same fields.
func TestFoldMatchesEncodingJSON(t *testing.T) {
	for _, k := range []string{"ü", "Ü", "k", "K", "\u212a", "ß", "ẞ", "ſ", "s", "S"} {
		in := []byte(`{"` + k + `":"v"}`)
		check[folded](t, in)
		var f folded
		if !For(reflect.TypeFor[folded]()).Decode(in, unsafe.Pointer(&f), false) {
			t.Fatalf("the plan gave %s up", in)
		}
	}
}

var benchBody = []byte(`{"orderId":"ord-s-00000000","customerId":"cust-007515","amount":1095.16,"currency":"USD","items":[{"sku":"SKU-464147","qty":2,"price":23.96},{"sku":"SKU-482529","qty":2,"price":166.8},{"sku":"SKU-554821","qty":4,"price":178.41}],"createdAt":"2025-11-03T09:30:00.000Z"}`)

// BenchmarkOrder decodes a ~270-byte order with the plan (strings shared)
// and with encoding/json.
func BenchmarkOrder(b *testing.B) {
	b.Run("plan", func(b *testing.B) {
		p := For(reflect.TypeFor[order]())
		o := new(order)
		b.ReportAllocs()
		for b.Loop() {
			*o = order{}
			if !p.Decode(benchBody, unsafe.Pointer(o), true) {
				b.Fatal("the plan gave up")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		o := new(order)
		b.ReportAllocs()
		for b.Loop() {
			*o = order{}
			if err := json.Unmarshal(benchBody, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
