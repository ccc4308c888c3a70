package events

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// The image codec, Sluice's one attribute-value codec (the handlers read an
// image from the wire into aws-lambda-go's attribute values and decode it
// here), follows aws-sdk-go-v2's feature/dynamodb/attributevalue
// (UnmarshalMap and MarshalMap with default options) rule for rule, without
// linking it: that package pulls in the DynamoDB service's schema packages,
// whose initialisation costs every Lambda cold start milliseconds, whether
// the function reads DynamoDB Streams or not. TestImageCodecAgrees and
// FuzzImageCodecAgrees compare the two.
//
// Not supported: types that implement attributevalue's Marshaler or
// Unmarshaler (this package cannot call them without that package); both
// directions return ErrImageMarshaler for them.

// ErrImageMarshaler is returned by UnmarshalImage and MarshalImage for a
// type with a MarshalDynamoDBAttributeValue or UnmarshalDynamoDBAttributeValue
// method: decode r.Raw's image with attributevalue yourself for such types.
var ErrImageMarshaler = errors.New("events: types with DynamoDB attribute value (un)marshal methods are not supported; use attributevalue on the raw image")

// avTag is a `dynamodbav` struct tag.
type avTag struct {
	name                                   string
	ignore                                 bool
	omitEmpty, omitEmptyElem               bool
	nullEmpty, nullEmptyElem               bool
	asString, asBinSet, asNumSet, asStrSet bool
	asUnixTime                             bool
}

func parseAVTag(st reflect.StructTag) avTag {
	var t avTag
	s := st.Get("dynamodbav")
	if s == "" {
		return t
	}
	parts := strings.Split(s, ",")
	if parts[0] == "-" {
		t.ignore = true
	} else {
		t.name = parts[0]
	}
	for _, o := range parts[1:] {
		switch o {
		case "omitempty":
			t.omitEmpty = true
		case "omitemptyelem":
			t.omitEmptyElem = true
		case "nullempty":
			t.nullEmpty = true
		case "nullemptyelem":
			t.nullEmptyElem = true
		case "string":
			t.asString = true
		case "binaryset":
			t.asBinSet = true
		case "numberset":
			t.asNumSet = true
		case "stringset":
			t.asStrSet = true
		case "unixtime":
			t.asUnixTime = true
		}
	}
	return t
}

type avField struct {
	tag     avTag
	name    string
	fromTag bool
	index   []int
	typ     reflect.Type
}

type avFields struct {
	list   []avField
	byName map[string]int
}

// fieldCache holds the fields of each struct type, derived once: immutable
// data about types, as encoding/json keeps.
var fieldCache sync.Map // reflect.Type -> *avFields

func fieldsOf(t reflect.Type) *avFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*avFields)
	}
	list := enumAVFields(t)
	slices.SortFunc(list, func(a, b avField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.fromTag != b.fromTag {
			if a.fromTag {
				return -1
			}
			return 1
		}
		return compareIndex(a.index, b.index)
	})
	out := list[:0]
	for i := 0; i < len(list); {
		j := i + 1
		for j < len(list) && list[j].name == list[i].name {
			j++
		}
		if f, ok := dominantAVField(list[i:j]); ok {
			out = append(out, f)
		}
		i = j
	}
	fs := &avFields{list: out, byName: make(map[string]int, len(out))}
	for i, f := range out {
		fs.byName[f.name] = i
	}
	got, _ := fieldCache.LoadOrStore(t, fs)
	return got.(*avFields)
}

func compareIndex(a, b []int) int {
	for k, x := range a {
		if k >= len(b) {
			return 1
		}
		if x != b[k] {
			return x - b[k]
		}
	}
	return len(a) - len(b)
}

func dominantAVField(fs []avField) (avField, bool) {
	if len(fs) > 1 && len(fs[0].index) == len(fs[1].index) && fs[0].fromTag == fs[1].fromTag {
		return avField{}, false
	}
	return fs[0], true
}

