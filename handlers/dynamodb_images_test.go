package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

// ddbFuzzItem has a field of every scalar kind an image decodes into (as
// the item of internal/eventscan's FuzzDynamoDBDecode).
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

// TestDynamoDBImagesOnDemand: by default Raw's image maps are left nil and
// the methods decode them; a value that does not fit the type fails as it
// would in UnmarshalImage.
func TestDynamoDBImagesOnDemand(t *testing.T) {
	b := &sevents.DynamoDBBuilder{}
	b.Modify(map[string]string{"id": "k1"}, map[string]any{"id": "k1", "n": 1}, map[string]any{"id": "k1", "n": 2, "extra": map[string]any{"x": "y"}})
	b.Insert(map[string]string{"id": "k2"}, map[string]any{"id": "k2", "n": "NaN-ish"})
	raw, _ := json.Marshal(b.Event())
	ev, err := decodeDynamoDBEvent(raw, false)
	if err != nil || ev.imgs == nil {
		t.Fatalf("images not kept as JSON: %v", err)
	}
	news, olds := make([]ddbFuzzItem, 2), make([]ddbFuzzItem, 2)
	r, err := decodeDynamoDBImages(&ev.recs[0], &ev.imgs[0], news, olds, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Raw.Change.NewImage != nil || r.NewImage()["extra"].Map()["x"].String() != "y" || r.OldImage()["n"].Number() != "1" || r.Keys()["id"].String() != "k1" {
		t.Fatalf("images on demand: %v %v %v", r.NewImage(), r.OldImage(), r.Keys())
	}
	if r.New.ID != "k1" || r.New.N != 2 || r.Old.N != 1 {
		t.Fatalf("decoded %+v %+v", *r.New, *r.Old)
	}
	var k struct {
		ID string `dynamodbav:"id"`
	}
	if err := r.UnmarshalKeys(&k); err != nil || k.ID != "k1" {
		t.Fatalf("UnmarshalKeys: %v %+v", err, k)
	}
	if ev.imgs[0].Key != "id=k1" {
		t.Fatalf("key %q", ev.imgs[0].Key)
	}
	_, err = decodeDynamoDBImages(&ev.recs[1], &ev.imgs[1], news, olds, 1)
	var want ddbFuzzItem
	werr := sevents.UnmarshalImage(map[string]events.DynamoDBAttributeValue{"n": events.NewStringAttribute("NaN-ish")}, &want)
	if err == nil || werr == nil || err.Error() != "NewImage: "+werr.Error() {
		t.Fatalf("got %v, want NewImage: %v", err, werr)
	}
}

// TestDynamoDBWithRawImages: through the handler, Raw's image maps are nil
// by default and filled with WithRawImages; New, Old and the methods agree
// either way.
func TestDynamoDBWithRawImages(t *testing.T) {
	b := &sevents.DynamoDBBuilder{}
	b.Modify(map[string]string{"id": "k1"}, map[string]any{"id": "k1", "n": 1}, map[string]any{"id": "k1", "n": 2})
	raw, _ := json.Marshal(b.Event())
	for _, filled := range []bool{false, true} {
		var got DynamoDBRecord[ddbFuzzItem]
		opts := []Option{withLookupEnv(func(string) (string, bool) { return "", false })}
		if filled {
			opts = append(opts, WithRawImages())
		}
		h, err := NewDynamoDB(func(_ context.Context, r DynamoDBRecord[ddbFuzzItem]) error { got = r; return nil }, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Invoke(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
		if (got.Raw.Change.NewImage != nil) != filled || (got.Raw.Change.OldImage != nil) != filled || (got.Raw.Change.Keys != nil) != filled {
			t.Fatalf("WithRawImages=%t: Raw maps %v %v %v", filled, got.Raw.Change.NewImage, got.Raw.Change.OldImage, got.Raw.Change.Keys)
		}
		if got.New.N != 2 || got.Old.N != 1 || got.NewImage()["n"].Number() != "2" || got.Keys()["id"].String() != "k1" {
			t.Fatalf("WithRawImages=%t: %+v %+v %v", filled, *got.New, *got.Old, got.NewImage())
		}
	}
	if _, err := NewKinesis(func(context.Context, KinesisRecord[msg]) error { return nil }, WithRawImages()); err == nil ||
		!strings.Contains(err.Error(), "WithRawImages applies to DynamoDB Streams handlers only") {
		t.Fatalf("WithRawImages on Kinesis: %v", err)
	}
}
