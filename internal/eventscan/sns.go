package eventscan

import (
	"sync"

	"github.com/sluicehq/sluice/internal/jsonread"
)

// SNS is an Amazon SNS notification as SNS writes it into an SQS body (or
// a Kinesis record, a Kafka value) with raw message delivery off: each
// field as a string; MessageAttributes is the attributes' JSON (nil when
// absent or null).
type SNS struct {
	Type              string
	MessageID         string
	TopicArn          string
	Subject           string
	Message           string
	Timestamp         string
	SignatureVersion  string
	Signature         string
	SigningCertURL    string // SigningCertUrl when SNS invokes Lambda: matched case-insensitively
	UnsubscribeURL    string
	MessageAttributes SharedJSON
}

// The notification, spelled once.
var (
	snsTable *jsonread.Table[SNS]
	snsOnce  sync.Once
)

// snsTables builds the tables on first use: a function links the
// tables of the sources it reads, no others.
func snsTables() {
	snsOnce.Do(func() {
		snsTable = jsonread.NewTable("an SNS notification",
			jsonread.Str("Type", func(n *SNS) *string { return &n.Type }),
			jsonread.Str("MessageId", func(n *SNS) *string { return &n.MessageID }),
			jsonread.Str("TopicArn", func(n *SNS) *string { return &n.TopicArn }),
			jsonread.Str("Subject", func(n *SNS) *string { return &n.Subject }),
			jsonread.Str("Message", func(n *SNS) *string { return &n.Message }),
			jsonread.Str("Timestamp", func(n *SNS) *string { return &n.Timestamp }),
			jsonread.Str("SignatureVersion", func(n *SNS) *string { return &n.SignatureVersion }),
			jsonread.Str("Signature", func(n *SNS) *string { return &n.Signature }),
			jsonread.Str("SigningCertURL", func(n *SNS) *string { return &n.SigningCertURL }),
			jsonread.Str("UnsubscribeURL", func(n *SNS) *string { return &n.UnsubscribeURL }),
			rawField("MessageAttributes", func(n *SNS) *SharedJSON { return &n.MessageAttributes }),
		)
	})
}

// DecodeSNS decodes a notification. Its strings share one copy of data;
// MessageAttributes shares data itself.
func DecodeSNS(data []byte) (SNS, error) {
	snsTables()
	var n SNS
	if err := envelope(snsTable, data, &n); err != nil {
		return SNS{}, err
	}
	return n, nil
}
