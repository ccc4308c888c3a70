package eventscan

import (
	"encoding/json"
	"testing"
)

func TestIsFirehoseEvent(t *testing.T) {
	for in, want := range map[string]bool{
		`{"records":[]}`:                              true,
		`{"records" : [{"recordId":"1"}]}`:            true,
		`{"invocationId":"x"}`:                        true,
		`{"deliveryStreamArn":"x","records":null}`:    true,
		`{"records":{"t-0":[]}}`:                      false, // Kafka
		`{"Records":[{"recordId":"1"}]}`:              false, // the mapping sources' array
		`{"RECORDS":[]}`:                              false,
		`{"eventSource":"aws:kafka","records":{}}`:    false,
		`{"Records":[{"eventSource":"aws:kinesis"}]}`: false,
	} {
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &top); err != nil {
			t.Fatal(err)
		}
		if got := IsFirehoseEvent(top); got != want {
			t.Errorf("IsFirehoseEvent(%s) = %v, want %v", in, got, want)
		}
	}
}
