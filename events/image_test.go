package events

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The types the image codec is compared on, attributevalue as the reference.
type imgInner struct {
	A string
	B *int64 `dynamodbav:"b"`
	C []string
}

type imgEmbedded struct {
	E  string `dynamodbav:"e"`
	ID string // shadowed by imgItem.ID
}

type imgName string

type imgItem struct {
	imgEmbedded
	ID       string             `dynamodbav:"id"`
	N        int                `dynamodbav:"n"`
	U8       uint8              `dynamodbav:"u8"`
	F        float64            `dynamodbav:"f,omitempty"`
	F32      float32            `dynamodbav:"f32"`
	Ok       bool               `dynamodbav:"ok"`
	Bin      []byte             `dynamodbav:"bin"`
	Tags     []string           `dynamodbav:"tags,stringset"`
	Nums     []int              `dynamodbav:"nums,numberset,omitempty"`
	Bins     [][]byte           `dynamodbav:"bins"`
	When     time.Time          `dynamodbav:"when"`
	Unix     time.Time          `dynamodbav:"unix,unixtime"`
	AsStr    int                `dynamodbav:"asstr,string"`
	Ptr      *imgInner          `dynamodbav:"ptr"`
	Inner    imgInner           `dynamodbav:"inner,omitempty"`
	List     []any              `dynamodbav:"list"`
	M        map[string]float64 `dynamodbav:"m,omitemptyelem"`
	MI       map[int]string     `dynamodbav:"mi"`
	Any      any                `dynamodbav:"any"`
	Named    imgName            `dynamodbav:"named,nullempty"`
	Arr      [2]string          `dynamodbav:"arr"`
	Skip     string             `dynamodbav:"-"`
	Num      json.Number        `dynamodbav:"num"`
	NoTag    string
	unexport string // never decoded nor encoded
}

func toSDK(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		out := []types.AttributeValue{}
		for _, e := range v.List() {
			out = append(out, toSDK(e))
		}
		return &types.AttributeValueMemberL{Value: out}
	}
	out := map[string]types.AttributeValue{}
	for k, e := range v.Map() {
		out[k] = toSDK(e)
	}
	return &types.AttributeValueMemberM{Value: out}
}

func sdkImage(img map[string]events.DynamoDBAttributeValue) map[string]types.AttributeValue {
	return toSDK(events.NewMapAttribute(img)).(*types.AttributeValueMemberM).Value
}

// randAV makes an attribute value from r: any type, numbers and strings
// drawn from small sets that hit the edges (overflow, times, empties).
func randAV(r *rand.Rand, depth int) events.DynamoDBAttributeValue {
	strs := []string{"", "a", "2025-11-03T09:30:00Z", "2025-11-03T09:30:00.123+02:00", "12", "x y"}
	nums := []string{"0", "1", "-1", "255", "256", "1.5", "1e3", "9223372036854775808", "3.4e39", "abc", "1700000000"}
	k := r.IntN(11)
	if depth > 2 && k >= 8 {
		k = r.IntN(8)
	}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	switch k {
	case 0:
		return events.NewStringAttribute(pick(strs))
	case 1:
		return events.NewNumberAttribute(pick(nums))
	case 2:
		return events.NewBinaryAttribute([]byte(pick(strs)))
	case 3:
		return events.NewBooleanAttribute(r.IntN(2) == 0)
	case 4:
		return events.NewNullAttribute()
	case 5:
		return events.NewStringSetAttribute([]string{pick(strs), pick(strs)})
	case 6:
		return events.NewNumberSetAttribute([]string{pick(nums)})
	case 7:
		return events.NewBinarySetAttribute([][]byte{[]byte(pick(strs))})
	case 8:
		l := []events.DynamoDBAttributeValue{}
		for range r.IntN(3) {
			l = append(l, randAV(r, depth+1))
		}
		return events.NewListAttribute(l)
	}
	return events.NewMapAttribute(randImage(r, depth+1))
}

func randImage(r *rand.Rand, depth int) map[string]events.DynamoDBAttributeValue {
	names := []string{"id", "ID", "n", "N", "u8", "f", "f32", "ok", "bin", "tags", "nums", "bins", "when", "unix", "asstr", "ptr",
		"inner", "list", "m", "mi", "any", "named", "arr", "Skip", "num", "NoTag", "notag", "e", "A", "b", "C", "1", "-2", "x"}
	img := map[string]events.DynamoDBAttributeValue{}
next:
	for range r.IntN(6) {
		name := names[r.IntN(len(names))]
		for k := range img {
			// Both codecs match "notag" to NoTag only when no exact match
			// is present; with both present the result depends on map
			// order, in attributevalue as here.
			if k != name && strings.EqualFold(k, name) {
				continue next
			}
		}
		img[name] = randAV(r, depth)
	}
	return img
}

// checkImageAgrees decodes img into each target type with both codecs and
// encodes what attributevalue decoded with both.
func checkImageAgrees(t *testing.T, img map[string]events.DynamoDBAttributeValue) {
	t.Helper()
	_ = imgItem{}.unexport
	sdk := sdkImage(img)
	targets := []func() any{
		func() any { return new(imgItem) }, func() any { return new(imgInner) }, func() any { return new(map[string]any) },
		func() any { return new(map[string]string) }, func() any { return new(map[string]imgInner) }, func() any { return new(any) },
		func() any { return new(*imgItem) },
	}
	for _, mk := range targets {
		a, b := mk(), mk()
		errA, errB := UnmarshalImage(img, a), attributevalue.UnmarshalMap(sdk, b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("decode into %T: error %v, attributevalue %v\nimage %v", a, errA, errB, img)
		}
		if errA != nil {
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("decode into %T:\n ours %#v\n  ref %#v\nimage %v", a, reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), img)
		}
		got, errA := MarshalImage(reflect.ValueOf(b).Elem().Interface())
		want, errB := attributevalue.MarshalMap(reflect.ValueOf(b).Elem().Interface())
		if (errA == nil) != (errB == nil) {
			t.Fatalf("encode %#v: error %v, attributevalue %v", b, errA, errB)
		}
		if errA == nil && !reflect.DeepEqual(sdkImage(got), want) {
			mine := sdkImage(got)
			for k := range want {
				if !reflect.DeepEqual(mine[k], want[k]) {
					t.Errorf("attribute %q: ours %#v, attributevalue %#v", k, mine[k], want[k])
				}
			}
			t.Fatalf("encode %#v:\n ours %v\n  ref %v", b, mine, want)
		}
	}
}

func TestImageCodecAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 5000 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkImageAgrees(t, randImage(r, 0)) })
		if t.Failed() {
			return
		}
	}
}

// FuzzImageCodecAgrees draws images from the fuzzer's seeds.
func FuzzImageCodecAgrees(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkImageAgrees(t, randImage(rand.New(rand.NewPCG(a, b)), 0))
	})
}

// TestImageMarshaler: a type with attributevalue's method is refused, not
// silently decoded another way.
func TestImageMarshaler(t *testing.T) {
	var u struct{ X withAVMethods }
	if err := UnmarshalImage(map[string]events.DynamoDBAttributeValue{"X": events.NewStringAttribute("a")}, &u); err == nil {
		t.Fatal("decoded into a type with UnmarshalDynamoDBAttributeValue")
	}
	if _, err := MarshalImage(u); err == nil {
		t.Fatal("encoded a type with MarshalDynamoDBAttributeValue")
	}
}

type withAVMethods struct{ S string }

func (w withAVMethods) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) { return nil, nil }
func (w *withAVMethods) UnmarshalDynamoDBAttributeValue(types.AttributeValue) error  { return nil }
