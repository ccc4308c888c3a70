package eventscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// refSNS is the reference: encoding/json into the same fields.
func refSNS(data []byte) (SNS, error) {
	var w struct {
		Type              string          `json:"Type"`
		MessageID         string          `json:"MessageId"`
		TopicArn          string          `json:"TopicArn"`
		Subject           string          `json:"Subject"`
		Message           string          `json:"Message"`
		Timestamp         string          `json:"Timestamp"`
		SignatureVersion  string          `json:"SignatureVersion"`
		Signature         string          `json:"Signature"`
		SigningCertURL    string          `json:"SigningCertURL"`
		UnsubscribeURL    string          `json:"UnsubscribeURL"`
		MessageAttributes json.RawMessage `json:"MessageAttributes"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return SNS{}, err
	}
	n := SNS{Type: w.Type, MessageID: w.MessageID, TopicArn: w.TopicArn, Subject: w.Subject, Message: w.Message, Timestamp: w.Timestamp,
		SignatureVersion: w.SignatureVersion, Signature: w.Signature, SigningCertURL: w.SigningCertURL, UnsubscribeURL: w.UnsubscribeURL}
	if w.MessageAttributes != nil && string(w.MessageAttributes) != "null" {
		n.MessageAttributes = SharedJSON(w.MessageAttributes)
	}
	return n, nil
}

func sameSNS(a, b SNS) bool {
	ma, mb := a.MessageAttributes, b.MessageAttributes
	a.MessageAttributes, b.MessageAttributes = nil, nil
	return reflect.DeepEqual(a, b) && (ma == nil) == (mb == nil) && bytes.Equal(ma, mb)
}

var snsSeeds = []string{
	awsevents.SNSNotification("m-1", `{"orderId":"o-1","amount":12.5,"note":"caf\u00e9 \"x\"\n"}`),
	awsevents.SNSNotification("m-2", "plain text"),
	awsevents.SNSNotification("m-3", ""),
	`{"Type":"Notification","MessageId":"a","Message":"x"}`,
	`{"Message":"x","Type":"Notification"}`,
	`{"Type":null,"MessageAttributes":null}`,
	`{"MessageAttributes":{}}`, `{"MessageAttributes":[]}`, `{"MessageAttributes":"x"}`, `{"MessageAttributes":{"a":[1,-2.5e3,true,false,null,"\u00e9\ud800"]}}`,
	`{"MessageAttributes":{"a":01}}`, `{"MessageAttributes":{"a":"\x"}}`, `{"MessageAttributes":{"a" 1}}`,
	`{"type":"Notification"}`, `{"SigningCertUrl":"u"}`, `{"Type":"a","Type":"b"}`, `{"Unknown":1}`,
	`{"Message":"\ud83d\ude00"}`, "{\"Message\":\"\xff\"}", `{"Message":"é"}`, `{"Message":1}`,
	`{}`, ` { } `, `{} x`, `[]`, `null`, `{"Type":"N"`, `{"Message":"a\tb"}`, "{\"Message\":\"a\tb\"}",
	`{"Subject":"\u0041\/\\"}`,
}

// FuzzSNS checks DecodeSNS against encoding/json on every input.
func FuzzSNS(f *testing.F) {
	for _, s := range snsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ref, refErr := refSNS(in)
		got, err := DecodeSNS(in)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: DecodeSNS error %v, encoding/json %v", in, err, refErr)
		}
		if err == nil && !sameSNS(got, ref) {
			t.Fatalf("%q:\nDecodeSNS %#v\nreference %#v", in, got, ref)
		}
	})
}

func TestDecodeSNSShape(t *testing.T) {
	in := []byte(awsevents.SNSNotification("m-1", `{"a":"b"}`))
	n, err := DecodeSNS(in)
	if err != nil {
		t.Fatal(err)
	}
	if n.Message != `{"a":"b"}` || n.MessageID != "m-1" || !bytes.HasPrefix(n.MessageAttributes, []byte(`{`)) || !bytes.HasSuffix(n.MessageAttributes, []byte(`}`)) {
		t.Fatalf("%#v", n)
	}
	// What the reader once left to a general decoder, it now reads as
	// encoding/json does: a key in another case, a repeated key, a key SNS
	// may add one day.
	for _, s := range []string{`{"type":"Notification"}`, `{"Type":"a","Type":"Notification"}`, `{"Unknown":1,"Type":"Notification"}`} {
		if n, err := DecodeSNS([]byte(s)); err != nil || n.Type != "Notification" {
			t.Errorf("%s: %#v %v", s, n, err)
		}
	}
}

// FuzzParseTime checks ParseTime against time.Parse (RFC3339Nano) and
// encoding/json's time.Time.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2012-03-29T05:12:16.901Z", "2017-12-22T18:43:48Z", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z",
		"2024-04-31T00:00:00Z", "2024-12-31T23:59:59.123456789Z", "2024-12-31T23:59:60Z", "2024-12-31T24:00:00Z", "2024-00-01T00:00:00Z",
		"2024-01-01T00:00:00.Z", "2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00.1234567891Z", "2024-01-01T00:00:00+01:00", "0000-01-01T00:00:00Z",
		"2024-1-01T00:00:00Z", "2024-01-01t00:00:00Z", "2024-01-01T00:00:00.-5Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseTime(s)
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !got.Equal(want) || got != want {
			t.Fatalf("%q: ParseTime %v, time.Parse %v %v", s, got, want, err)
		}
		var j time.Time
		if err := json.Unmarshal([]byte(strconv.Quote(s)), &j); err != nil || j != got {
			t.Fatalf("%q: ParseTime %v, encoding/json %v %v", s, got, j, err)
		}
	})
}
