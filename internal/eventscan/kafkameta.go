package eventscan

import (
	"bytes"
	"encoding/json"

	sevents "github.com/sluicehq/sluice/events"
)

// KafkaMeta is the schema metadata of one record.
type KafkaMeta struct {
	Key   *sevents.KafkaSchemaMetadata `json:"keySchemaMetadata"`
	Value *sevents.KafkaSchemaMetadata `json:"valueSchemaMetadata"`
}

// KafkaSchemaMetadata reads the schema metadata of an event's records, in
// the order DecodeKafka returns them, or nil when no record has any (the
// event carries none unless the mapping has a schema registry, and then this
// second, narrow pass is all it costs).
func KafkaSchemaMetadata(payload []byte, n int) []KafkaMeta {
	if !bytes.Contains(payload, []byte(`SchemaMetadata"`)) {
		return nil
	}
	var ev struct {
		Records map[string][]KafkaMeta `json:"records"`
	}
	if json.Unmarshal(payload, &ev) != nil {
		return nil
	}
	keys, total := Partitions(ev.Records)
	if total != n {
		return nil
	}
	out := make([]KafkaMeta, 0, n)
	for _, k := range keys {
		out = append(out, ev.Records[k]...)
	}
	return out
}

// KafkaAsJSON tells whether a key or value Lambda validated against a
// schema (s, nil when it did not) arrived as JSON: always for a JSON
// Schema; otherwise as the mapping's EventRecordFormat says ("JSON" or
// "SOURCE"), and when it is not known, when data is a JSON object.
func KafkaAsJSON(s *sevents.KafkaSchemaMetadata, format string, data []byte) bool {
	if s == nil {
		return false
	}
	if s.DataFormat == "JSON" {
		return true // JSON Schema: JSON in either format
	}
	switch format {
	case "JSON":
		return true
	case "SOURCE":
		return false
	}
	return len(data) > 1 && data[0] == '{' && json.Valid(data)
}
