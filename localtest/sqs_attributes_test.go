package localtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	sevents "github.com/sluicehq/sluice/events"
)

func str(s string) *string { return &s }

func TestMD5OfMessageAttributes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string]MessageAttribute
		want  string
	}{
		{"none", nil, ""},
		// Values other SQS implementations check against (the AWS SDK for
		// JavaScript's checksum tests, sqslite).
		{"one string", map[string]MessageAttribute{"SellerName": {DataType: "String", StringValue: str("Example Store")}},
			"cd28f3b68aeee4b2eac9c66f2f694b58"},
		{"number and string, sorted by name", map[string]MessageAttribute{
			"ordinal":  {DataType: "Number", StringValue: str("1")},
			"category": {DataType: "String", StringValue: str("test")},
		}, "d21ae90c49061e927f57df5f5d72be1f"},
	} {
		if got := md5OfMessageAttributes(tc.attrs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckMessageAttributes(t *testing.T) {
	ok := MessageAttribute{DataType: "String", StringValue: str("x")}
	many := map[string]MessageAttribute{}
	for _, n := range strings.Split("a b c d e f g h i j k", " ") {
		many[n] = ok
	}
	for _, tc := range []struct {
		name  string
		attrs map[string]MessageAttribute
		want  string
	}{
		{"fine", map[string]MessageAttribute{"a": ok, "b": {DataType: "Number.int", StringValue: str("1")},
			"c": {DataType: "Binary", BinaryValue: []byte{0, 1}}}, ""},
		{"eleven", many, "at most 10"},
		{"reserved", map[string]MessageAttribute{"AWS.x": ok}, "reserved"},
		{"dots", map[string]MessageAttribute{"a..b": ok}, "period"},
		{"type", map[string]MessageAttribute{"a": {DataType: "Date", StringValue: str("x")}}, `dataType "Date"`},
		{"no string value", map[string]MessageAttribute{"a": {DataType: "Number"}}, "needs a stringValue"},
		{"no binary value", map[string]MessageAttribute{"a": {DataType: "Binary", StringValue: str("x")}}, "needs a binaryValue"},
		{"lists", map[string]MessageAttribute{"a": {DataType: "String", StringValue: str("x"), StringListValues: []string{"y"}}}, "reserved by SQS"},
	} {
		err := checkMessageAttributes(tc.attrs)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A records line's message attributes, in the event's shape or the SQS
// API's, reach the function as an SQS event carries them, with
// md5OfMessageAttributes; a record without any has none.
func TestRunSQSMessageAttributes(t *testing.T) {
	recs, err := ReadRecords(strings.NewReader(`{"body":"a","messageAttributes":{"color":{"dataType":"String","stringValue":"red"},"n":{"DataType":"Number","StringValue":"7"},"raw":{"dataType":"Binary","binaryValue":"AAH/"}}}
{"body":"b","messageAttributes":{"x":{"dataType":"String","stringValue":"y","stringListValues":[],"binaryListValues":[]}}}
{"body":"c"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]json.RawMessage
	h := fn(func(_ context.Context, p []byte) ([]byte, error) {
		var ev struct{ Records []map[string]json.RawMessage }
		if err := json.Unmarshal(p, &ev); err != nil {
			return nil, err
		}
		got = append(got, ev.Records...)
		return nil, nil
	})
	run(t, Options{Mapping: &Mapping{EventSource: sevents.SourceSQS}, Records: recs, Invoker: InProcess(h)})
	if len(got) != 3 {
		t.Fatalf("%d records delivered, want 3", len(got))
	}
	wantAttrs := []string{
		`{"color":{"stringValue":"red","stringListValues":[],"binaryListValues":[],"dataType":"String"},"n":{"stringValue":"7","stringListValues":[],"binaryListValues":[],"dataType":"Number"},"raw":{"binaryValue":"AAH/","stringListValues":[],"binaryListValues":[],"dataType":"Binary"}}`,
		`{"x":{"stringValue":"y","stringListValues":[],"binaryListValues":[],"dataType":"String"}}`,
		`{}`,
	}
	for i, r := range got {
		if string(r["messageAttributes"]) != wantAttrs[i] {
			t.Errorf("record %d messageAttributes %s, want %s", i, r["messageAttributes"], wantAttrs[i])
		}
		var m events.SQSMessage
		b, _ := json.Marshal(r)
		json.Unmarshal(b, &m)
		want := md5OfMessageAttributes(recs[i].MessageAttributes)
		if m.Md5OfMessageAttributes != want || (want == "") != (string(r["md5OfMessageAttributes"]) == "" || string(r["md5OfMessageAttributes"]) == "null") {
			t.Errorf("record %d md5OfMessageAttributes %s, want %q", i, r["md5OfMessageAttributes"], want)
		}
	}
	bad := []InputRecord{{Body: json.RawMessage(`"x"`), MessageAttributes: map[string]MessageAttribute{"a": {DataType: "Number"}}}}
	_, err = Run(context.Background(), Options{Mapping: &Mapping{EventSource: sevents.SourceSQS}, Records: bad, Invoker: InProcess(h)})
	if err == nil || !strings.Contains(err.Error(), "record 1") || !strings.Contains(err.Error(), "needs a stringValue") {
		t.Errorf("Run with a bad attribute: %v", err)
	}
}