// enumAVFields walks t and its embedded structs breadth first, as
// encoding/json does.
func enumAVFields(t reflect.Type) []avField {
	var current []avField
	next := []avField{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []avField
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := 0; i < f.typ.NumField(); i++ {
				sf := f.typ.Field(i)
				if sf.PkgPath != "" && !sf.Anonymous {
					continue
				}
				tag := parseAVTag(sf.Tag)
				if tag.ignore {
					continue
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				nf := avField{tag: tag, name: sf.Name, typ: ft, index: append(slices.Clip(f.index), i)}
				if tag.name != "" {
					nf.name, nf.fromTag = tag.name, true
				}
				if !sf.Anonymous || tag.name != "" || ft.Kind() != reflect.Struct {
					fields = append(fields, nf)
					if count[f.typ] > 1 {
						fields = append(fields, nf)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, nf)
				}
			}
		}
	}
	return fields
}

func (fs *avFields) byKey(k string) (avField, bool) {
	if i, ok := fs.byName[k]; ok {
		return fs.list[i], true
	}
	for _, f := range fs.list {
		if strings.EqualFold(f.name, k) {
			return f, true
		}
	}
	return avField{}, false
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	byteSliceSliceType  = reflect.TypeFor[[][]byte]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// hasAVMethod reports whether t (or *t) has attributevalue's (un)marshal
// method.
func hasAVMethod(t reflect.Type, name string) bool {
	if _, ok := t.MethodByName(name); ok {
		return true
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		_, ok := reflect.PointerTo(t).MethodByName(name)
		return ok
	}
	return false
}

// imageTypeError is attributevalue's UnmarshalTypeError message.
func imageTypeError(what string, t reflect.Type) error {
	return fmt.Errorf("unmarshal failed, cannot unmarshal %s into Go value type %s", what, t)
}

// UnmarshalImage decodes a DynamoDB stream image (NewImage, OldImage or Keys)
// into out, a non-nil pointer, with the rules of aws-sdk-go-v2's
// attributevalue.UnmarshalMap for a table item: `dynamodbav` struct tags,
// field names matched exactly, then case-insensitively.
func UnmarshalImage(image map[string]events.DynamoDBAttributeValue, out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("unmarshal failed, cannot unmarshal to %T: need a non-nil pointer", out)
	}
	return decodeAVMap(image, v)
}

// decodeAVMap decodes a map attribute into v.
func decodeAVMap(m map[string]events.DynamoDBAttributeValue, v reflect.Value) error {
	v, err := avIndirect(v)
	if err != nil {
		return err
	}
	switch v.Kind() {
	case reflect.Map:
		return decodeIntoMap(m, v)
	case reflect.Struct:
		fs := fieldsOf(v.Type())
		for k, av := range m {
			f, ok := fs.byKey(k)
			if !ok {
				continue
			}
			fv := v
			for i, x := range f.index {
				if i > 0 && fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct {
					if fv.IsNil() {
						fv.Set(reflect.New(fv.Type().Elem()))
					}
					fv = fv.Elem()
				}
				fv = fv.Field(x)
			}
			if err := decodeAV(av, fv, f.tag); err != nil {
				return err
			}
		}
		return nil
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return imageTypeError("map", v.Type())
		}
		g, err := genericAV(events.NewMapAttribute(m))
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(g))
		return nil
	}
	return imageTypeError("map", v.Type())
}

