package eventscan

import (
	"encoding/json"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
	"github.com/sluicehq/sluice/internal/testsupport/awsevents"
)

// The schema metadata is read with the records, in the same pass.
func TestKafkaSchemaMetadata(t *testing.T) {
	meta := `{"dataFormat":"AVRO","schemaId":"7"}`
	for _, tc := range []struct {
		name    string
		payload []byte
		want    int // records with value metadata
	}{
		{"no metadata", awsevents.KafkaSchemaEvent("", "", []string{"{}", "{}"}, ""), 0},
		{"every record", awsevents.KafkaSchemaEvent("", "", []string{"{}", "{}"}, meta), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := DecodeKafka(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range ev.Entries {
				if m := e.Meta.Value; m != nil && m.SchemaID == "7" && m.DataFormat == "AVRO" {
					n++
				}
			}
			if len(ev.Entries) != 2 || n != tc.want {
				t.Fatalf("got %+v", ev.Entries)
			}
		})
	}
	// Metadata lines up with records across partitions, in key order.
	p := []byte(`{"records":{"t-1":[{"valueSchemaMetadata":{"schemaId":"b"}}],"t-0":[{"offset":1},{"valueSchemaMetadata":{"schemaId":"a"}}]}}`)
	ev, err := DecodeKafka(p)
	if err != nil {
		t.Fatal(err)
	}
	got := ev.Entries
	if len(got) != 3 || got[0].Meta.Value != nil || got[1].Meta.Value.SchemaID != "a" || got[2].Meta.Value.SchemaID != "b" {
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
