package eventscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

func sqsSeeds(f *testing.F) {
	raw, _ := sevents.MarshalEvent((&sevents.SQSBuilder{}).Add(`{"id":"1","action":"fail"}`).Add(`{"id":"2"}`).Add("nope").Event())
	f.Add(raw)
	f.Add(sqsFixture(f, 3))
	for _, s := range []string{
		`{}`, `{"Records":null}`, `{"Records":[]}`, `{"Records":[{}]}`, ` {"Records" : [ { "body" : "" } ] } `,
		`{"Records":[{"messageId":"a\u0062c","body":"{\"x\":\"\\u0041\\n\"}"}]}`,
		`{"Records":[{"messageId":"m","body":"\u00e9\ud83d\ude00 é"}]}`,
		"{\"Records\":[{\"body\":\"\xff\"}]}",
		`{"Records":[{"body":"a\tb"}]}`, "{\"Records\":[{\"body\":\"a\tb\"}]}",
		`{"Records":[{"MessageId":"upper","messageId":"last"}]}`,
		`{"Records":[{"messageId":"a","messageId":"b"}]}`,
		`{"Records":[{"messageId":null,"attributes":null,"messageAttributes":null,"md5OfMessageAttributes":null}]}`,
		`{"Records":[{"attributes":{},"messageAttributes":{}}]}`,
		`{"Records":[{"attributes":{"SentTimestamp":"1","x\u0041":"y"},"messageAttributes":{"a":{"stringValue":"s","binaryValue":"AQI=","stringListValues":[],"binaryListValues":[],"dataType":"Binary"}}}]}`,
		`{"Records":[{"messageAttributes":{"a":{"binaryValue":""},"b":{"stringValue":null,"binaryValue":null,"stringListValues":null}}}]}`,
		`{"Records":[{"messageAttributes":{"a":{"binaryValue":"%%%"}}}]}`,
		`{"Records":[{"messageAttributes":{"a":{"stringListValues":["x"]}}}]}`,
		`{"Records":[{"attributes":{"a":"1","a":"2"}}]}`, `{"Records":[{"attributes":{"a":null}}]}`,
		`{"Records":[{"messageId":1}]}`, `{"Records":[{"attributes":{"a":1}}]}`, `{"Records":{}}`, `null`, `[]`,
		`{"Records":[{"awsRegion":"a"},{"awsRegion":"a"},{"awsRegion":"b"}]}`,
		`{"Records":[]} x`, `{"Records":[`, `{"Records":[{"body":"\ud800"}]}`, `{"Records":[{"body":"\u00"}]}`,
		// Unescaped in place: the gap between reading and writing grows past a word.
		`{"Records":[{"body":"{\"a\":\"b\",\"c\":\"d\",\"e\":[\"f\",\"g\"],\"long\":\"abcdefghijklmnopqrstuvwxyz0123456789\"}","messageId":"x"}]}`,
		`{"Records":[{"body":"\u00e9\u00e9\u00e9abcdefghijklmnop\n\t\/\\\\ é qrstuvwxyz\u2028end"}]}`,
		// A repeated value, spelled with and without escapes.
		`{"Records":[{"awsRegion":"a/b","eventSource":""},{"awsRegion":"a\/b","eventSource":""},{"awsRegion":"a/b","eventSource":null},{"awsRegion":"a/b "}]}`,
		// The key order changes from one message to the next.
		`{"Records":[{"messageId":"1","body":"a","awsRegion":"r"},{"awsRegion":"r","body":"b","messageId":"2"},{"body":"c"}]}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzSQSDecode checks that DecodeSQS and encoding/json agree on every
// input (an empty messageAttributes object aside, which DecodeSQS leaves
// nil): the same messages, or, where encoding/json refuses the event, a
// failed message or a failed event.
func FuzzSQSDecode(f *testing.F) {
	sqsSeeds(f)
	f.Add([]byte(`{"Records":[{"messageId":"m","newField":{"a":[1]},"attributes":{"SentTimestamp":"1","NewAttribute":"x"}}],"x":1}`))
	f.Add([]byte(`{"Records":[{"messageId":"m","body":1},{"messageId":"n"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, bodies, errs, err := DecodeSQSBodies(in, nil, nil)
		if err == nil && fast != nil {
			checkBodies(t, in, fast, bodies)
		}
		var ref struct {
			Records []events.SQSMessage `json:"Records"`
		}
		if rerr := json.Unmarshal(in, &ref); rerr != nil {
			if err == nil && !slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
				t.Fatalf("accepted what encoding/json rejects (%v): %q", rerr, in)
			}
			return
		}
		if err != nil || errs != nil {
			t.Fatalf("%q: error %v %v, encoding/json none", in, err, errs)
		}
		if (fast == nil) != (ref.Records == nil) || len(fast) != len(ref.Records) {
			t.Fatalf("%d records (nil %t), reference %d (nil %t)", len(fast), fast == nil, len(ref.Records), ref.Records == nil)
		}
		for i := range fast {
			a, b := fast[i], ref.Records[i]
			if a.MessageAttributes == nil && b.MessageAttributes != nil && len(b.MessageAttributes) == 0 {
				b.MessageAttributes = nil
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("record %d of %q:\n read %#v\nreference %#v", i, in, a, b)
			}
		}
	})
}

// TestSQSLongStrings runs long strings through the reader, escapes and
// non-ASCII text among them, and checks the result against encoding/json.
func TestSQSLongStrings(t *testing.T) {
	unit := `{\"sku\":\"SKU-1\",\"note\":\"a\\\\b\\/c\\n\\u00e9 é\"},`
	// Built by hand: unit is a JSON string's contents already.
	raw := []byte(`{"Records":[`)
	for i, n := range []int{1, 90, 700, 1500, 5, 3000} {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = append(raw, `{"messageId":"m`...)
		raw = append(raw, byte('0'+i))
		raw = append(raw, `","receiptHandle":"`...)
		for range n % 97 {
			raw = append(raw, "AQEB+/="...)
		}
		raw = append(raw, `","body":"[`...)
		for range n {
			raw = append(raw, unit...)
		}
		raw = append(raw, `{}]","attributes":{"SentTimestamp":"1"},"awsRegion":"us-east-1"}`...)
	}
	raw = append(raw, `]}`...)
	fast, errs, err := DecodeSQS(raw, nil)
	if err != nil || errs != nil {
		t.Fatal(err, errs)
	}
	var ref struct {
		Records []events.SQSMessage `json:"Records"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(fast) != len(ref.Records) {
		t.Fatalf("%d records, reference %d", len(fast), len(ref.Records))
	}
	for i := range fast {
		if !reflect.DeepEqual(fast[i], ref.Records[i]) {
			t.Fatalf("record %d: body of %d bytes, reference %d; equal %t", i, len(fast[i].Body), len(ref.Records[i].Body), fast[i].Body == ref.Records[i].Body)
		}
		var v []map[string]string
		if err := json.Unmarshal([]byte(fast[i].Body), &v); err != nil {
			t.Fatalf("record %d: the body is not the JSON it was: %v", i, err)
		}
	}
}

// checkBodies: each message's body bytes hold its Body's text, end where
// it ends (a body's slice cannot grow into the next), and are nil only
// for a message without a body.
func checkBodies(t *testing.T, in []byte, recs []events.SQSMessage, bodies [][]byte) {
	t.Helper()
	if len(bodies) != len(recs) {
		t.Fatalf("%q: %d bodies for %d messages", in, len(bodies), len(recs))
	}
	for i, b := range bodies {
		if string(b) != recs[i].Body || cap(b) != len(b) || b == nil && recs[i].Body != "" {
			t.Fatalf("%q: message %d: body bytes %q (cap %d, nil %t), Body %q", in, i, b, cap(b), b == nil, recs[i].Body)
		}
	}
}

// TestSQSBodies: the bodies come as bytes too, escaped or not, empty, null
// (left as it was), absent, repeated (the last wins) and across a repeated
// Records array (the message keeps what it had); into's and bodies' room
// is reused.
func TestSQSBodies(t *testing.T) {
	in := []byte(`{"Records":[{"messageId":"a","body":"{\"k\":\"v\u00e9\"}"},{"messageId":"b","body":"plain"},` +
		`{"messageId":"c","body":""},{"messageId":"d","body":null},{"messageId":"e"},{"messageId":"f","body":"x","body":"y"},` +
		`{"messageId":"g","body":"kept","body":null}],"Records":[{"messageId":"a2"}]}`)
	room := make([][]byte, 0, 16)
	recs, bodies, errs, err := DecodeSQSBodies(in, make([]events.SQSMessage, 0, 16), room)
	if err != nil || errs != nil {
		t.Fatal(err, errs)
	}
	want := []string{`{"k":"vé"}`, "plain", "", "", "", "y", "kept"}
	if len(recs) != 1 {
		t.Fatalf("%d messages, want 1 (the second Records array has one)", len(recs))
	}
	if recs[0].MessageId != "a2" || recs[0].Body != want[0] {
		t.Fatalf("message 0 after the second array: %+v", recs[0])
	}
	checkBodies(t, in, recs, bodies)
	if &bodies[:1][0] != &room[:1][0] {
		t.Fatal("the bodies' room was not reused")
	}
	recs, bodies, _, err = DecodeSQSBodies([]byte(string(in[:bytes.LastIndex(in, []byte(`,"Records"`))])+"}"), nil, nil)
	if err != nil || len(recs) != len(want) {
		t.Fatalf("%d messages, %v", len(recs), err)
	}
	checkBodies(t, in, recs, bodies)
	for i, w := range want {
		if recs[i].Body != w {
			t.Fatalf("message %d: body %q, want %q", i, recs[i].Body, w)
		}
	}
	if bodies[3] != nil || bodies[4] != nil || bodies[2] == nil {
		t.Fatalf("null and absent bodies %q %q, empty %q (nil %t)", bodies[3], bodies[4], bodies[2], bodies[2] == nil)
	}
	bodies[1][0] = 'X' // the bytes are the decoder's, not the string's
	if recs[1].Body != "plain" {
		t.Fatalf("a body changed with its bytes: %q", recs[1].Body)
	}
}
