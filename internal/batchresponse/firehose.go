package batchresponse

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Firehose reads a transformation's answer as Firehose does
// (https://docs.aws.amazon.com/firehose/latest/dev/data-transformation-status-model.html):
// every record must come back once with its recordId, a result of Ok,
// Dropped or ProcessingFailed, and base64 data (kafkaRecordValue for a
// stream whose source is Amazon MSK), or the batch fails as a whole
// (Firehose retries the invocation); ProcessingFailed records are
// reported, as the records Firehose writes to the stream's error output.
func Firehose(payload []byte, ids []string) Reading {
	var resp struct {
		Records []struct {
			RecordID   *string `json:"recordId"`
			Result     string  `json:"result"`
			Data       *string `json:"data"`
			KafkaValue *string `json:"kafkaRecordValue"`
		} `json:"records"`
	}
	whole := func(why string) Reading { return Reading{Kind: Whole, Reason: why} }
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
		if r.Data == nil {
			r.Data = r.KafkaValue
		}
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
	var reported []int
	for i, f := range failed {
		if f {
			reported = append(reported, i)
		}
	}
	return PartialOrSuccess(reported)
}
