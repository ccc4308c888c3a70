package localtest

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
		{"empty body", ``, verdictSuccess, nil},
		{"null body", `null`, verdictSuccess, nil},
		{"empty object", `{}`, verdictSuccess, nil},
		{"null list", `{"batchItemFailures":null}`, verdictSuccess, nil},
		{"empty list", `{"batchItemFailures":[]}`, verdictSuccess, nil},
		{"one failure", `{"batchItemFailures":[{"itemIdentifier":"3"}]}`, verdictPartial, []int{2}},
		{"edge 3: failures at 5 and 3 sorted", `{"batchItemFailures":[{"itemIdentifier":"5"},{"itemIdentifier":"3"}]}`, verdictPartial, []int{2, 4}},
		{"duplicates collapse", `{"batchItemFailures":[{"itemIdentifier":"5"},{"itemIdentifier":"5"}]}`, verdictPartial, []int{4}},
		{"empty identifier", `{"batchItemFailures":[{"itemIdentifier":""}]}`, verdictWhole, nil},
		{"null identifier", `{"batchItemFailures":[{"itemIdentifier":null}]}`, verdictWhole, nil},
		{"wrong key name", `{"batchItemFailures":[{"itemId":"3"}]}`, verdictWhole, nil},
		{"unknown identifier", `{"batchItemFailures":[{"itemIdentifier":"42"}]}`, verdictWhole, nil},
		{"invalid JSON", `{"batchItemFailures":[`, verdictWhole, nil},
		{"not an object", `"ok"`, verdictWhole, nil},
		{"list not a list", `{"batchItemFailures":{"itemIdentifier":"3"}}`, verdictWhole, nil},
		{"number identifier", `{"batchItemFailures":[{"itemIdentifier":3}]}`, verdictWhole, nil},
		{"extra fields ignored", `{"batchItemFailures":[{"itemIdentifier":"3","x":1}],"y":2}`, verdictPartial, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := readStringResponse([]byte(tt.body), ids)
			if v.kind != tt.kind || !slices.Equal(v.reported, tt.reported) {
				t.Fatalf("got %+v, want %s %v", v, tt.kind, tt.reported)
			}
			if v.kind == verdictWhole && v.reason == "" {
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
		{"recorded: top-level []", `[]`, verdictSuccess, verdictWhole, nil},
		{"[] with spaces", " [ ] ", verdictSuccess, verdictWhole, nil},
		{"[] padded", "\n[]\n", verdictSuccess, verdictWhole, nil},
		{"non-empty array", `[{"itemIdentifier":"2"}]`, verdictWhole, verdictWhole, nil},
		{"an object still reads", `{"batchItemFailures":[{"itemIdentifier":"2"}]}`, verdictPartial, verdictPartial, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v := readStreamResponse([]byte(tt.body), ids); v.kind != tt.stream || !slices.Equal(v.reported, tt.streamRead) {
				t.Fatalf("stream: got %+v, want %s", v, tt.stream)
			}
			if v := readStringResponse([]byte(tt.body), ids); v.kind != tt.sqs {
				t.Fatalf("SQS: got %+v, want %s", v, tt.sqs)
			}
		})
	}
}

func TestReadKafkaResponse(t *testing.T) {
	refs := []kafkaRef{{"t-0", 10}, {"t-0", 11}, {"t-1", 5}}
	tests := []struct {
		name     string
		body     string
		kind     string
		reported []int
	}{
		{"success", `{"batchItemFailures":[]}`, verdictSuccess, nil},
		{"one", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":11}}]}`, verdictPartial, []int{1}},
		{"edge 14: offset not in batch", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":12}}]}`, verdictWhole, nil},
		{"partition not in batch", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-2","offset":10}}]}`, verdictWhole, nil},
		{"string identifier", `{"batchItemFailures":[{"itemIdentifier":"t-0@10"}]}`, verdictWhole, nil},
		{"missing offset", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0"}}]}`, verdictWhole, nil},
		{"fractional offset", `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":10.5}}]}`, verdictWhole, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := readKafkaResponse([]byte(tt.body), refs)
			if v.kind != tt.kind || !slices.Equal(v.reported, tt.reported) {
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
		v := readStringResponse(body, ids)
		switch v.kind {
		case verdictSuccess:
		case verdictPartial:
			if len(v.reported) == 0 || !slices.IsSorted(v.reported) {
				t.Fatalf("partial %v", v.reported)
			}
			for _, i := range v.reported {
				if i < 0 || i >= len(ids) {
					t.Fatalf("index %d", i)
				}
			}
		case verdictWhole:
			if v.reason == "" {
				t.Fatal("no reason")
			}
		default:
			t.Fatalf("kind %q", v.kind)
		}
	})
}

func FuzzReadKafkaResponse(f *testing.F) {
	f.Add([]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-0","offset":11}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		refs := []kafkaRef{{"t-0", 10}, {"t-0", 11}}
		v := readKafkaResponse(body, refs)
		if v.kind == verdictPartial {
			for _, i := range v.reported {
				if i < 0 || i >= len(refs) {
					t.Fatalf("index %d", i)
				}
			}
		}
	})
}
