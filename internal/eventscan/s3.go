package eventscan

import (
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluicehq/sluice/internal/jsonplan"
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

var s3Plan = sync.OnceValue(jsonplan.New[S3])

// DecodeS3 decodes a notification message by the plan decoder (then
// encoding/json, whose error it returns; the records' objects decode
// through aws-lambda-go's own UnmarshalJSON). Strings may share data's
// memory. An S3 notification has no plain path to be measured against,
// and its records are aws-lambda-go's types: it has no reader of its own.
func DecodeS3(data []byte) (S3, error) {
	var n S3
	err := s3Plan().Unmarshal(data, &n, true)
	return n, err
}
