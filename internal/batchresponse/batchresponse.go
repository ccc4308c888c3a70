// Package batchresponse reads a function's answer to a batch as an event
// source mapping reads it (docs/semantics.md): success, a partial batch
// response naming some records by their index in the batch, or a failure
// of the whole batch with the reason. The local runner (localtest) applies
// the reading to its lanes; package invocation turns it into the public
// Verdict on an event. It is internal: the indexes are the runner's.
package batchresponse

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Kinds of Reading: how Lambda reads a function's answer.
const (
	Success = "success"
	Partial = "partial"
	Whole   = "whole"
)

// Reading is Lambda's reading of one response body.
type Reading struct {
	Kind     string
	Reported []int  // Partial: indexes into the batch, ascending, unique
	Reason   string // Whole: what is wrong with the response
}

// Strings reads a Kinesis, DynamoDB Streams or SQS partial batch
// response against the batch's item identifiers (docs/semantics.md):
// an empty, null or {} body, or a null or empty list, is success; invalid
// JSON, a body that is not an object, a failure without itemIdentifier (a
// wrong key name), an empty or null identifier, or one not in the batch fail
// the whole batch. (The last is documented for SQS and inferred for
// streams; a body that is valid JSON but not an object is not documented
// either way and is read as a failure, the reading that hides nothing.)
func Strings(body []byte, ids []string) Reading {
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

// Stream reads a Kinesis or DynamoDB Streams partial batch
// response: as Strings, except that a top-level empty JSON array
// `[]` is a success, as recorded against AWS for both streams. (SQS keeps
// the documented list, where `[]` is not an object and fails the batch.)
func Stream(body []byte, ids []string) Reading {
	var list []json.RawMessage
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' && json.Unmarshal(b, &list) == nil && len(list) == 0 {
		return Reading{Kind: Success}
	}
	return Strings(body, ids)
}

// KafkaRef identifies one record of a Kafka batch.
type KafkaRef struct {
	Partition string // "<topic>-<n>"
	Offset    int64
}

// Kafka reads a Kafka partial batch response (docs/semantics.md):
// identifiers are {"partition":"<topic>-<n>","offset":N}; one that names no
// record of the batch fails the whole batch.
func Kafka(body []byte, refs []KafkaRef) Reading {
	index := make(map[KafkaRef]int, len(refs))
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
		i, ok := index[KafkaRef{*id.Partition, off}]
		if !ok {
			return -1, fmt.Sprintf("%s@%d is not in the batch", *id.Partition, off)
		}
		return i, ""
	})
}

// readFailures reads the batchItemFailures of a response; match resolves one
// itemIdentifier to its index in the batch, or says why it cannot.
func readFailures(body []byte, match func(id json.RawMessage) (int, string)) Reading {
	items, v, ok := failureItems(body)
	if !ok {
		return v
	}
	seen := map[int]bool{}
	var reported []int
	for n, raw := range items {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return Reading{Kind: Whole, Reason: fmt.Sprintf("batchItemFailures[%d] is not an object", n)}
		}
		rawID, ok := obj["itemIdentifier"]
		if !ok {
			return Reading{Kind: Whole, Reason: fmt.Sprintf("batchItemFailures[%d] has no itemIdentifier", n)}
		}
		i, why := match(rawID)
		if why != "" {
			return Reading{Kind: Whole, Reason: fmt.Sprintf("batchItemFailures[%d].itemIdentifier %s", n, why)}
		}
		if !seen[i] {
			seen[i] = true
			reported = append(reported, i)
		}
	}
	return PartialOrSuccess(reported)
}

// failureItems returns the batchItemFailures elements, or the Reading when
// the body settles it (success or whole failure) by itself.
func failureItems(body []byte) ([]json.RawMessage, Reading, bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return nil, Reading{Kind: Success}, false
	}
	if !json.Valid(body) {
		return nil, Reading{Kind: Whole, Reason: "the response is not valid JSON"}, false
	}
	if body[0] != '{' {
		return nil, Reading{Kind: Whole, Reason: "the response is not a JSON object"}, false
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, Reading{Kind: Whole, Reason: "the response is not a JSON object"}, false
	}
	raw, ok := resp["batchItemFailures"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, Reading{Kind: Success}, false
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, Reading{Kind: Whole, Reason: "batchItemFailures is not a list"}, false
	}
	return items, Reading{}, true
}

// PartialOrSuccess is Partial with the reported indexes sorted, or
// Success for none.
func PartialOrSuccess(reported []int) Reading {
	if len(reported) == 0 {
		return Reading{Kind: Success}
	}
	for i := 1; i < len(reported); i++ { // insertion sort: lists are short
		for j := i; j > 0 && reported[j] < reported[j-1]; j-- {
			reported[j], reported[j-1] = reported[j-1], reported[j]
		}
	}
	return Reading{Kind: Partial, Reported: reported}
}
