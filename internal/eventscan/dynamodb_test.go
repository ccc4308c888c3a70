package eventscan

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// ddbFuzzItem has a field of every kind the image plan decodes.
type ddbFuzzItem struct {
	ID     string  `dynamodbav:"id"`
	N      int     `dynamodbav:"n,omitempty"`
	I8     int8    `dynamodbav:"i8"`
	I32    int32   `dynamodbav:"i32"`
	U16    uint16  `dynamodbav:"u"`
	U      uint    `dynamodbav:"uu"`
	F      float64 `dynamodbav:"f"`
	F32    float32 `dynamodbav:"f32"`
	B      bool    `dynamodbav:"b"`
	Msg    string
	Status ddbStatus `dynamodbav:"status"`
	Ign    string    `dynamodbav:"-"`
	hidden string
}

type ddbStatus string

func ddbSeeds(f *testing.F) {
	f.Add(dynamodbFixture(f, 3))
	b := &sevents.DynamoDBBuilder{}
	b.Insert(map[string]any{"id": "a", "n": 1}, ddbFuzzItem{ID: "a", N: -3, I8: 7, U16: 9, F: 1.5, F32: 2.5, B: true, Msg: "hé\"llo", Status: "OK"})
	b.Expire(map[string]any{"id": "b"}, map[string]any{"id": "b", "list": []any{"x", 1.0, true}, "m": map[string]any{"k": "v"}, "ss": []string{"p", "q"}, "bin": []byte{1, 2, 3}})
	b.Remove(map[string]any{"bin": []byte("key"), "id": "c"}, map[string]any{"ID": "upper", "msg": "lower", "n": "not a number"})
	raw, _ := json.Marshal(b.Event())
	f.Add(raw)
	rec := `"eventID":"1","eventName":"MODIFY","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1","eventSourceARN":"arn"`
	for _, s := range []string{
		`{}`, `{"Records":null}`, `{"Records":[]}`, `{"Records":[{}]}`, `{"Records":[{"dynamodb":{}}]}`,
		`{"Records":[{` + rec + `,"dynamodb":{"ApproximateCreationDateTime":1479499740.5,"Keys":{"id":{"S":"k"}},"NewImage":{"id":{"S":"k"},"n":{"N":"12"},"f":{"N":"1e400"}},"OldImage":null,"SequenceNumber":"1","SizeBytes":26,"StreamViewType":"NEW_AND_OLD_IMAGES"}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"n":{"N":"300"},"i8":{"N":"300"},"u":{"N":"-1"},"f32":{"N":"1e39"},"b":{"BOOL":false},"Msg":{"NULL":true}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"id":{"S":"a"},"ID":{"S":"b"}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"id":{"S":"a"},"id":{"S":"b"}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"id":{"S":"a","N":"1"}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"id":{"N":1}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"id":{"NULL":false}},"Keys":{"a":{"N":"1"},"b":{"S":"x"}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"x\u0041":{"S":"\u00e9\n"}},"Keys":{"b":{"B":"AQI="},"a":{"N":"1"}}}}]}`,
		`{"Records":[{"dynamodb":{"Keys":{"a":{"B":"%%"}}}}]}`, `{"Records":[{"dynamodb":{"Keys":{"a":{"BOOL":true}}}}]}`,
		`{"Records":[{"dynamodb":{"NewImage":{"l":{"L":[{"S":"x"},{"M":{}}]},"bs":{"BS":["AQ==","=="]}}}}]}`,
		`{"Records":[{"dynamodb":{"SizeBytes":1.5}}]}`, `{"Records":[{"dynamodb":{"ApproximateCreationDateTime":null}}]}`,
		`{"Records":[{"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}},{"userIdentity":null}]}`,
		`{"Records":[{"EventID":"x"}]}`, `{"Records":[]} x`, `{"Records":[`, `{"Records":[{"dynamodb":{"Keys":{}}}]}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDynamoDBDecode checks that the DynamoDB scanner and encoding/json agree
// on every input the scanner accepts: the records (their images decoded from
// the JSON the scanner keeps), the ordering keys, and every image the plan
// decodes into a struct, against events.UnmarshalImage.
func FuzzDynamoDBDecode(f *testing.F) {
	ddbSeeds(f)
	plan := PlanImage(reflect.TypeFor[ddbFuzzItem]())
	if plan == nil {
		f.Fatal("no image plan for ddbFuzzItem")
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := ScanDynamoDB(in)
		if !ok {
			return // the general decoder decides
		}
		var ref struct {
			Records []events.DynamoDBEventRecord `json:"Records"`
		}
		if err := json.Unmarshal(in, &ref); err != nil {
			t.Fatalf("scanner accepted what encoding/json rejects (%v): %q", err, in)
		}
		if fast.Records == nil || ref.Records == nil || len(fast.Records) != len(ref.Records) || len(fast.Images) != len(fast.Records) {
			t.Fatalf("%d records, reference %d", len(fast.Records), len(ref.Records))
		}
		for i := range fast.Records {
			a, b, im := fast.Records[i], ref.Records[i], fast.Images[i]
			var err error
			for _, x := range []struct {
				dst *map[string]events.DynamoDBAttributeValue
				img []byte
			}{{&a.Change.Keys, im.Keys}, {&a.Change.NewImage, im.New}, {&a.Change.OldImage, im.Old}} {
				if *x.dst != nil {
					t.Fatalf("record %d: the scanner filled an image map", i)
				}
				if *x.dst, err = ImageMap(x.img); err != nil {
					t.Fatalf("record %d: kept image %q does not decode: %v", i, x.img, err)
				}
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("record %d of %q:\n scanner %#v\nreference %#v", i, in, a, b)
			}
			if want := DynamoDBKey(b.Change.Keys); im.Key != want {
				t.Fatalf("record %d: key %q, reference %q", i, im.Key, want)
			}
			for _, x := range []struct {
				img []byte
				m   map[string]events.DynamoDBAttributeValue
			}{{im.New, b.Change.NewImage}, {im.Old, b.Change.OldImage}} {
				if x.img == nil {
					continue
				}
				var got, want ddbFuzzItem
				if !plan.decode(x.img, unsafe.Pointer(&got)) {
					continue // the general decoder's
				}
				if err := sevents.UnmarshalImage(x.m, &want); err != nil {
					t.Fatalf("record %d: the plan decoded %q, UnmarshalImage fails: %v", i, x.img, err)
				}
				if got != want {
					t.Fatalf("record %d: image %q\n plan %+v\n UnmarshalImage %+v", i, x.img, got, want)
				}
			}
		}
	})
}

func TestImagePlanFor(t *testing.T) {
	type embedded struct{ A string }
	type withEmbedded struct {
		embedded
		B string
	}
	type dup struct {
		A string
		B string `dynamodbav:"A"`
	}
	type asString struct {
		N int `dynamodbav:"n,string"`
	}
	type nested struct {
		M map[string]string
	}
	type ptr struct{ P *string }
	for _, c := range []struct {
		t    reflect.Type
		plan bool
	}{
		{reflect.TypeFor[ddbFuzzItem](), true},
		{reflect.TypeFor[order](), true},
		{reflect.TypeFor[withEmbedded](), false},
		{reflect.TypeFor[dup](), false},
		{reflect.TypeFor[asString](), false},
		{reflect.TypeFor[nested](), false},
		{reflect.TypeFor[ptr](), false},
		{reflect.TypeFor[map[string]any](), false},
		{reflect.TypeFor[string](), false},
	} {
		if got := PlanImage(c.t) != nil; got != c.plan {
			t.Errorf("PlanImage(%v): plan %t, want %t", c.t, got, c.plan)
		}
	}
}
