package eventscan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// ddbFuzzItem has a field of every scalar kind an image decodes into.
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

// FuzzDynamoDBDecode checks that DecodeDynamoDB and encoding/json agree on
// every input (a record encoding/json refuses fails, alone or with the
// event): the records (their images decoded from the JSON kept, and filled
// as maps when asked), the ordering keys, and every image decoded into a
// struct, against events.UnmarshalImage of aws-lambda-go's map.
func FuzzDynamoDBDecode(f *testing.F) {
	ddbSeeds(f)
	f.Add([]byte(`{"Records":[{"dynamodb":{"NewImage":{"bs":{"BS":[1]}}}}]}`))
	f.Add([]byte(`{"Records":[{"dynamodb":{"NewImage":{"id":{"S":"x"},"id2":{"S":1,"S":"y"},"n":{"NULL":{"a":1}}},"Future":[1]},"newKey":{}}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var ref struct {
			Records []events.DynamoDBEventRecord `json:"Records"`
		}
		refErr := refUnmarshal(in, &ref)
		for _, maps := range []bool{false, true} {
			fast, errs, err := DecodeDynamoDB(in, maps)
			if refErr != nil {
				if err == nil && !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
					t.Fatalf("accepted what encoding/json rejects (%v): %q", refErr, in)
				}
				continue
			}
			if err != nil || errs != nil {
				t.Fatalf("%q: error %v %v, encoding/json none", in, err, errs)
			}
			if (fast.Records == nil) != (ref.Records == nil) || len(fast.Records) != len(ref.Records) || len(fast.Images) != len(fast.Records) {
				t.Fatalf("%d records, reference %d", len(fast.Records), len(ref.Records))
			}
			for i := range fast.Records {
				a, b, im := fast.Records[i], ref.Records[i], fast.Images[i]
				for _, x := range []struct {
					dst *map[string]events.DynamoDBAttributeValue
					img []byte
				}{{&a.Change.Keys, im.Keys}, {&a.Change.NewImage, im.New}, {&a.Change.OldImage, im.Old}} {
					m, err := ImageMap(x.img)
					if err != nil {
						t.Fatalf("record %d: kept image %q does not decode: %v", i, x.img, err)
					}
					if maps && !reflect.DeepEqual(*x.dst, m) {
						t.Fatalf("record %d: map %v, the image's %v", i, *x.dst, m)
					}
					if !maps && *x.dst != nil {
						t.Fatalf("record %d: a map filled unasked", i)
					}
					*x.dst = m
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("record %d of %q:\n read %#v\nreference %#v", i, in, a, b)
				}
				if want := DynamoDBKey(b.Change.Keys); im.Key != want {
					t.Fatalf("record %d: key %q, reference %q", i, im.Key, want)
				}
				for _, x := range []struct {
					img []byte
					m   map[string]events.DynamoDBAttributeValue
				}{{im.New, b.Change.NewImage}, {im.Old, b.Change.OldImage}} {
					var got, want ddbFuzzItem
					err := DecodeImage(x.img, &got)
					werr := sevents.UnmarshalImage(x.m, &want)
					if foldDup(x.m) {
						continue // two attributes for one field: which wins depends on map order, in UnmarshalImage as in attributevalue
					}
					if (err == nil) != (werr == nil) || err == nil && got != want {
						t.Fatalf("record %d: image %q\n decoded %+v (%v)\n UnmarshalImage %+v (%v)", i, x.img, got, err, want, werr)
					}
				}
			}
		}
	})
}

// foldDup reports whether two of m's names differ only in case.
func foldDup(m map[string]events.DynamoDBAttributeValue) bool {
	seen := map[string]bool{}
	for k := range m {
		if seen[strings.ToLower(k)] {
			return true
		}
		seen[strings.ToLower(k)] = true
	}
	return false
}

// refUnmarshal is json.Unmarshal, with a panic of aws-lambda-go's
// attribute value decoder (a BS holding a non-string) made an error.
func refUnmarshal(in []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("aws-lambda-go panicked: %v", p)
		}
	}()
	return json.Unmarshal(in, v)
}

// refImageMap is aws-lambda-go's decoding of an image.
func refImageMap(img []byte) (map[string]events.DynamoDBAttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	var m map[string]events.DynamoDBAttributeValue
	err := refUnmarshal(img, &m)
	return m, err
}

// FuzzImageMap keeps ImageMap equal to aws-lambda-go's decoding of an
// image, value and verdict.
func FuzzImageMap(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":{"S":"x"}}`, `{"a":{"N":"1"},"b":{"B":"AQI="},"c":{"BOOL":true},"d":{"NULL":true}}`,
		`{"l":{"L":[{"S":"x"},{"M":{"k":{"N":"2"}}}]},"ss":{"SS":["a"]},"ns":{"NS":["1"]},"bs":{"BS":["AQ=="]}}`,
		`{"a":{"S":"x","N":"1"}}`, `{"a":{"S":1,"S":"y"}}`, `{"a":{}}`, `{"a":null}`, `{"a":{"X":"1"}}`, `{"a":{"B":"%"}}`,
		`{"a":{"L":[1]}}`, `{"a":{"M":{"b":{}}}}`, `{"a":{"SS":[1]}}`, `{"a":{"BOOL":"true"}}`, `{"a":{"NULL":false}}`, `[]`, `{"a":{"L":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := refImageMap(in)
		got, err := ImageMap(in)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: ImageMap error %v, aws-lambda-go %v", in, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n ImageMap %#v\n aws-lambda-go %#v", in, got, want)
		}
	})
}
