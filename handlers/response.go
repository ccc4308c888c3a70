package handlers

import (
	"encoding/json"
	"unicode/utf8"
)

// appendStringFailures writes {"batchItemFailures":[{"itemIdentifier":"id"},...]}
// for the ids at the given indexes: the response shape shared by Kinesis,
// DynamoDB Streams and SQS.
func appendStringFailures(dst []byte, report []int, id func(i int) string) []byte {
	dst = append(dst, `{"batchItemFailures":[`...)
	for n, i := range report {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"itemIdentifier":`...)
		dst = appendJSONString(dst, id(i))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendJSONString appends s as a JSON string, as encoding/json would
// (without HTML escaping).
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // rare: escapes or non-ASCII
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
