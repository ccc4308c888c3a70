package eventscan

import (
	"encoding/json"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

func TestKafkaSchemaMetadataPass(t *testing.T) {
	meta := `{"dataFormat":"AVRO","schemaId":"7"}`
	for _, tc := range []struct {
		name    string
		payload []byte
		n       int
		want    int // records with value metadata, -1 for nil
	}{
		{"no metadata", awsevents.KafkaSchemaEvent("", "", []string{"{}", "{}"}, ""), 2, -1},
		{"every record", awsevents.KafkaSchemaEvent("", "", []string{"{}", "{}"}, meta), 2, 2},
		{"count differs", awsevents.KafkaSchemaEvent("", "", []string{"{}", "{}"}, meta), 3, -1},
		{"not JSON", []byte(`{"records":{"a-0":[{"valueSchemaMetadata":`), 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := KafkaSchemaMetadata(tc.payload, tc.n)
			if tc.want < 0 {
				if got != nil {
					t.Fatalf("got %+v, want nil", got)
				}
				return
			}
			n := 0
			for _, m := range got {
				if m.Value != nil && m.Value.SchemaID == "7" {
					n++
				}
			}
			if len(got) != tc.n || n != tc.want {
				t.Fatalf("got %+v", got)
			}
		})
	}
	// Metadata lines up with records across partitions, in key order.
	p := []byte(`{"records":{"t-1":[{"valueSchemaMetadata":{"schemaId":"b"}}],"t-0":[{"offset":1},{"valueSchemaMetadata":{"schemaId":"a"}}]}}`)
	got := KafkaSchemaMetadata(p, 3)
	if len(got) != 3 || got[0].Value != nil || got[1].Value.SchemaID != "a" || got[2].Value.SchemaID != "b" {
		b, _ := json.Marshal(got)
		t.Fatalf("order: %s", b)
	}
}

func TestKafkaAsJSON(t *testing.T) {
	avro := &sevents.KafkaSchemaMetadata{DataFormat: "AVRO", SchemaID: "7"}
	jsonSchema := &sevents.KafkaSchemaMetadata{DataFormat: "JSON", SchemaID: "8"}
	for _, tc := range []struct {
		name   string
		s      *sevents.KafkaSchemaMetadata
		format string
		data   string
		want   bool
	}{
		{"not validated", nil, "JSON", `{"a":1}`, false},
		{"JSON Schema in SOURCE format", jsonSchema, "SOURCE", "\x00", true},
		{"JSON format", avro, "JSON", "\x00", true},
		{"SOURCE format", avro, "SOURCE", `{"a":1}`, false},
		{"unknown format, a JSON object", avro, "", `{"a":1}`, true},
		{"unknown format, not JSON", avro, "", `{"a":`, false},
		{"unknown format, a JSON array", avro, "", `[1]`, false},
	} {
		if got := KafkaAsJSON(tc.s, tc.format, []byte(tc.data)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
