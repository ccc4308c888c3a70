package eventscan

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// S3 is an Amazon S3 event notification message as S3 sends it to an SQS
// queue or an SNS topic: its records, or the fields of the s3:TestEvent
// message (Event "s3:TestEvent"). The records are aws-lambda-go's, whose
// S3.Object.URLDecodedKey is the key URL-decoded (+ as a space).
type S3 struct {
	Records   []events.S3EventRecord `json:"Records"`
	Service   string                 `json:"Service"`
	Event     string                 `json:"Event"`
	Time      time.Time              `json:"Time"`
	Bucket    string                 `json:"Bucket"`
	RequestID string                 `json:"RequestId"`
	HostID    string                 `json:"HostId"`
}

// DecodeS3 decodes a notification message with encoding/json (the
// records' objects through aws-lambda-go's own UnmarshalJSON): its records
// are aws-lambda-go's types, and a notification is one message, not a
// batch of them, so it has no reader of its own.
func DecodeS3(data []byte) (S3, error) {
	var n S3
	err := json.Unmarshal(data, &n)
	return n, err
}
