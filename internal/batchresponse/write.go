package batchresponse

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/internal/jsonwrite"
)

// The writing half: the responses the handlers answer with, built by hand
// (one allocation, the caller's buffer) and kept equal to encoding/json by
// fuzz targets.

// AppendStringFailures writes {"batchItemFailures":[{"itemIdentifier":"id"},...]}
// for the ids at the given indexes: the response shape shared by Kinesis,
// DynamoDB Streams and SQS.
func AppendStringFailures(dst []byte, report []int, id func(i int) string) []byte {
	dst = append(dst, `{"batchItemFailures":[`...)
	for n, i := range report {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"itemIdentifier":`...)
		dst = jsonwrite.AppendString(dst, id(i))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// FirehoseResults are what a Firehose transformation answers, record by
// record: rec returns record i's id, its result ("Ok", "Dropped" or
// "ProcessingFailed"), the data to answer it with and its partition keys.
type FirehoseResults struct {
	N   int
	Rec func(i int) (id, result string, data []byte, keys map[string]string)
	// KafkaValue reports whether record i is answered with
	// kafkaRecordValue instead of data, as a record of a Firehose stream
	// whose source is Amazon MSK is; nil for none.
	KafkaValue func(i int) bool
}

// AppendFirehose writes the response Firehose reads
// ({"records":[{"recordId","result","data","metadata":{"partitionKeys"}}]},
// kafkaRecordValue instead of data for an MSK source's record).
// Every record carries data, as Firehose requires; partition keys go with
// an Ok result only, sorted by name. When the response passes limit bytes
// it stops: at is the index of the record whose result passed it, and the
// size so far is len(out); at is -1 for a response that fits.
func AppendFirehose(dst []byte, r FirehoseResults, limit int) (out []byte, at int) {
	dst = append(dst, `{"records":[`...)
	for i := 0; i < r.N; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		id, result, data, keys := r.Rec(i)
		dst = append(dst, `{"recordId":`...)
		dst = jsonwrite.AppendString(dst, id)
		dst = append(dst, `,"result":`...)
		dst = jsonwrite.AppendString(dst, result)
		if r.KafkaValue != nil && r.KafkaValue(i) {
			dst = append(dst, `,"kafkaRecordValue":"`...)
		} else {
			dst = append(dst, `,"data":"`...)
		}
		dst = base64.StdEncoding.AppendEncode(dst, data)
		dst = append(dst, '"')
		if len(keys) > 0 && result == "Ok" {
			dst = append(dst, `,"metadata":{"partitionKeys":{`...)
			n := 0
			for _, k := range sortedKeys(keys) {
				if n > 0 {
					dst = append(dst, ',')
				}
				n++
				dst = jsonwrite.AppendString(dst, k)
				dst = append(dst, ':')
				dst = jsonwrite.AppendString(dst, keys[k])
			}
			dst = append(dst, "}}"...)
		}
		dst = append(dst, '}')
		if len(dst) > limit {
			return dst, i
		}
	}
	return append(dst, "]}"...), -1
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FirstReported returns the item identifier a stream partial batch response
// reports first, or "".
func FirstReported(body []byte) (string, error) {
	var resp struct {
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", fmt.Errorf("reading the batch response: %w", err)
	}
	if len(resp.BatchItemFailures) == 0 {
		return "", nil
	}
	return resp.BatchItemFailures[0].ItemIdentifier, nil
}

// WithState adds "state" (a JSON object) to a partial batch response
// object, as a tumbling window handler answers.
func WithState(body, state []byte) []byte {
	out := make([]byte, 0, len(body)+len(state)+10)
	out = append(out, `{"state":`...)
	out = append(out, state...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...)
}
