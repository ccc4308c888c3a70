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

func TestEventSourceOf(t *testing.T) {
	for in, want := range map[string]string{
		`{"Records":[{"eventSource":"aws:sqs"}]}`:                      "aws:sqs",
		`{"Records":[{"eventID":"1"},{"eventSource":"aws:kinesis"}]}`:  "aws:kinesis",
		`{"Records":[{"eventSource":7}],"eventSource":"x"}`:            "x",
		`{"eventSource":"aws:kafka","records":{}}`:                     "aws:kafka",
		`{"Records":[{"eventID":"1"}]}`:                                "",
		`{"records":[{"recordId":"1"}],"deliveryStreamArn":"arn:x:y"}`: "",
	} {
		var top map[string]json.RawMessage
		var anyTop map[string]any
		if json.Unmarshal([]byte(in), &top) != nil || json.Unmarshal([]byte(in), &anyTop) != nil {
			t.Fatal(in)
		}
		if got := EventSourceOf(top); got != want {
			t.Errorf("EventSourceOf(%s) = %q, want %q", in, got, want)
		}
		if got := EventSourceOfAny(anyTop); got != want {
			t.Errorf("EventSourceOfAny(%s) = %q, want %q", in, got, want)
		}
	}
}