// avIndirect follows pointers, allocating nil ones, to the value to decode
// into; it refuses types with attributevalue's Unmarshaler method.
func avIndirect(v reflect.Value) (reflect.Value, error) {
	for {
		if v.Kind() == reflect.Interface && !v.IsNil() && v.NumMethod() == 0 {
			e := v.Elem()
			if e.Kind() == reflect.Pointer && !e.IsNil() {
				v = e
				continue
			}
		}
		if v.Kind() != reflect.Interface && hasAVMethod(v.Type(), "UnmarshalDynamoDBAttributeValue") {
			return v, fmt.Errorf("%w (%s)", ErrImageMarshaler, v.Type())
		}
		if v.Kind() != reflect.Pointer {
			return v, nil
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
}

func decodeIntoMap(m map[string]events.DynamoDBAttributeValue, v reflect.Value) error {
	kt := v.Type().Key()
	var keyOf func(string) (reflect.Value, error)
	switch {
	case reflect.PointerTo(kt).Implements(textUnmarshalerType) || kt.Implements(textUnmarshalerType):
		keyOf = func(s string) (reflect.Value, error) {
			k := reflect.New(kt)
			if kt.Kind() == reflect.Pointer {
				k.Elem().Set(reflect.New(kt.Elem()))
				return k.Elem(), k.Elem().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
			}
			return k.Elem(), k.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
		}
	case kt.Kind() == reflect.String:
		keyOf = func(s string) (reflect.Value, error) {
			k := reflect.New(kt).Elem()
			return k, decodeAVString(s, k, avTag{})
		}
	case kt.Kind() == reflect.Bool:
		keyOf = func(s string) (reflect.Value, error) {
			k := reflect.New(kt).Elem()
			b, err := strconv.ParseBool(s)
			if err == nil {
				k.SetBool(b)
			}
			return k, err
		}
	case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Float64 && kt.Kind() != reflect.Uintptr:
		keyOf = func(s string) (reflect.Value, error) {
			k := reflect.New(kt).Elem()
			return k, decodeAVNumber(s, k, avTag{})
		}
	default:
		return imageTypeError("map key must be string, number, bool, or TextUnmarshaler", kt)
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for k, av := range m {
		key, err := keyOf(k)
		if err != nil {
			return fmt.Errorf("unmarshal failed, map key %q into %s: %w", k, kt, err)
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := decodeAV(av, elem, avTag{}); err != nil {
			return err
		}
		v.SetMapIndex(key, elem)
	}
	return nil
}

// decodeAV decodes one attribute value into v.
func decodeAV(av events.DynamoDBAttributeValue, v reflect.Value, tag avTag) error {
	if av.DataType() == events.DataTypeNull {
		if v.CanSet() {
			v.SetZero()
		}
		return nil
	}
	v, err := avIndirect(v)
	if err != nil {
		return err
	}
	if v.Kind() == reflect.Interface {
		if v.NumMethod() != 0 {
			return imageTypeError("attribute", v.Type())
		}
		g, err := genericAV(av)
		if err != nil {
			return err
		}
		if g == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(g))
		}
		return nil
	}
	switch av.DataType() {
	case events.DataTypeString:
		return decodeAVString(av.String(), v, tag)
	case events.DataTypeNumber:
		return decodeAVNumber(av.Number(), v, tag)
	case events.DataTypeBinary:
		return decodeAVBinary(av.Binary(), v)
	case events.DataTypeBoolean:
		if v.Kind() != reflect.Bool {
			return imageTypeError("bool", v.Type())
		}
		v.SetBool(av.Boolean())
		return nil
	case events.DataTypeMap:
		return decodeAVMap(av.Map(), v)
	case events.DataTypeList:
		l := av.List()
		return decodeAVSeq(len(l), v, "list", func(i int, e reflect.Value) error { return decodeAV(l[i], e, avTag{}) })
	case events.DataTypeStringSet:
		ss := av.StringSet()
		return decodeAVSeq(len(ss), v, "string set", func(i int, e reflect.Value) error {
			e, err := avIndirect(e)
			if err != nil {
				return err
			}
			return decodeAVString(ss[i], e, avTag{})
		})
	case events.DataTypeNumberSet:
		ns := av.NumberSet()
		return decodeAVSeq(len(ns), v, "number set", func(i int, e reflect.Value) error {
			e, err := avIndirect(e)
			if err != nil {
				return err
			}
			return decodeAVNumber(ns[i], e, avTag{})
		})
	case events.DataTypeBinarySet:
		bs := av.BinarySet()
		return decodeAVSeq(len(bs), v, "binary set", func(i int, e reflect.Value) error {
			e, err := avIndirect(e)
			if err != nil {
				return err
			}
			return decodeAVBinary(bs[i], e)
		})
	}
	return fmt.Errorf("unsupported DynamoDB data type %d", av.DataType())
}

// decodeAVSeq decodes n elements into a slice (made anew when nil or too
// small) or an array (as many as fit).
func decodeAVSeq(n int, v reflect.Value, what string, elem func(i int, e reflect.Value) error) error {
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() || v.Cap() < n {
			v.Set(reflect.MakeSlice(v.Type(), 0, n))
		}
		for i := 0; i < n; i++ {
			v.SetLen(i + 1)
			if err := elem(i, v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Array:
		for i := 0; i < v.Len() && i < n; i++ {
			if err := elem(i, v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	}
	return imageTypeError(what, v.Type())
}

func decodeAVString(s string, v reflect.Value, tag avTag) error {
	if tag.asString {
		return decodeAVNumber(s, v, tag)
	}
	if v.Type().ConvertibleTo(timeType) {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return fmt.Errorf("unmarshal failed, cannot unmarshal %q into %s, %w", s, timeType, err)
		}
		v.Set(reflect.ValueOf(t).Convert(v.Type()))
		return nil
	}
	switch {
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Interface && v.NumMethod() == 0:
		v.Set(reflect.ValueOf(s))
	default:
		return imageTypeError("string", v.Type())
	}
	return nil
}

func decodeAVNumber(n string, v reflect.Value, tag avTag) error {
	switch k := v.Kind(); {
	case k == reflect.Interface && v.NumMethod() == 0:
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(f))
	case k == reflect.String:
		v.SetString(n)
	case k >= reflect.Int && k <= reflect.Int64:
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return err
		}
		if v.OverflowInt(i) {
			return imageTypeError("number overflow, "+n, v.Type())
		}
		v.SetInt(i)
	case k >= reflect.Uint && k <= reflect.Uint64:
		u, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			return err
		}
		if v.OverflowUint(u) {
			return imageTypeError("number overflow, "+n, v.Type())
		}
		v.SetUint(u)
	case k == reflect.Float32 || k == reflect.Float64:
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return err
		}
		if v.OverflowFloat(f) {
			return imageTypeError("number overflow, "+n, v.Type())
		}
		v.SetFloat(f)
	case v.Type().ConvertibleTo(timeType):
		s, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return fmt.Errorf("unmarshal failed, cannot unmarshal %q into %s, %w", n, timeType, err)
		}
		v.Set(reflect.ValueOf(time.Unix(s, 0)).Convert(v.Type()))
	default:
		return imageTypeError("number", v.Type())
	}
	return nil
}

