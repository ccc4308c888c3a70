package localtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// InputRecord is one line of records.jsonl. Which fields count depends on the
// source:
//
//	kinesis   {"partitionKey", "data"}
//	dynamodb  {"keys", "newImage", "oldImage", "eventName"}  (plain JSON objects; eventName defaults from the images)
//	sqs       {"body", "messageGroupId"?, "messageDeduplicationId"?, "attributes"?}
//	kafka     {"partition", "key", "value", "headers"?}
//
// data, body, key and value may be any JSON value, sent as its JSON text, or
// a JSON string, sent as the string. The runner assigns ids, sequence
// numbers, offsets and arrival times.
type InputRecord struct {
	PartitionKey string          `json:"partitionKey,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`

	Keys      json.RawMessage `json:"keys,omitempty"`
	NewImage  json.RawMessage `json:"newImage,omitempty"`
	OldImage  json.RawMessage `json:"oldImage,omitempty"`
	EventName string          `json:"eventName,omitempty"`

	Body                   json.RawMessage   `json:"body,omitempty"`
	MessageGroupID         string            `json:"messageGroupId,omitempty"`
	MessageDeduplicationID string            `json:"messageDeduplicationId,omitempty"`
	Attributes             map[string]string `json:"attributes,omitempty"`

	Partition *int              `json:"partition,omitempty"`
	Key       json.RawMessage   `json:"key,omitempty"`
	Value     json.RawMessage   `json:"value,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

// ReadRecords reads records.jsonl: one JSON object per line; blank lines
// are skipped. An error names the line.
func ReadRecords(r io.Reader) ([]InputRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []InputRecord
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var rec InputRecord
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("records line %d: %w", n, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	return out, nil
}

// payloadText is the bytes a data/body/value field stands for: a JSON
// string's contents, or any other JSON value's text.
func payloadText(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	return []byte(raw)
}

// payloadID is the "id" of a JSON object payload, or "": the conformance
// handler's records carry one, and effects name records by it.
func payloadID(payload []byte) string {
	if !bytes.HasPrefix(bytes.TrimSpace(payload), []byte("{")) {
		return ""
	}
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(payload, &v) != nil || len(v.ID) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.ID, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(v.ID))
}
