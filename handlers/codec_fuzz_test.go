package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"

	sevents "github.com/sluicehq/sluice/events"
)

// probeInner, probeEmbedded and probeText are parts of codecProbe.
type probeInner struct {
	A string `json:"a"`
	B *int   `json:"b,omitempty"`
}

type ProbeEmbedded struct {
	E  string
	In probeInner `json:"in"`
}

// probeText has a method of its own: its UnmarshalJSON sees the value's
// bytes and keeps a copy.
type probeText struct{ raw string }

func (p *probeText) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		return errors.New("probeText: no arrays")
	}
	p.raw = string(b)
	return nil
}

// codecProbe has a field of each kind the default codec treats apart:
// pointers, maps, interfaces, slices of structs, an embedded struct,
// string-tagged numbers, raw JSON, a method of its own, time.Time, fixed
// arrays, and fields matched case-insensitively.
type codecProbe struct {
	ProbeEmbedded
	Name    string            `json:"name"`
	Count   int8              `json:"count"`
	Big     uint64            `json:"big,string"`
	Ratio   float32           `json:"ratio"`
	On      *bool             `json:"on"`
	Any     any               `json:"any"`
	Map     map[string]int    `json:"map"`
	IntKeys map[int]string    `json:"intKeys"`
	Items   []probeInner      `json:"items"`
	Ptr     *probeInner       `json:"ptr"`
	Raw     json.RawMessage   `json:"raw"`
	Text    probeText         `json:"text"`
	At      time.Time         `json:"at"`
	Pair    [2]int            `json:"pair"`
	Bytes   []byte            `json:"bytes"`
	Skip    string            `json:"-"`
	Strs    map[string]string `json:"strs"`
	CamelID string
}

// codecClash has what only encoding/json's v1 rules take: tags
// go-json-experiment's own rules refuse (a field named "-" by "-,", a name
// in quotes, which encoding/json does not take as a name), a key matching
// two fields case-insensitively (the first declared wins), a string tag
// on a string, a channel (null is all it takes).
type codecClash struct {
	//lint:ignore SA5008 the tag encoding/json reads as the name "-" is the point
	Dash   int    `json:"-,"`
	Quoted int    `json:"'q'"`
	Name   string `json:"Name"`
	NAME   string `json:"NAME"`
	Label  string `json:"label,string"`
	Ch     chan int
}

// codecSeeds are payloads for both probe types.
var codecSeeds = []string{
	`{"name":"n","count":127,"big":"18446744073709551615","ratio":1.5,"on":true,"any":{"k":[1,"s",null,true]},"map":{"a":1},"intKeys":{"-3":"x"},"items":[{"a":"x","b":2}],"ptr":{"a":"p"},"raw":{"r":[1]},"text":"t","at":"2025-11-03T09:30:00Z","pair":[1,2,3],"bytes":"AQI=","-":"x","strs":{"k":"v"},"camelid":"c","E":"e","in":{"a":"i"}}`,
	`{"count":128}`, `{"count":-129}`, `{"big":18}`, `{"big":"x"}`, `{"ratio":1e39}`, `{"on":null}`, `{"items":null}`, `{"items":[null]}`,
	`{"map":{"a":"1"}}`, `{"intKeys":{"x":"1"}}`, `{"text":[1]}`, `{"text":{"x":1}}`, `{"at":"yesterday"}`, `{"pair":[1]}`, `{"bytes":"%%"}`,
	`{"NAME":"upper"}`, `{"name":"lower"}`, `{"nAmE":"mixed"}`, `{"-":1}`, `{"'q'":1,"Quoted":2}`, `{"label":"\"q\""}`, `{"label":"q"}`, `{"ch":null}`, `{"ch":1}`,
	`{"raw":nul}`, `{"name":"a"`, `{"name":"a"} {}`, `[]`, `null`, `"s"`, `{"any":1e400}`, `{"in":{"b":"2"}}`, `{"ptr":{"b":1},"ptr":{"a":"2"}}`,
	`{"name":"\ud800","strs":{"\u00e9":"\udc00"}}`, "{\"name\":\"\xff\"}", `{"items":[{"a":1},{"a":"ok"}],"name":"after"}`,
}

// FuzzCodecProbesAgree keeps the default codec, as the handlers call it
// (a zero value: one pass, encoding/json's rules where it fails), equal
// to encoding/json on types with every kind of field, including one that
// only encoding/json's rules take: the same value when both accept, an
// error from both when either refuses, and then the error of
// go-json-experiment's v1 Unmarshal (encoding/json's rules and types).
func FuzzCodecProbesAgree(f *testing.F) {
	for _, s := range codecSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		probeAgrees[codecProbe](t, in)
		probeAgrees[codecClash](t, in)
	})
}

func probeAgrees[T any](t *testing.T, in []byte) {
	t.Helper()
	var a, b T
	errA := decodeValue(JSON(), append([]byte(nil), in...), &a)
	errB := json.Unmarshal(in, &b)
	if (errA == nil) != (errB == nil) {
		t.Fatalf("%T: default codec error %v, encoding/json error %v, on %q", a, errA, errB, in)
	}
	if errA != nil {
		var c T
		if errC := jsonv1.Unmarshal(in, &c); errC == nil || errA.Error() != errC.Error() {
			t.Fatalf("%T on %q: default codec error %q, jsonv1.Unmarshal's %v", a, in, errA, errC)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%T on %q:\n codec %+v\n   std %+v", a, in, a, b)
	}
}

// TestCodecFullRulesOnlyWhenNeeded: a type only encoding/json's rules
// take decodes as encoding/json decodes it, and turns that codec to the
// full rules; a plain type's codec stays on one pass, even after records
// that do not decode.
func TestCodecFullRulesOnlyWhenNeeded(t *testing.T) {
	c := JSON().(*jsonCodec)
	var o benchOrder
	if err := decodeValue(Codec(c), []byte(`{"amount":"x"}`), &o); err == nil {
		t.Fatal("a string amount decoded")
	}
	if err := decodeValue(Codec(c), []byte(`{"orderId":`), &o); err == nil {
		t.Fatal("a payload that ends early decoded")
	}
	if c.full.Load() {
		t.Fatal("records that do not decode turned the codec to the full rules")
	}
	var v, want codecClash
	in := []byte(`{"-":1,"Quoted":2,"nAmE":"n","label":"\"l\""}`)
	if err := decodeValue(Codec(c), in, &v); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(in, &want); err != nil || v != want {
		t.Fatalf("decoded %+v, encoding/json %+v (%v)", v, want, err)
	}
	if !c.full.Load() {
		t.Fatal("the codec did not turn to the full rules for a type that needs them")
	}
}

// TestCodecFullRulesLogged: the switch to the full v1 rules is never
// silent: a handler whose payload type needs them logs it once, naming the
// type, however many payloads follow.
func TestCodecFullRulesLogged(t *testing.T) {
	var logs bytes.Buffer
	h, err := NewSQS(func(context.Context, SQSRecord[codecClash]) error { return nil },
		WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	b := &sevents.SQSBuilder{}
	for range 3 {
		b.Add(`{"-":1,"nAmE":"n"}`)
	}
	for range 2 {
		ev, err := sevents.MarshalEvent(b.Event())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Invoke(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "decodes only under encoding/json's full rules"); n != 1 || !strings.Contains(logs.String(), "codecClash") {
		t.Fatalf("%d notes of the switch, want 1 naming the type:\n%s", n, logs.String())
	}
}
