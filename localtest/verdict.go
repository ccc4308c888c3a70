package localtest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Verdict kinds: how Lambda reads a function's answer.
const (
	verdictSuccess = "success"
	verdictPartial = "partial"
	verdictWhole   = "whole"
)

// verdict is Lambda's reading of one response body.
type verdict struct {
	kind     string
	reported []int // partial: indexes into the batch, ascending, unique
	reason   string
}

// readStringResponse reads a Kinesis, DynamoDB Streams or SQS partial batch
// response against the batch's item identifiers (docs/semantics.md):
// an empty, null or {} body, or a null or empty list, is success; invalid
// JSON, a body that is not an object, a failure without itemIdentifier (a
// wrong key name), an empty or null identifier, or one not in the batch fail
// the whole batch. (The last is documented for SQS and inferred for
// streams; a body that is valid JSON but not an object is not documented
// either way and is read as a failure, the reading that hides nothing.)
func readStringResponse(body []byte, ids []string) verdict {
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	return readFailures(body, func(raw json.RawMessage) (int, string) {
		var id *string
		if err := json.Unmarshal(raw, &id); err != nil {
			return -1, "is not a string"
		}
		if id == nil || *id == "" {
			return -1, "is empty or null"
		}
		i, ok := index[*id]
		if !ok {
			return -1, fmt.Sprintf("%q is not in the batch", *id)
		}
		return i, ""
	})
}

// readStreamResponse reads a Kinesis or DynamoDB Streams partial batch
// response: as readStringResponse, except that a top-level empty JSON array
// `[]` is a success, as recorded against AWS for both streams. (SQS keeps
// the documented list, where `[]` is not an object and fails the batch.)
func readStreamResponse(body []byte, ids []string) verdict {
	var list []json.RawMessage
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' && json.Unmarshal(b, &list) == nil && len(list) == 0 {
		return verdict{kind: verdictSuccess}
	}
	return readStringResponse(body, ids)
}

// kafkaRef identifies one record of a Kafka batch.
type kafkaRef struct {
	partition string
	offset    int64
}

// readKafkaResponse reads a Kafka partial batch response (docs/semantics.md):
// identifiers are {"partition":"<topic>-<n>","offset":N}; one that names no
// record of the batch fails the whole batch.
func readKafkaResponse(body []byte, refs []kafkaRef) verdict {
	index := make(map[kafkaRef]int, len(refs))
	for i, r := range refs {
		index[r] = i
	}
	return readFailures(body, func(raw json.RawMessage) (int, string) {
		var id struct {
			Partition *string      `json:"partition"`
			Offset    *json.Number `json:"offset"`
		}
		if err := json.Unmarshal(raw, &id); err != nil || id.Partition == nil || id.Offset == nil {
			return -1, "is not {partition, offset}"
		}
		off, err := id.Offset.Int64()
		if err != nil {
			return -1, fmt.Sprintf("offset %s is not an integer", *id.Offset)
		}
		i, ok := index[kafkaRef{*id.Partition, off}]
		if !ok {
			return -1, fmt.Sprintf("%s@%d is not in the batch", *id.Partition, off)
		}
		return i, ""
	})
}

// readFailures reads the batchItemFailures of a response; match resolves one
// itemIdentifier to its index in the batch, or says why it cannot.
func readFailures(body []byte, match func(id json.RawMessage) (int, string)) verdict {
	items, v, ok := failureItems(body)
	if !ok {
		return v
	}
	seen := map[int]bool{}
	var reported []int
	for n, raw := range items {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return verdict{kind: verdictWhole, reason: fmt.Sprintf("batchItemFailures[%d] is not an object", n)}
		}
		rawID, ok := obj["itemIdentifier"]
		if !ok {
			return verdict{kind: verdictWhole, reason: fmt.Sprintf("batchItemFailures[%d] has no itemIdentifier", n)}
		}
		i, why := match(rawID)
		if why != "" {
			return verdict{kind: verdictWhole, reason: fmt.Sprintf("batchItemFailures[%d].itemIdentifier %s", n, why)}
		}
		if !seen[i] {
			seen[i] = true
			reported = append(reported, i)
		}
	}
	return partialOrSuccess(reported)
}

// failureItems returns the batchItemFailures elements, or the verdict when
// the body settles it (success or whole failure) by itself.
func failureItems(body []byte) ([]json.RawMessage, verdict, bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return nil, verdict{kind: verdictSuccess}, false
	}
	if !json.Valid(body) {
		return nil, verdict{kind: verdictWhole, reason: "the response is not valid JSON"}, false
	}
	if body[0] != '{' {
		return nil, verdict{kind: verdictWhole, reason: "the response is not a JSON object"}, false
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, verdict{kind: verdictWhole, reason: "the response is not a JSON object"}, false
	}
	raw, ok := resp["batchItemFailures"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, verdict{kind: verdictSuccess}, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, verdict{kind: verdictWhole, reason: "batchItemFailures is not a list"}, false
	}
	return items, verdict{}, true
}

func partialOrSuccess(reported []int) verdict {
	if len(reported) == 0 {
		return verdict{kind: verdictSuccess}
	}
	for i := 1; i < len(reported); i++ { // insertion sort: lists are short
		for j := i; j > 0 && reported[j] < reported[j-1]; j-- {
			reported[j], reported[j-1] = reported[j-1], reported[j]
		}
	}
	return verdict{kind: verdictPartial, reported: reported}
}
