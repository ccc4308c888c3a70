package eventscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

func ddbChangeRecord(id, images string) string {
	return `{"awsRegion":"us-east-1","eventID":"` + id + `","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json",` +
		`"tableName":"orders","dynamodb":{"ApproximateCreationDateTime":1762162200000,"Keys":{"id":{"S":"o-1"}}` + images +
		`,"SizeBytes":120,"ApproximateCreationDateTimePrecision":"MILLISECOND"},"eventSource":"aws:dynamodb"}`
}

// refDynamoDBChange is the reference: encoding/json into the same fields.
func refDynamoDBChange(data []byte) (DynamoDBChange, error) {
	var w struct {
		AWSRegion    string                       `json:"awsRegion"`
		EventID      string                       `json:"eventID"`
		EventName    string                       `json:"eventName"`
		UserIdentity *events.DynamoDBUserIdentity `json:"userIdentity"`
		RecordFormat string                       `json:"recordFormat"`
		TableName    string                       `json:"tableName"`
		EventSource  string                       `json:"eventSource"`
		DynamoDB     *struct {
			ApproximateCreationDateTime          float64         `json:"ApproximateCreationDateTime"`
			ApproximateCreationDateTimePrecision string          `json:"ApproximateCreationDateTimePrecision"`
			Keys                                 json.RawMessage `json:"Keys"`
			NewImage                             json.RawMessage `json:"NewImage"`
			OldImage                             json.RawMessage `json:"OldImage"`
			SizeBytes                            int64           `json:"SizeBytes"`
		} `json:"dynamodb"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return DynamoDBChange{}, err
	}
	c := DynamoDBChange{AWSRegion: w.AWSRegion, EventID: w.EventID, EventName: w.EventName, UserIdentity: w.UserIdentity,
		RecordFormat: w.RecordFormat, TableName: w.TableName, EventSource: w.EventSource}
	if x := w.DynamoDB; x != nil {
		c.Change = true
		c.CreationTime, c.Precision, c.SizeBytes = x.ApproximateCreationDateTime, x.ApproximateCreationDateTimePrecision, x.SizeBytes
		c.Keys, c.NewImage, c.OldImage = rawImage(x.Keys), rawImage(x.NewImage), rawImage(x.OldImage)
	}
	return c, nil
}

// rawImage is an image's JSON, nil when absent or null.
func rawImage(m json.RawMessage) []byte {
	if m == nil || string(m) == "null" {
		return nil
	}
	return m
}

func sameDynamoDBChange(a, b DynamoDBChange) bool {
	for _, p := range [][2]*[]byte{{&a.Keys, &b.Keys}, {&a.NewImage, &b.NewImage}, {&a.OldImage, &b.OldImage}} {
		x, y := *p[0], *p[1]
		if (x == nil) != (y == nil) || !bytes.Equal(x, y) {
			return false
		}
		*p[0], *p[1] = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

var ddbChangeSeeds = []string{
	ddbChangeRecord("c-1", `,"NewImage":{"id":{"S":"o-1"},"n":{"N":"2"},"f":{"N":"1.5"},"b":{"BOOL":true}},"OldImage":{"id":{"S":"o-1"},"n":{"N":"1"}}`),
	ddbChangeRecord("c-2", `,"NewImage":{"id":{"S":"o-1"},"Msg":{"M":{"a":{"L":[{"S":"x"}]}}}}`),
	ddbChangeRecord("c-3", `,"OldImage":null`), ddbChangeRecord("c-4", `,"NewImage":{"n":{"S":"x"}}`), ddbChangeRecord("c-5", `,"NewImage":"x"`),
	ddbChangeRecord("c-6", `,"NewImage":{"id":{"S":"a","N":"1"}}`), ddbChangeRecord("c-7", `,"NewImage":{"i8":{"N":"300"}}`),
	`{"eventSource":"aws:dynamodb","dynamodb":null}`, `{"eventSource":"aws:dynamodb","dynamodb":{}}`, `{"dynamodb":{"SizeBytes":1.5}}`,
	`{"dynamodb":{"ApproximateCreationDateTime":1e400}}`, `{"dynamodb":{"ApproximateCreationDateTime":null,"SizeBytes":null}}`,
	`{"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}}`, `{"userIdentity":{"x":1}}`, `{"userIdentity":{}}`,
	`{"eventID":"a","eventID":"b"}`, `{"EventID":"a"}`, `{"dynamodb":{"Keys":{"a":{"S":"\u00e9"}},"Other":1}}`, `{}`, `[]`, `{} x`,
}

// FuzzDynamoDBChange checks DecodeDynamoDBChange against encoding/json,
// and the images it keeps decode as DecodeImage decodes them.
func FuzzDynamoDBChange(f *testing.F) {
	for _, s := range ddbChangeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ref, refErr := refDynamoDBChange(in)
		got, err := DecodeDynamoDBChange(in)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: DecodeDynamoDBChange error %v, encoding/json %v", in, err, refErr)
		}
		if err != nil {
			return
		}
		if !sameDynamoDBChange(got, ref) {
			t.Fatalf("%q:\nDecodeDynamoDBChange %#v\n           reference %#v", in, got, ref)
		}
		for _, img := range [][]byte{got.NewImage, got.OldImage} {
			var item, want ddbFuzzItem
			err := DecodeImage(img, &item)
			m, merr := refImageMap(img)
			if merr == nil {
				merr = sevents.UnmarshalImage(m, &want)
			}
			if (err == nil) != (merr == nil) || err == nil && item != want {
				t.Fatalf("%q: image %q decoded %#v (%v), aws-lambda-go and UnmarshalImage %#v (%v)", in, img, item, err, want, merr)
			}
		}
	})
}

func TestDecodeDynamoDBChangeShape(t *testing.T) {
	c, err := DecodeDynamoDBChange([]byte(ddbChangeRecord("c-1", `,"NewImage":{"id":{"S":"o-1"},"n":{"N":"2"}},"OldImage":{"id":{"S":"o-1"},"n":{"N":"1"}}`)))
	var nw, old ddbFuzzItem
	if err == nil {
		err = DecodeImage(c.NewImage, &nw)
	}
	if err == nil {
		err = DecodeImage(c.OldImage, &old)
	}
	if err != nil || !c.Change || c.EventID != "c-1" || nw.N != 2 || old.N != 1 || nw.ID != "o-1" || c.SizeBytes != 120 || c.CreationTime != 1762162200000 {
		t.Fatalf("%v %#v %#v %#v", err, c, nw, old)
	}
}