func decodeAVBinary(b []byte, v reflect.Value) error {
	switch {
	case v.Kind() == reflect.Interface && v.NumMethod() == 0:
		v.Set(reflect.ValueOf(slices.Clone(b)))
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if v.IsNil() || v.Cap() < len(b) {
			v.Set(reflect.MakeSlice(v.Type(), len(b), len(b)))
		} else {
			v.SetLen(len(b))
		}
		reflect.Copy(v, reflect.ValueOf(b))
	case v.Kind() == reflect.Array && v.Type().Elem().Kind() == reflect.Uint8:
		reflect.Copy(v, reflect.ValueOf(b))
	default:
		return imageTypeError("binary", v.Type())
	}
	return nil
}

// genericAV is an attribute value as an interface{}: string, float64,
// bool, []byte, nil, []any, map[string]any, []string, []float64, [][]byte.
func genericAV(av events.DynamoDBAttributeValue) (any, error) {
	switch av.DataType() {
	case events.DataTypeString:
		return av.String(), nil
	case events.DataTypeNumber:
		return strconv.ParseFloat(av.Number(), 64)
	case events.DataTypeBinary:
		return slices.Clone(av.Binary()), nil
	case events.DataTypeBoolean:
		return av.Boolean(), nil
	case events.DataTypeNull:
		return nil, nil
	case events.DataTypeList:
		l := av.List()
		out := make([]any, len(l))
		for i, e := range l {
			g, err := genericAV(e)
			if err != nil {
				return nil, err
			}
			out[i] = g
		}
		return out, nil
	case events.DataTypeMap:
		out := make(map[string]any, len(av.Map()))
		for k, e := range av.Map() {
			g, err := genericAV(e)
			if err != nil {
				return nil, err
			}
			out[k] = g
		}
		return out, nil
	case events.DataTypeStringSet:
		return slices.Clone(av.StringSet()), nil
	case events.DataTypeNumberSet:
		ns := av.NumberSet()
		out := make([]float64, len(ns))
		for i, n := range ns {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				return nil, err
			}
			out[i] = f
		}
		return out, nil
	case events.DataTypeBinarySet:
		bs := av.BinarySet()
		out := make([][]byte, len(bs))
		for i, b := range bs {
			out[i] = slices.Clone(b)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported DynamoDB data type %d", av.DataType())
}

// MarshalImage encodes in (a struct or map) as a DynamoDB stream image, with
// the rules of aws-sdk-go-v2's attributevalue.MarshalMap: `dynamodbav`
// tags (omitempty, nullempty, string, sets, unixtime), time.Time as an
// RFC 3339 string, []byte as binary, nil pointers, maps and slices as NULL.
// A value that does not encode to a map gives an empty image.
func MarshalImage(in any) (map[string]events.DynamoDBAttributeValue, error) {
	av, ok, err := encodeAV(reflect.ValueOf(in), avTag{})
	if err != nil {
		return map[string]events.DynamoDBAttributeValue{}, err
	}
	if !ok || av.DataType() != events.DataTypeMap {
		return map[string]events.DynamoDBAttributeValue{}, nil
	}
	return av.Map(), nil
}

var errImageMarshal = errors.New("marshal failed")

// encodeAV encodes v; ok is false when the value is left out.
func encodeAV(v reflect.Value, tag avTag) (events.DynamoDBAttributeValue, bool, error) {
	null := events.NewNullAttribute()
	if tag.ignore {
		return null, false, nil
	}
	if avZero(v) {
		if tag.omitEmpty && tag.nullEmpty {
			return null, false, fmt.Errorf("%w, unable to encode AttributeValue for zero value field with incompatible struct tags, omitempty and nullempty", errImageMarshal)
		}
		if tag.omitEmpty {
			return null, false, nil
		}
		if avNullableZero(v) || tag.nullEmpty {
			return null, true, nil
		}
	}
	if k := v.Kind(); k == reflect.Interface || k == reflect.Pointer {
		v = v.Elem()
	}
	if v.IsValid() && !(v.Kind() == reflect.Pointer && v.IsNil()) && hasAVMethod(v.Type(), "MarshalDynamoDBAttributeValue") {
		return null, false, fmt.Errorf("%w (%s)", ErrImageMarshaler, v.Type())
	}
	switch v.Kind() {
	case reflect.Invalid:
		if tag.omitEmpty {
			return null, false, nil
		}
		return null, true, nil
	case reflect.Struct:
		if v.Type().ConvertibleTo(timeType) {
			t := v.Convert(timeType).Interface().(time.Time)
			if tag.asUnixTime {
				return events.NewNumberAttribute(strconv.FormatInt(t.Unix(), 10)), true, nil
			}
			return events.NewStringAttribute(t.Format(time.RFC3339Nano)), true, nil
		}
		m := map[string]events.DynamoDBAttributeValue{}
		for _, f := range fieldsOf(v.Type()).list {
			if f.name == "" {
				return null, false, fmt.Errorf("%w, map key cannot be empty", errImageMarshal)
			}
			fv, found := v, true
			for i, x := range f.index {
				if i > 0 && fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct {
					if fv.IsNil() {
						found = false
						break
					}
					fv = fv.Elem()
				}
				fv = fv.Field(x)
			}
			if !found {
				continue
			}
			e, ok, err := encodeAV(fv, f.tag)
			if err != nil {
				return null, false, err
			}
			if ok {
				m[f.name] = e
			}
		}
		return events.NewMapAttribute(m), true, nil
	case reflect.Map:
		m := map[string]events.DynamoDBAttributeValue{}
		iter := v.MapRange()
		for iter.Next() {
			key, err := avMapKey(iter.Key())
			if err != nil {
				return null, false, err
			}
			e, ok, err := encodeAV(iter.Value(), avTag{omitEmpty: tag.omitEmptyElem, omitEmptyElem: tag.omitEmptyElem, nullEmpty: tag.nullEmptyElem})
			if err != nil {
				return null, false, err
			}
			if ok {
				m[key] = e
			}
		}
		return events.NewMapAttribute(m), true, nil
	case reflect.Slice, reflect.Array:
		return encodeAVSeq(v, tag)
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return null, false, nil
	case reflect.Pointer:
		if e := v.Elem(); e.IsValid() {
			return encodeAV(e, tag)
		}
		if tag.omitEmpty && tag.omitEmptyElem {
			return null, false, nil
		}
		return null, true, nil
	case reflect.Bool:
		return events.NewBooleanAttribute(v.Bool()), true, nil
	case reflect.String:
		if avNumberer(v) && !tag.asString {
			return events.NewNumberAttribute(v.String()), true, nil
		}
		return events.NewStringAttribute(v.String()), true, nil
	}
	var n string
	switch k := v.Kind(); {
	case k >= reflect.Int && k <= reflect.Int64:
		n = strconv.FormatInt(v.Int(), 10)
	case k >= reflect.Uint && k <= reflect.Uint64:
		n = strconv.FormatUint(v.Uint(), 10)
	case k == reflect.Float32:
		n = strconv.FormatFloat(v.Float(), 'f', -1, 32)
	case k == reflect.Float64:
		n = strconv.FormatFloat(v.Float(), 'f', -1, 64)
	default:
		return null, false, nil
	}
	if tag.asString {
		return events.NewStringAttribute(n), true, nil
	}
	return events.NewNumberAttribute(n), true, nil
}

// avNumberer reports whether a string-kinded v has the methods of a number
// type (attributevalue.Number, json.Number).
func avNumberer(v reflect.Value) bool {
	type numberer interface {
		Float64() (float64, error)
		Int64() (int64, error)
		String() string
	}
	_, ok := v.Interface().(numberer)
	return ok
}

func encodeAVSeq(v reflect.Value, tag avTag) (events.DynamoDBAttributeValue, bool, error) {
	null := events.NewNullAttribute()
	if v.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(b), v)
		return events.NewBinaryAttribute(b), true, nil
	}
	set := tag.asBinSet || tag.asNumSet || tag.asStrSet || v.Type() == byteSliceSliceType
	if set && v.Len() == 0 {
		return null, true, nil // attributevalue's default NullEmptySets: DynamoDB has no empty sets
	}
	elemTag := avTag{omitEmpty: tag.omitEmptyElem, omitEmptyElem: tag.omitEmptyElem, nullEmpty: tag.nullEmptyElem}
	var elems []events.DynamoDBAttributeValue
	for i := 0; i < v.Len(); i++ {
		e, ok, err := encodeAV(v.Index(i), elemTag)
		if err != nil {
			return null, false, err
		}
		if ok {
			elems = append(elems, e)
		}
	}
	switch {
	case tag.asBinSet || v.Type() == byteSliceSliceType:
		bs := make([][]byte, 0, len(elems))
		for _, e := range elems {
			if e.DataType() != events.DataTypeBinary || e.Binary() == nil {
				return null, false, fmt.Errorf("%w, binary set must only contain non-nil byte slices", errImageMarshal)
			}
			bs = append(bs, e.Binary())
		}
		return events.NewBinarySetAttribute(bs), true, nil
	case tag.asNumSet:
		ns := make([]string, 0, len(elems))
		for _, e := range elems {
			if e.DataType() != events.DataTypeNumber {
				return null, false, fmt.Errorf("%w, number set must only contain non-nil string numbers", errImageMarshal)
			}
			ns = append(ns, e.Number())
		}
		return events.NewNumberSetAttribute(ns), true, nil
	case tag.asStrSet:
		ss := make([]string, 0, len(elems))
		for _, e := range elems {
			if e.DataType() != events.DataTypeString {
				return null, false, fmt.Errorf("%w, string set must only contain non-nil strings", errImageMarshal)
			}
			ss = append(ss, e.String())
		}
		return events.NewStringSetAttribute(ss), true, nil
	}
	if elems == nil {
		elems = []events.DynamoDBAttributeValue{}
	}
	return events.NewListAttribute(elems), true, nil
}

func avMapKey(k reflect.Value) (string, error) {
	var s string
	if m, ok := k.Interface().(encoding.TextMarshaler); ok {
		b, err := m.MarshalText()
		if err != nil {
			return "", fmt.Errorf("failed to marshal text, %w", err)
		}
		s = string(b)
	} else {
		switch kk := k.Kind(); {
		case kk == reflect.Bool || kk == reflect.String || kk >= reflect.Int && kk <= reflect.Float64 && kk != reflect.Uintptr:
			s = fmt.Sprint(k.Interface())
		default:
			return "", fmt.Errorf("%w, map key type not supported, must be string, number, bool, or TextMarshaler", errImageMarshal)
		}
	}
	if s == "" {
		return "", fmt.Errorf("%w, map key cannot be empty", errImageMarshal)
	}
	return s, nil
}

func avZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Array:
		return v.Len() == 0
	case reflect.Map, reflect.Slice, reflect.Interface, reflect.Pointer:
		return v.IsNil()
	case reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	}
	return false
}

func avNullableZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Map, reflect.Slice, reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
