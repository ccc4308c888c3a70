package localtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/sluicehq/sluice/events"
	"strings"
	"unicode/utf8"
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
	e = &Event{Source: events.SourceFirehose, Payload: bytes.TrimSpace(data)}
	for i, r := range recs {
		if r.RecordID == nil || *r.RecordID == "" {
			return nil, true, fmt.Errorf("a Firehose transformation event: records[%d] has no recordId", i)
		}
		b, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			return nil, true, fmt.Errorf("a Firehose transformation event: record %s: data is not base64: %w", *r.RecordID, err)
		}
		rec := InputRecord{}
		if json.Valid(b) {
			rec.Data = json.RawMessage(b)
		} else if utf8.Valid(b) {
			rec.Data, _ = json.Marshal(string(b))
		}
		e.Records = append(e.Records, rec)
		e.ids = append(e.ids, *r.RecordID)
	}
	return e, true, nil
}

// readFirehoseResponse reads a transformation's answer as Firehose does
// (https://docs.aws.amazon.com/firehose/latest/dev/data-transformation-status-model.html):
// every record must come back once with its recordId, a result of Ok,
// Dropped or ProcessingFailed, and base64 data, or the batch fails as a
// whole (Firehose retries the invocation); ProcessingFailed records are
// reported, as the records Firehose writes to the stream's error output.
func readFirehoseResponse(payload []byte, ids []string) Verdict {
	var resp struct {
		Records []struct {
			RecordID *string `json:"recordId"`
			Result   string  `json:"result"`
			Data     *string `json:"data"`
		} `json:"records"`
	}
	whole := func(why string) Verdict { return Verdict{Outcome: OutcomeBatchFailure, Reason: why} }
	if err := json.Unmarshal(payload, &resp); err != nil {
		return whole(fmt.Sprintf("the response is not a Firehose transformation response: %v", err))
	}
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	failed := make([]bool, len(ids))
	seen := make([]bool, len(ids))
	for _, r := range resp.Records {
		if r.RecordID == nil {
			return whole("a response record has no recordId")
		}
		i, ok := index[*r.RecordID]
		switch {
		case !ok:
			return whole(fmt.Sprintf("the response names record %q, which is not in the event", *r.RecordID))
		case seen[i]:
			return whole(fmt.Sprintf("the response answers record %q twice", *r.RecordID))
		case r.Data == nil:
			return whole(fmt.Sprintf("the response for record %q has no data", *r.RecordID))
		}
		if _, err := base64.StdEncoding.DecodeString(*r.Data); err != nil {
			return whole(fmt.Sprintf("the response for record %q: data is not base64: %v", *r.RecordID, err))
		}
		seen[i] = true
		switch r.Result {
		case "Ok", "Dropped":
		case "ProcessingFailed":
			failed[i] = true
		default:
			return whole(fmt.Sprintf("the response for record %q has result %q: want Ok, Dropped or ProcessingFailed", *r.RecordID, r.Result))
		}
	}
	var missing []string
	for i, s := range seen {
		if !s {
			missing = append(missing, ids[i])
		}
	}
	if len(missing) > 0 {
		return whole(fmt.Sprintf("the response does not answer %d records: %s", len(missing), strings.Join(missing, ", ")))
	}
	var v Verdict
	for i, f := range failed {
		if f {
			v.Reported = append(v.Reported, ids[i])
		}
	}
	if v.Reported != nil {
		v.Outcome = OutcomePartial
	} else {
		v.Outcome = OutcomeSuccess
	}
	return v
}
