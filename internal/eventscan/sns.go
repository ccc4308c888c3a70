package eventscan

import (
	"sync"

	"github.com/sluicehq/sluice/internal/jsonplan"
)

// SNS is an Amazon SNS notification as SNS writes it into an SQS body (or
// a Kinesis record, a Kafka value) with raw message delivery off: each
// field as a string, as it lies in the notification; MessageAttributes is
// the attributes' JSON (nil when absent or null).
type SNS struct {
	Type              string     `json:"Type"`
	MessageID         string     `json:"MessageId"`
	TopicArn          string     `json:"TopicArn"`
	Subject           string     `json:"Subject"`
	Message           string     `json:"Message"`
	Timestamp         string     `json:"Timestamp"`
	SignatureVersion  string     `json:"SignatureVersion"`
	Signature         string     `json:"Signature"`
	SigningCertURL    string     `json:"SigningCertURL"` // SigningCertUrl when SNS invokes Lambda: matched case-insensitively
	UnsubscribeURL    string     `json:"UnsubscribeURL"`
	MessageAttributes SharedJSON `json:"MessageAttributes"`
}

// DecodeSNS decodes a notification: ReadSNS for the shape SNS writes, the
// plan decoder (then encoding/json, whose error it returns) for anything
// else. Strings may share data's memory.
func DecodeSNS(data []byte) (SNS, error) {
	if n, ok := ReadSNS(data); ok {
		return n, nil
	}
	return decodeSNSGeneral(data)
}

var snsPlan = sync.OnceValue(jsonplan.New[snsWire])

// snsWire is SNS for the general decoder: MessageAttributes a pointer, so
// that null leaves it nil.
type snsWire struct {
	Type              string      `json:"Type"`
	MessageID         string      `json:"MessageId"`
	TopicArn          string      `json:"TopicArn"`
	Subject           string      `json:"Subject"`
	Message           string      `json:"Message"`
	Timestamp         string      `json:"Timestamp"`
	SignatureVersion  string      `json:"SignatureVersion"`
	Signature         string      `json:"Signature"`
	SigningCertURL    string      `json:"SigningCertURL"`
	UnsubscribeURL    string      `json:"UnsubscribeURL"`
	MessageAttributes *SharedJSON `json:"MessageAttributes"`
}

func decodeSNSGeneral(data []byte) (SNS, error) {
	var w snsWire
	if err := snsPlan().Unmarshal(data, &w, true); err != nil {
		return SNS{}, err
	}
	n := SNS{Type: w.Type, MessageID: w.MessageID, TopicArn: w.TopicArn, Subject: w.Subject, Message: w.Message, Timestamp: w.Timestamp,
		SignatureVersion: w.SignatureVersion, Signature: w.Signature, SigningCertURL: w.SigningCertURL, UnsubscribeURL: w.UnsubscribeURL}
	if a := w.MessageAttributes; a != nil && string(*a) != "null" {
		n.MessageAttributes = *a
	}
	return n, nil
}

// snsKeys are the notification's keys in quotes, in the order SNS writes
// them (a key's index is its id).
var snsKeys = func() (l [11]jsonplan.Lit) {
	for i, k := range snsKeyNames {
		l[i] = jsonplan.NewLit(`"` + k + `"`)
	}
	return l
}()

var snsKeyNames = [...]string{"Type", "MessageId", "TopicArn", "Subject", "Message", "Timestamp",
	"SignatureVersion", "Signature", "SigningCertURL", "UnsubscribeURL", "MessageAttributes"}

func snsKeyID(key []byte) int {
	for i, k := range snsKeyNames {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// ReadSNS reads a notification in one pass: the keys SNS writes, spelled
// as it spells them, each once, string values (or null), MessageAttributes
// an object (or null). Strings without escapes share data; Message, which
// has them when it is JSON, is unescaped once into memory of its own. ok
// is false for anything else (an unknown key, a key in another case,
// invalid JSON), which DecodeSNS leaves to the general decoder.
func ReadSNS(data []byte) (n SNS, ok bool) {
	s := &scanner{b: data, own: true}
	if !s.tok('{') {
		return SNS{}, false
	}
	if !s.tok('}') {
		var seen uint16
		for pos := 0; ; pos++ {
			s.ws()
			id := -1
			if pos < len(snsKeys) && snsKeys[pos].At(s.b, s.i) {
				id = pos
				s.i += snsKeys[pos].Len()
			} else {
				key, ok := s.plainString()
				if !ok {
					return SNS{}, false
				}
				if id = snsKeyID(key); id < 0 {
					return SNS{}, false
				}
			}
			if seen&(1<<id) != 0 || !s.tok(':') {
				return SNS{}, false
			}
			seen |= 1 << id
			if id == 10 {
				if !s.null() {
					start := s.i
					if s.i >= len(s.b) || s.b[s.i] != '{' || !s.skipJSON(0) {
						return SNS{}, false
					}
					n.MessageAttributes = SharedJSON(s.b[start:s.i:s.i])
				}
			} else {
				v, _, ok := s.sharedText()
				if !ok {
					return SNS{}, false
				}
				*n.field(id) = v
			}
			if s.tok('}') {
				break
			}
			if !s.tok(',') {
				return SNS{}, false
			}
		}
	}
	s.ws()
	return n, s.i == len(s.b)
}

func (n *SNS) field(id int) *string {
	switch id {
	case 0:
		return &n.Type
	case 1:
		return &n.MessageID
	case 2:
		return &n.TopicArn
	case 3:
		return &n.Subject
	case 4:
		return &n.Message
	case 5:
		return &n.Timestamp
	case 6:
		return &n.SignatureVersion
	case 7:
		return &n.Signature
	case 8:
		return &n.SigningCertURL
	}
	return &n.UnsubscribeURL
}
