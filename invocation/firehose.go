package invocation

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/events"
)

// parseFirehoseEvent reads a Firehose transformation event:
// {"invocationId", "deliveryStreamArn", "records":[{"recordId", "data"}]}.
// ok is false when data is not one (err then nil).
func parseFirehoseEvent(data []byte) (e *Event, ok bool, err error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil, false, nil
	}
	list, has := top["records"]
	if !has || firstByte(list) != '[' {
		return nil, false, nil
	}
	var recs []struct {
		RecordID *string `json:"recordId"`
		Data     string  `json:"data"`
	}
	if err := json.Unmarshal(list, &recs); err != nil {
		return nil, true, fmt.Errorf("a Firehose transformation event's records: %w", err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(list, &raws); err != nil {
		return nil, true, fmt.Errorf("a Firehose transformation event's records: %w", err)
	}
	e = &Event{Source: events.SourceFirehose, Payload: bytes.TrimSpace(data)}
	for i, r := range recs {
		if r.RecordID == nil || *r.RecordID == "" {
			return nil, true, fmt.Errorf("a Firehose transformation event: records[%d] has no recordId", i)
		}
		if _, err := base64.StdEncoding.DecodeString(r.Data); err != nil {
			return nil, true, fmt.Errorf("a Firehose transformation event: record %s: data is not base64: %w", *r.RecordID, err)
		}
		e.Records = append(e.Records, Record{ID: *r.RecordID, JSON: raws[i]})
	}
	return e, true, nil
}
