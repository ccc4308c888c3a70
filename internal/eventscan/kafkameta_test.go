package eventscan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sevents "github.com/sluicehq/sluice/events"
)

// schemaEvent is a Kafka event with one record per value, each with the
// schema metadata an event source mapping with a schema registry adds.
func schemaEvent(key string, keyMeta string, values []string, valueMeta string) []byte {
	var recs []string
	for i, v := range values {
		r := fmt.Sprintf(`{"topic":"orders","partition":0,"offset":%d,"timestamp":1545084650987,"timestampType":"CREATE_TIME","headers":[]`, i)
		if key != "" {
			r += `,"key":"` + base64.StdEncoding.EncodeToString([]byte(key)) + `"`
		}
		r += `,"value":"` + base64.StdEncoding.EncodeToString([]byte(v)) + `"`
		if keyMeta != "" {
			r += `,"keySchemaMetadata":` + keyMeta
		}
		if valueMeta != "" {
			r += `,"valueSchemaMetadata":` + valueMeta
		}
		recs = append(recs, r+"}")
	}
	return []byte(`{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:us-east-1:123456789012:cluster/c/abc","bootstrapServers":"b-1:9092","records":{"orders-0":[` + strings.Join(recs, ",") + `]}}`)
}

func TestKafkaSchemaMetadataPass(t *testing.T) {
	meta := `{"dataFormat":"AVRO","schemaId":"7"}`
	for _, tc := range []struct {
		name    string
		payload []byte
		n       int
		want    int // records with value metadata, -1 for nil
	}{
		{"no metadata", schemaEvent("", "", []string{"{}", "{}"}, ""), 2, -1},
		{"every record", schemaEvent("", "", []string{"{}", "{}"}, meta), 2, 2},
		{"count differs", schemaEvent("", "", []string{"{}", "{}"}, meta), 3, -1},
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
