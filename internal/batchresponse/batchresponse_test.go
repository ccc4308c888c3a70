package batchresponse

import (
	"slices"
	"testing"
)

func TestReadStringResponse(t *testing.T) {
	ids := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
	tests := []struct {
		name     string
		body     string
		kind     string
		reported []int
	}{
		{"empty body", ``, Success, nil},
		{"null body", `null`, Success, nil},
		{"empty object", `{}`, Success, nil},
		{"null list", `{"batchItemFailures":null}`, Success, nil},
		{"empty list", `{"batchItemFailures":[]}`, Success, nil},
		{"one failure", `{"batchItemFailures":[{"itemIdentifier":"3"}]}`, Partial, []int{2}},
		{"edge 3: failures at 5 and 3 sorted", `{"batchItemFailures":[{"itemIdentifier":"5"},{"itemIdentifier":"3"}]}`, Partial, []int{2, 4}},
		{"duplicates collapse", `{"batchItemFailures":[{"itemIdentifier":"5"},{"itemIdentifier":"5"}]}`, Partial, []int{4}},
		{"empty identifier", `{"batchItemFailures":[{"itemIdentifier":""}]}`, Whole, nil},
		{"null identifier", `{"batchItemFailures":[{"itemIdentifier":null}]}`, Whole, nil},
		{"wrong key name", `{"batchItemFailures":[{"itemId":"3"}]}`, Whole, nil},
		{"unknown identifier", `{"batchItemFailures":[{"itemIdentifier":"42"}]}`, Whole, nil},
		{"invalid JSON", `{"batchItemFailures":[`, Whole, nil},
		{"not an object", `"ok"`, Whole, nil},
		{"list not a list", `{"batchItemFailures":{"itemIdentifier":"3"}}`, Whole, nil},
		{"number identifier", `{"batchItemFailures":[{"itemIdentifier":3}]}`, Whole, nil},
		{"extra fields ignored", `{"batchItemFailures":[{"itemIdentifier":"3","x":1}],"y":2}`, Partial, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Strings([]byte(tt.body), ids)
			if v.Kind != tt.kind || !slices.Equal(v.Reported, tt.reported) {
				t.Fatalf("got %+v, want %s %v", v, tt.kind, tt.reported)
			}
			if v.Kind == Whole && v.Reason == "" {
				t.Fatal("a whole-batch failure must say why")
			}
		})
	}
}

func TestReadStreamResponseEmptyArray(t *testing.T) {
	ids := []string{"1", "2", "3"}
	tests := []struct {
		name       string
		body       string
		stream     string // verdict for Kinesis and DynamoDB Streams
		sqs        string // verdict for SQS
		streamRead []int
	}{
		{"recorded: top-level []", `[]`, Success, Whole, nil},
		{"[] with spaces", " [ ] ", Success, Whole, nil},
		{"[] padded", "\n[]\n", Success, Whole, nil},
		{"non-empty array", `[{"itemIdentifier":"2"}]`, Whole, Whole, nil},
		{"an object still reads", `{"batchItemFailures":[{"itemIdentifier":"2"}]}`, Partial, Partial, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := Stream([]byte(tt.body), ids); v.Kind != tt.stream || !slices.Equal(v.Reported, tt.streamRead) {
				t.Fatalf("stream: got %+v, want %s", v, tt.stream)
			}
			if v := Strings([]byte(tt.body), ids); v.Kind != tt.sqs {
				t.Fatalf("SQS: got %+v, want %s", v, tt.sqs)
			}
		})
	}
}

func TestReadKafkaResponse(t *testing.T) {
	refs := []KafkaRef{{"t-0", 10}, {"t-0", 11}, {"t-1", 5}}
	tests := []struct {
		name     string
		body     string
		kind     string
		reported []int
	}{
		{"success", `{"batchItemFailures":[]}`, Success, nil},
		{"one", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":11}}]}`, Partial, []int{1}},
		{"edge 14: offset not in batch", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":12}}]}`, Whole, nil},
		{"partition not in batch", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-2","offset":10}}]}`, Whole, nil},
		{"string identifier", `{"batchItemFailures":[{"itemIdentifier":"t-0@10"}]}`, Whole, nil},
		{"missing offset", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0"}}]}`, Whole, nil},
		{"fractional offset", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":10.5}}]}`, Whole, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Kafka([]byte(tt.body), refs)
			if v.Kind != tt.kind || !slices.Equal(v.Reported, tt.reported) {
				t.Fatalf("got %+v, want %s %v", v, tt.kind, tt.reported)
			}
		})
	}
}

func FuzzReadStringResponse(f *testing.F) {
	f.Add([]byte(`{"batchItemFailures":[{"itemIdentifier":"3"}]}`))
	f.Add([]byte(`{"batchItemFailures":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ids := []string{"1", "2", "3"}
		v := Strings(body, ids)
		switch v.Kind {
		case Success:
		case Partial:
			if len(v.Reported) == 0 || !slices.IsSorted(v.Reported) {
				t.Fatalf("partial %v", v.Reported)
			}
			for _, i := range v.Reported {
				if i < 0 || i >= len(ids) {
					t.Fatalf("index %d", i)
				}
			}
		case Whole:
			if v.Reason == "" {
				t.Fatal("no reason")
			}
		default:
			t.Fatalf("kind %q", v.Kind)
		}
	})
}

func FuzzReadKafkaResponse(f *testing.F) {
	f.Add([]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":11}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		refs := []KafkaRef{{"t-0", 10}, {"t-0", 11}}
		v := Kafka(body, refs)
		if v.Kind == Partial {
			for _, i := range v.Reported {
				if i < 0 || i >= len(refs) {
					t.Fatalf("index %d", i)
				}
			}
		}
	})
}
