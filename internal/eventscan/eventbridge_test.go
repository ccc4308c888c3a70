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
		ReplayName string          `json:"replay-name"`
		Detail     json.RawMessage `json:"detail"`
	}
	err := json.Unmarshal(data, &w)
	return EventBridge{w.Version, w.ID, w.DetailType, w.Source, w.Account, w.Time, w.Region, w.Resources, w.ReplayName, SharedJSON(w.Detail)}, err
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
	`{"Detail":{}}`, `{"id":"a","id":"b"}`, `{"replay-name":"r"}`, `{"replay-name":1}`, `{"replay-name":null,"Replay-Name":"s"}`, `{"detail":1 }`, `{"detail": }`, `{"detail":{}} x`,
	`{}`, `[]`, `null`, `{"id":"\ud800"}`,
}

// FuzzEventBridge checks DecodeEventBridge against encoding/json.
func FuzzEventBridge(f *testing.F) {
	for _, s := range eventBridgeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ref, refErr := refEventBridge(in)
		got, err := DecodeEventBridge(in)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: DecodeEventBridge error %v, encoding/json %v", in, err, refErr)
		}
		if err == nil && !sameEventBridge(got, ref) {
			t.Fatalf("%q:\nDecodeEventBridge %#v\n        reference %#v", in, got, ref)
		}
	})
}

func TestDecodeEventBridgeShape(t *testing.T) {
	in := []byte(awsevents.EventBridgeEvent("e-1", `{"a":"b"}`))
	e, err := DecodeEventBridge(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(bytes.TrimSpace(e.Detail)) != `{"a":"b"}` || e.ID != "e-1" || len(e.Resources) != 1 || e.Time.IsZero() || e.ReplayName != "" {
		t.Fatalf("%#v", e)
	}
	for _, s := range []string{`{"Detail":{},"id":"x"}`, `{"id":"a","id":"x"}`, `{"replay-name":"r","id":"x"}`} {
		if e, err := DecodeEventBridge([]byte(s)); err != nil || e.ID != "x" {
			t.Errorf("%s: %#v %v", s, e, err)
		}
	}
	// A replayed event names its replay; a replay-name that is not a
	// string is refused, as encoding/json refuses it.
	if e, err := DecodeEventBridge([]byte(`{"id":"x","replay-name":"fix-1"}`)); err != nil || e.ReplayName != "fix-1" {
		t.Errorf("replay-name: %#v %v", e, err)
	}
	if _, err := DecodeEventBridge([]byte(`{"id":"x","replay-name":1}`)); err == nil {
		t.Error("a numeric replay-name was taken")
	}
}
