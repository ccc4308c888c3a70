package eventscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// refEventBridge is the reference: encoding/json into the same fields.
func refEventBridge(data []byte) (EventBridge, error) {
	var w struct {
		Version    string          `json:"version"`
		ID         string          `json:"id"`
		DetailType string          `json:"detail-type"`
		Source     string          `json:"source"`
		Account    string          `json:"account"`
		Time       time.Time       `json:"time"`
		Region     string          `json:"region"`
		Resources  []string        `json:"resources"`
		Detail     json.RawMessage `json:"detail"`
	}
	err := json.Unmarshal(data, &w)
	return EventBridge{w.Version, w.ID, w.DetailType, w.Source, w.Account, w.Time, w.Region, w.Resources, SharedJSON(w.Detail)}, err
}

func sameEventBridge(a, b EventBridge) bool {
	da, db := a.Detail, b.Detail
	a.Detail, b.Detail = nil, nil
	return reflect.DeepEqual(a, b) && (da == nil) == (db == nil) && bytes.Equal(bytes.TrimSpace(da), db)
}

var eventBridgeSeeds = []string{
	awsevents.EventBridgeEvent("e-1", `{"orderId":"o-1","amount":12.5}`),
	awsevents.EventBridgeEvent("e-2", `"text"`), awsevents.EventBridgeEvent("e-3", `null`), awsevents.EventBridgeEvent("e-4", `{"a":1},"x":2`), awsevents.EventBridgeEvent("e-5", `{"a":`),
	`{"detail":{"a":[1,2,{"b":null}]},"id":"x","source":"s","detail-type":"t"}`,
	`{"id":"x","resources":[],"time":null}`, `{"resources":null}`, `{"resources":[null]}`, `{"resources":["a","b\u0041"]}`, `{"resources":"a"}`,
	`{"time":"2017-12-22T18:43:48.5Z"}`, `{"time":"2017-12-22T18:43:48+01:00"}`, `{"time":""}`, `{"time":1}`,
	`{"Detail":{}}`, `{"id":"a","id":"b"}`, `{"replay-name":"r"}`, `{"detail":1 }`, `{"detail": }`, `{"detail":{}} x`,
	`{}`, `[]`, `null`, `{"id":"\ud800"}`,
}

// FuzzEventBridge checks ReadEventBridge (both ways of taking the detail)
// and DecodeEventBridge against encoding/json.
func FuzzEventBridge(f *testing.F) {
	for _, s := range eventBridgeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ref, refErr := refEventBridge(in)
		if fast, ok := ReadEventBridge(in, true); ok {
			if refErr != nil {
				t.Fatalf("ReadEventBridge accepted what encoding/json rejects (%v): %q", refErr, in)
			}
			if !sameEventBridge(fast, ref) {
				t.Fatalf("%q:\n ReadEventBridge %#v\n       reference %#v", in, fast, ref)
			}
		}
		// Unchecked, a detail that is one JSON value must be the event's.
		if fast, ok := ReadEventBridge(in, false); ok && (fast.Detail == nil || json.Valid(fast.Detail)) {
			if refErr != nil {
				t.Fatalf("ReadEventBridge (unchecked) accepted what encoding/json rejects (%v): %q", refErr, in)
			}
			if !sameEventBridge(fast, ref) {
				t.Fatalf("%q:\n ReadEventBridge (unchecked) %#v\n                   reference %#v", in, fast, ref)
			}
		}
		got, err := DecodeEventBridge(in)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: DecodeEventBridge error %v, encoding/json %v", in, err, refErr)
		}
		if err == nil && !sameEventBridge(got, ref) {
			t.Fatalf("%q:\nDecodeEventBridge %#v\n        reference %#v", in, got, ref)
		}
	})
}

func TestReadEventBridgeShape(t *testing.T) {
	in := []byte(awsevents.EventBridgeEvent("e-1", `{"a":"b"}`))
	for _, check := range []bool{true, false} {
		e, ok := ReadEventBridge(in, check)
		if !ok {
			t.Fatalf("check %t: ReadEventBridge gave up on the event EventBridge writes", check)
		}
		if string(bytes.TrimSpace(e.Detail)) != `{"a":"b"}` || e.ID != "e-1" || len(e.Resources) != 1 || e.Time.IsZero() {
			t.Fatalf("check %t: %#v", check, e)
		}
	}
	for _, s := range []string{`{"Detail":{}}`, `{"id":"a","id":"b"}`, `{"replay-name":"r"}`} {
		if _, ok := ReadEventBridge([]byte(s), true); ok {
			t.Errorf("ReadEventBridge took %s, which the general decoder must settle", s)
		}
	}
}
