package eventscan

import (
	"encoding/json"

	sevents "github.com/sluicehq/sluice/events"
)

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
